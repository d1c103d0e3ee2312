"""How single calls of one CPU module spread, beside eager's: percentiles
of many single calls under `iree-benchmark-module` (each row a process of
its own, with the IREE runtime flags it names), of calls through the
project's runtime in this process, the caller under SCHED_BATCH as shipped
(`caller_thread`) and under SCHED_OTHER, and of eager calls in this
process. On this 2-CPU machine the medians `cpu_timers` takes swing
between runs while the fastest calls do not (docs/performance-journal.md, "The
stem's grad_weight call by call", "The caller's wake-up on the CPU").

    ./dev python -m benchmarks.cpu_call_spread [SHAPE-NAME-PART] [CALLS]

grad_weight alone of the first shape of `benchmarks/cpu.py` whose name
holds the part ("stem" unless told).
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import tempfile
from pathlib import Path
from unittest import mock

import torch

from iree_bwdconv.run import caller_thread, runtime
from iree_bwdconv.compiler import pipeline

from . import cpu, modules

GRAD_WEIGHT = (False, True, False)
PERCENTILES = (0, 10, 25, 50, 75, 90, 100)
# (label, device, runtime flags): IREE's default, its workers spinning
# before they sleep, pinned to the two CPUs, one worker, and the caller's
# thread alone.
RUNS = (
    ("local-task", "local-task", ()),
    ("local-task, --task_worker_spin_us=50", "local-task", ("--task_worker_spin_us=50",)),
    ("local-task, --task_topology_cpu_ids=0,1", "local-task", ("--task_topology_cpu_ids=0,1",)),
    ("local-task, --task_topology_group_count=1", "local-task", ("--task_topology_group_count=1",)),
    ("local-sync", "local-sync", ()),
)


def percentiles(times: list[float]) -> str:
    ordered = sorted(times)
    return " ".join(f"{ordered[round(p / 100 * (len(ordered) - 1))]:.2f}" for p in PERCENTILES)


def main(match: str, calls: int) -> None:
    torch.set_num_threads(2)
    shape = next(s for s in cpu.SHAPES if match in s.name)
    print(f"{shape.name}, grad_weight; ms of single calls at percentiles {'/'.join(map(str, PERCENTILES))}")
    print("| run | percentiles |")
    print("|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        vmfb = Path(tmp) / "ours.vmfb"
        vmfb.write_bytes(pipeline.iree_compile(modules.ours(shape, GRAD_WEIGHT), "cpu"))
        for label, device, flags in RUNS:
            runs = cpu.benchmark_runs(vmfb, shape, [*flags, f"--benchmark_repetitions={calls}",
                                                    "--benchmark_min_time=1x"], device)
            times = [b["real_time"] for b in runs if b.get("run_type") == "iteration"]
            print(f"| {label} | {percentiles(times)} |", flush=True)
        module = runtime.LoadedModule(vmfb.read_bytes(), "cpu")
        inputs = [torch.randn(t.shape) for t in modules.example_tensors(shape)]
        for label, scheduling in (("runtime, caller SCHED_BATCH (as shipped)", caller_thread.batch_scheduling),
                                  ("runtime, caller SCHED_OTHER", contextlib.nullcontext)):
            with mock.patch.object(caller_thread, "batch_scheduling", scheduling):
                times = cpu.call_times_ms(lambda: module(*inputs), calls)
            print(f"| {label} | {percentiles(times)} |", flush=True)
    eager = cpu.call_times_ms(cpu.eager_call(shape, GRAD_WEIGHT), calls)
    print(f"| eager (2 threads, in process) | {percentiles(eager)} |")
    print(f"\neager's median {statistics.median(eager):.2f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "stem", int(sys.argv[2]) if len(sys.argv) > 2 else 100)
