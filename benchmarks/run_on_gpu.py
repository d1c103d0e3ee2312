"""Runs on the GPU machine: times every .vmfb of a manifest with
iree-benchmark-module (CUDA) and torch eager with CUDA events. Needs only
python3 with torch and iree-base-runtime (no project code, no compiler).

    python3 benchmarks/run_on_gpu.py FOLDER RESULTS.json
"""

import json
import statistics
import subprocess
import sys
from pathlib import Path

REPETITIONS = 5


def iree_median_ms(folder: Path, entry: dict) -> float:
    command = [sys.executable, "-m", "iree._runtime.scripts.iree_benchmark_module", "--device=cuda",
               f"--module={folder / entry['vmfb']}", "--function=main",
               *(f"--input={i}" for i in entry["inputs"]),
               f"--benchmark_repetitions={REPETITIONS}", "--benchmark_format=json",
               "--benchmark_min_warmup_time=0.1"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    runs = json.loads(proc.stdout)["benchmarks"]
    median = [b for b in runs if b.get("aggregate_name") == "median"][0]
    assert median["time_unit"] == "ms"
    return median["real_time"]


def eager_median_ms(spec: dict, mask: str) -> float:
    import torch

    dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[spec["dtype"]]
    out_hw = [(s + 2 * spec["padding"] - spec["kernel"]) // spec["stride"] + 1 for s in spec["hw"]]
    dy = torch.randn(spec["n"], spec["k"], *out_hw, device="cuda", dtype=dtype)
    x = torch.randn(spec["n"], spec["c"], *spec["hw"], device="cuda", dtype=dtype)
    w = torch.randn(spec["k"], spec["c"] // spec["groups"], spec["kernel"], spec["kernel"], device="cuda", dtype=dtype)
    output_mask = [True, False, False] if mask == "grad_input" else [True, True, True]
    run = lambda: torch.ops.aten.convolution_backward(  # noqa: E731
        dy, x, w, [spec["k"]], [spec["stride"]] * 2, [spec["padding"]] * 2, [1, 1], False, [0, 0],
        spec["groups"], output_mask)
    for _ in range(3):
        run()
    times = []
    for _ in range(REPETITIONS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 10)
    return statistics.median(times)


def main() -> None:
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    results = []
    for entry in json.loads((folder / "manifest.json").read_text()):
        record = {k: entry[k] for k in ("shape", "mask", "variant")}
        try:
            if "compile_error" in entry:
                record["error"] = "compile: " + entry["compile_error"]
            elif "eager" in entry:
                record["median_ms"] = eager_median_ms(entry["eager"], entry["mask"])
            else:
                record["median_ms"] = iree_median_ms(folder, entry)
        except Exception as err:  # keep going: one failure must not lose the rest
            record["error"] = str(err)[-500:]
        print(json.dumps(record), flush=True)
        results.append(record)
        out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
