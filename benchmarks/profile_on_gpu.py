"""Runs on the GPU machine: the time of each kernel (IREE dispatch) of the
manifest entries whose .vmfb name matches a pattern, one call each under
Nsight Compute (`ncu`, clocks left as they are). Says where a variant's
time goes: its contraction, its gathers, the placement of its result.

    python3 benchmarks/profile_on_gpu.py FOLDER RESULTS.json REGEX
"""

import csv
import glob
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from run_on_gpu import random_input, record_each

TIMEOUT_S = 120


def _ncu() -> str:
    found = shutil.which("ncu") or sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))[-1:]
    if not found:
        raise FileNotFoundError("ncu (Nsight Compute) is not on this machine")
    return found if isinstance(found, str) else found[0]


def _profile(command: list[str], *ncu_flags: str) -> list[tuple[str, float]]:
    """(kernel name, microseconds) of each kernel `command` launches that ncu profiles."""
    proc = subprocess.run([_ncu(), "--clock-control", "none", "--csv", "--metrics", "gpu__time_duration.sum",
                           *ncu_flags, *command], capture_output=True, text=True, timeout=TIMEOUT_S)
    rows = list(csv.DictReader(line for line in proc.stdout.splitlines() if line.startswith('"')))
    if not rows:
        raise RuntimeError((proc.stdout + proc.stderr)[-2000:])
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
    return [(row["Kernel Name"], float(row["Metric Value"].replace(",", "")) * scale[row["Metric Unit"]])
            for row in rows]


def kernel_times_us(folder: Path, entry: dict, warm_calls: int = 10) -> list[tuple[str, float]]:
    """(kernel name, microseconds) of every kernel of one call of `main`,
    taken after `warm_calls` unprofiled calls: the first call of a process
    runs at idle clocks (a 1.7 ms matmul took 18 ms there)."""
    inputs = [f"--input={random_input(folder, i)}" for i in entry["inputs"]]
    module = [f"--module={folder / entry['vmfb']}", "--function=main", "--device=cuda", *inputs]
    cold = _profile([sys.executable, "-m", "iree._runtime.scripts.iree_run_module", "--output_max_element_count=0",
                     *module])
    calls = len(cold)
    return _profile([sys.executable, "-m", "iree._runtime.scripts.iree_benchmark_module", *module,
                     f"--benchmark_min_time={warm_calls + 3}x", "--benchmark_repetitions=1",
                     "--benchmark_min_warmup_time=0"],
                    "--launch-skip", str(warm_calls * calls), "--launch-count", str(calls))


def _kernels(folder: Path, entry: dict) -> dict:
    kernels = kernel_times_us(folder, entry)
    return {"kernels_us": kernels, "total_us": sum(us for _, us in kernels)}


def main() -> None:
    folder, out, pattern = Path(sys.argv[1]), Path(sys.argv[2]), re.compile(sys.argv[3])
    entries = [e for e in json.loads((folder / "manifest.json").read_text())
               if "vmfb" in e and "compile_error" not in e and pattern.search(e["vmfb"])]
    record_each(entries, out, lambda entry: _kernels(folder, entry))


if __name__ == "__main__":
    main()
