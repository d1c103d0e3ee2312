"""Three timers of the same CPU module beside torch eager (the median of
single calls), interleaved rounds, on the shapes of `benchmarks/cpu.py`
(f32, two threads), grad_input and grad_weight: `iree-benchmark-module`'s
median of single calls (`cpu.iree_ms`, what the CPU benchmarks take), its
median of three means over many calls (`cpu.iree_iterations_ms`, what they
took until 2026-11-25), and the median of single calls through the
project's runtime in this process (`cpu.runtime_ms`: the functional API's
and the torch.compile backend's path).

    ./dev python -m benchmarks.cpu_timers [ROUNDS] [SHAPE-NAME-PART]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

import torch

from iree_bwdconv.compiler import pipeline

from . import cpu, modules

MASKS = {"grad_input": modules.GRAD_INPUT_ONLY, "grad_weight": (False, True, False)}
TIMERS = {"single calls": cpu.iree_ms, "means of many calls": cpu.iree_iterations_ms, "runtime": cpu.runtime_ms}


def main(rounds: int, match: str) -> int:
    torch.set_num_threads(2)
    print("| shape | gradient | eager ms | " + " | ".join(f"{name} ms" for name in TIMERS) + " | "
          + " | ".join(f"{name} / eager" for name in TIMERS) + " |")
    print("|---|---|---|" + "---|" * 2 * len(TIMERS))
    with tempfile.TemporaryDirectory() as tmp:
        for shape in cpu.SHAPES:
            if match not in shape.name:
                continue
            for name, mask in MASKS.items():
                vmfb = Path(tmp) / "ours.vmfb"
                vmfb.write_bytes(pipeline.iree_compile(modules.ours(shape, mask), "cpu"))
                samples: dict[str, list[float]] = {"eager": [], **{timer: [] for timer in TIMERS}}
                for _ in range(rounds):  # interleaved, so drift hits all alike
                    samples["eager"].append(cpu.eager_ms(shape, mask))
                    for timer, measure in TIMERS.items():
                        samples[timer].append(measure(vmfb, shape))
                med = {k: statistics.median(v) for k, v in samples.items()}
                times = " | ".join(f"{med[timer]:.2f}" for timer in TIMERS)
                ratios = " | ".join(f"{med[timer] / med['eager']:.2f}" for timer in TIMERS)
                print(f"| {shape.name} | {name} | {med['eager']:.2f} | {times} | {ratios} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, sys.argv[2] if len(sys.argv) > 2 else ""))
