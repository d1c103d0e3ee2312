"""Runs on the GPU machine: times every .vmfb of a manifest with
iree-benchmark-module (CUDA) and torch eager with CUDA events. Needs only
python3 with torch and iree-base-runtime (no project code, no compiler).

    python3 benchmarks/run_on_gpu.py FOLDER RESULTS.json [FIRST_ENTRY]

Every iree-benchmark-module call runs with the device the project's
runtime makes (`RUNTIME_FLAGS`); with $IREE_DEFAULT_DEVICE=1 with IREE's
defaults instead. $IREE_BENCHMARK_FLAGS (split at spaces) goes to every
call after them.
"""

import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPETITIONS = 5
TIMEOUT_S = 45


# As `iree_bwdconv.run.runtime` creates its CUDA device (tests/test_runtime.py
# checks that the two agree): no stream-ordered pool, and IREE's caching
# allocator, here of 16 GiB, more than any benchmark module's buffers.
RUNTIME_FLAGS = ("--cuda_async_allocations=false", "--device_allocator=caching:device_local=*;17179869184;64")
TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "i64": "int64"}


def random_input(folder: Path, spec: str) -> str:
    """`spec` ("2x3xf16") as an --input flag value that reads random normal
    values from a raw file, written once per spec: timing on zeros hides
    unwritten outputs and can run faster than real data."""
    import torch

    path = folder / "inputs" / f"{spec}.bin"
    if not path.exists():
        *sizes, dtype = spec.split("x")
        values = torch.randn([int(s) for s in sizes], generator=torch.Generator().manual_seed(len(spec)))
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(values.to(getattr(torch, TORCH_DTYPES[dtype])).reshape(-1).view(torch.uint8).numpy().tobytes())
    return f"{spec}=@{path}"


def _benchmark_command(folder: Path, entry: dict, *flags: str) -> list[str]:
    return [sys.executable, "-m", "iree._runtime.scripts.iree_benchmark_module", "--device=cuda",
            f"--module={folder / entry['vmfb']}", f"--function={entry.get('function', 'main')}",
            *(f"--input={random_input(folder, i)}" for i in entry["inputs"]), *flags,
            *(() if os.environ.get("IREE_DEFAULT_DEVICE") == "1" else RUNTIME_FLAGS),
            *os.environ.get("IREE_BENCHMARK_FLAGS", "").split()]


def warm_jit_cache(folder: Path, entries: list) -> None:
    """The .vmfb files hold sm_80 PTX that the driver compiles for Hopper on
    load, seconds per module. Loading them all once, in parallel, fills the
    driver's JIT cache so the timed runs below start at once."""
    def load(entry):
        try:
            subprocess.run(_benchmark_command(folder, entry, "--benchmark_repetitions=1", "--benchmark_min_time=0.01s"),
                           capture_output=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass

    with ThreadPoolExecutor(max_workers=12) as pool:
        list(pool.map(load, [e for e in entries if "vmfb" in e and "compile_error" not in e]))


def iree_median_ms(folder: Path, entry: dict) -> float:
    command = _benchmark_command(folder, entry, f"--benchmark_repetitions={REPETITIONS}",
                                 "--benchmark_format=json", "--benchmark_min_warmup_time=0.1",
                                 "--benchmark_min_time=0.1s")
    proc = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    runs = json.loads(proc.stdout)["benchmarks"]
    median = [b for b in runs if b.get("aggregate_name") == "median"][0]
    assert median["time_unit"] == "ms"
    return median["real_time"]


def eager_median_ms(spec: dict, mask: str) -> float:
    import torch

    dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[spec["dtype"]]
    transposed = spec.get("transposed", False)  # then c and hw are the transposed convolution's input's
    dilation = spec.get("dilation", 1)
    span = dilation * (spec["kernel"] - 1) + 1
    rank = len(spec["hw"])  # 1-D, 2-D or 3-D
    taps = [spec["kernel"]] * rank
    if transposed:
        out_hw = [(s - 1) * spec["stride"] - 2 * spec["padding"] + span for s in spec["hw"]]
        w_shape = [spec["c"], spec["k"] // spec["groups"], *taps]
    else:
        out_hw = [(s + 2 * spec["padding"] - span) // spec["stride"] + 1 for s in spec["hw"]]
        w_shape = [spec["k"], spec["c"] // spec["groups"], *taps]
    x = torch.randn(spec["n"], spec["c"], *spec["hw"], device="cuda", dtype=dtype)
    w = torch.randn(*w_shape, device="cuda", dtype=dtype)
    functional = torch.nn.functional
    if mask == "forward" and transposed:  # the transposed convolution itself
        conv_transpose = getattr(functional, f"conv_transpose{rank}d")
        run = lambda: conv_transpose(  # noqa: E731
            x, w, None, spec["stride"], spec["padding"], spec.get("output_padding", 0), spec["groups"], dilation)
    elif mask == "forward":  # the convolution itself
        conv = getattr(functional, f"conv{rank}d")
        run = lambda: conv(x, w, None, spec["stride"], spec["padding"], dilation, spec["groups"])  # noqa: E731
    else:
        dy = torch.randn(spec["n"], spec["k"], *out_hw, device="cuda", dtype=dtype)
        output_mask = {"grad_input": [True, False, False], "grad_weight": [False, True, False]}.get(mask, [True] * 3)
        run = lambda: torch.ops.aten.convolution_backward(  # noqa: E731
            dy, x, w, [spec["k"]], [spec["stride"]] * rank, [spec["padding"]] * rank, [dilation] * rank, transposed,
            [0] * rank, spec["groups"], output_mask)
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


def record_each(entries: list, out: Path, measure) -> None:
    """`measure(entry)` (a dict of fields) for every entry, each result
    printed and the list rewritten to `out` as it grows; an entry that
    raises is recorded with its error and the rest still run."""
    results = []
    for entry in entries:
        record = {k: entry[k] for k in ("shape", "mask", "variant")}
        try:
            record.update(measure(entry))
        except Exception as err:  # keep going: one failure must not lose the rest
            record["error"] = str(err)[-500:]
        print(json.dumps(record), flush=True)
        results.append(record)
        out.write_text(json.dumps(results, indent=1))


def _median(folder: Path, entry: dict) -> dict:
    if "compile_error" in entry:
        return {"error": "compile: " + entry["compile_error"]}
    if "eager" in entry:
        return {"median_ms": eager_median_ms(entry["eager"], entry["mask"])}
    return {"median_ms": iree_median_ms(folder, entry)}


def main() -> None:
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    start = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    entries = json.loads((folder / os.environ.get("MANIFEST", "manifest.json")).read_text())[start:]
    for entry in entries:  # written here, before the parallel warm-up reads them
        for spec in entry.get("inputs", ()):
            random_input(folder, spec)
    warm_jit_cache(folder, entries)
    record_each(entries, out, lambda entry: _median(folder, entry))


if __name__ == "__main__":
    main()
