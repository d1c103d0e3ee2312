"""This CPU (llvm-cpu, 2 threads): ours vs upstream (IREE's own torch input)
vs torch eager, on scaled-down shapes and a ResNet-50 sample, f32, grad_input only and all three
gradients. Each shape's three are timed in one run, interleaved.

    ./dev python -m benchmarks.cpu
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch

from iree_bwdconv.compiler import pipeline
from iree_bwdconv.run import runtime
from iree_bwdconv.compiler.pipeline import _tool

from . import modules
from .shapes import Shape

SHAPES = (
    Shape("3x3 s2 n4 c64 k64 56x56", 4, 64, 64, (56, 56), 3, 2, 1, dtype="f32"),
    Shape("1x1 s2 n4 c128 k256 28x28", 4, 128, 256, (28, 28), 1, 2, 0, dtype="f32"),
    Shape("5x5 s2 n2 c32 k64 40x88 (001, scaled)", 2, 32, 64, (40, 88), 5, 2, 1, dtype="f32"),
    Shape("3x3 s2 g32 n2 c64 k64 50x50 (003, scaled)", 2, 64, 64, (50, 50), 3, 2, 1, groups=32, dtype="f32"),
    Shape("3x3 s1 n2 c64 k64 56x56 (control)", 2, 64, 64, (56, 56), 3, 1, 1, dtype="f32"),
    # A ResNet-50 sample at a small batch.
    Shape("R50 3x3 s1 n2 c128 k128 28x28", 2, 128, 128, (28, 28), 3, 1, 1, dtype="f32"),
    Shape("R50 3x3 s1 n2 c256 k256 14x14", 2, 256, 256, (14, 14), 3, 1, 1, dtype="f32"),
    Shape("R50 1x1 s1 n2 c256 k64 56x56", 2, 256, 64, (56, 56), 1, 1, 0, dtype="f32"),
    Shape("R50 1x1 s2 n2 c256 k512 56x56 (projection)", 2, 256, 512, (56, 56), 1, 2, 0, dtype="f32"),
    Shape("R50 7x7 s2 n1 c3 k64 224x224 (stem)", 1, 3, 64, (224, 224), 7, 2, 3, dtype="f32"),
)
ROUNDS = 3


# Single calls timed per sample, after one untimed call: eager and IREE's
# modules alike, each sample their median.
CALLS = 10


def iree_ms(vmfb: Path, shape: Shape) -> float:
    """Median ms of CALLS single calls of the module under
    `iree-benchmark-module` (zero inputs), in a process of its own: the
    statistic `eager_ms` takes. Until 2026-11-25 (stop 24) the median of three
    repetitions each timing a mean over many calls (`iree_iterations_ms`),
    which counts this noisy machine's slow calls that eager's median drops
    (`benchmarks/cpu_timers.py`, docs/performance-journal.md)."""
    return _benchmark_module(vmfb, shape, [f"--benchmark_repetitions={CALLS}", "--benchmark_min_time=1x"])


def iree_iterations_ms(vmfb: Path, shape: Shape) -> float:
    """The median of three repetitions of `iree-benchmark-module`, each the
    mean of as many calls as fill its default time."""
    return _benchmark_module(vmfb, shape, ["--benchmark_repetitions=3"])


def runtime_ms(vmfb: Path, shape: Shape) -> float:
    """Median ms of CALLS calls through the project's runtime
    (`runtime.LoadedModule`, which the functional API and the torch.compile
    backend call), on random inputs, in this process."""
    module = runtime.LoadedModule(vmfb.read_bytes(), "cpu")
    inputs = [torch.randn(t.shape) for t in modules.example_tensors(shape)]
    return _median_ms(lambda: module(*inputs))


def _benchmark_module(vmfb: Path, shape: Shape, flags: list[str]) -> float:
    runs = benchmark_runs(vmfb, shape, flags)
    return [b for b in runs if b.get("aggregate_name") == "median"][0]["real_time"]


def benchmark_runs(vmfb: Path, shape: Shape, flags: list[str], device: str = "local-task") -> list[dict]:
    """`iree-benchmark-module`'s JSON records of the module on zero inputs:
    one per timed repetition, then the aggregates."""
    inputs = ["x".join(map(str, t.shape)) + "xf32" for t in modules.example_tensors(shape)]
    proc = subprocess.run(
        [_tool("iree-benchmark-module"), f"--device={device}", f"--module={vmfb}", "--function=main",
         *(f"--input={i}" for i in inputs), *flags, "--benchmark_format=json"],
        capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)["benchmarks"]


def eager_call(shape: Shape, mask) -> Callable[[], object]:
    """One eager call of the shape's gradients on random inputs."""
    dy, x, w = (torch.randn(t.shape) for t in modules.example_tensors(shape))
    args = modules.arguments(shape, mask)
    return lambda: torch.ops.aten.convolution_backward(dy, x, w, *args)


def eager_ms(shape: Shape, mask) -> float:
    return _median_ms(eager_call(shape, mask))


def call_times_ms(call: Callable[[], object], calls: int) -> list[float]:
    """ms of each of `calls` single calls, after one untimed call."""
    call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def _median_ms(call: Callable[[], object]) -> float:
    """Median ms of CALLS single calls, after one untimed call."""
    return statistics.median(call_times_ms(call, CALLS))


def main() -> int:
    torch.set_num_threads(2)
    print("| shape | gradients | eager ms | ours ms | upstream ms | upstream / ours | ours / eager |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in SHAPES:
            for mask_name, mask in (("grad_input", modules.GRAD_INPUT_ONLY), ("all", modules.ALL_GRADS)):
                ours, upstream = Path(tmp) / "ours.vmfb", Path(tmp) / "upstream.vmfb"
                ours.write_bytes(pipeline.iree_compile(modules.ours(shape, mask), "cpu"))
                upstream.write_bytes(pipeline.iree_compile(modules.raw_torch(shape, mask), "cpu",
                                                           modules.UPSTREAM_FLAGS))
                samples = {"eager": [], "ours": [], "upstream": []}
                for _ in range(ROUNDS):  # interleaved, so drift hits all three alike
                    samples["eager"].append(eager_ms(shape, mask))
                    samples["ours"].append(iree_ms(ours, shape))
                    samples["upstream"].append(iree_ms(upstream, shape))
                med = {k: statistics.median(v) for k, v in samples.items()}
                print(f"| {shape.name} | {mask_name} | {med['eager']:.2f} | {med['ours']:.2f} | "
                      f"{med['upstream']:.2f} | {med['upstream'] / med['ours']:.2f} | "
                      f"{med['ours'] / med['eager']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
