"""Time per training step on this CPU: torch.compile with our backend, eager
PyTorch, and torch.compile with inductor, in one run, from the same weights
on the same batches. Compile time (the first step beyond an ordinary one) is
reported apart, and so is our lowering's own share of it.

    ./dev python -m benchmarks.train_step [--steps N] [--out results.md]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

import iree_bwdconv
from iree_bwdconv.models import MODELS, SyntheticImages
from iree_bwdconv.training import forward_backward

# (model, batch size, image size): the demo as `iree-bwdconv train` runs it,
# and ResNet-18's layout at a small batch.
WORKLOADS = (("demo", 16, 32), ("resnet18", 4, 64))
WARMUP = 3


@dataclass
class Timing:
    first_s: float
    median_s: float
    lowering_s: Optional[float] = None  # import + patterns + pass pipelines
    iree_compile_s: Optional[float] = None

    @property
    def compile_s(self) -> float:
        return max(self.first_s - self.median_s, 0.0)


def time_training(model: torch.nn.Module, batches: list, steps: int) -> tuple[float, float]:
    """(first step, median of `steps` steps after warm-up) in seconds."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    times = []
    for images, labels in batches[: 1 + WARMUP + steps]:
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        forward_backward(model, images, labels)
        optimizer.step()
        times.append(time.perf_counter() - started)
    return times[0], statistics.median(times[1 + WARMUP :])


def measure(name: str, batch: int, size: int, steps: int) -> dict[str, Timing]:
    torch.manual_seed(0)
    base = MODELS[name]()
    data = SyntheticImages(size=size, seed=0)
    batches = [data.batch(batch) for _ in range(1 + WARMUP + steps)]
    results = {}
    torch._dynamo.reset()
    results["eager"] = Timing(*time_training(copy.deepcopy(base), batches, steps))
    backend = iree_bwdconv.backend(cache=False)  # a cold compile, every run
    results["iree-bwdconv"] = Timing(*time_training(torch.compile(copy.deepcopy(base), backend=backend), batches, steps),
                                     lowering_s=backend.stats.import_s + backend.stats.lowering_s,
                                     iree_compile_s=backend.stats.iree_compile_s)
    torch._dynamo.reset()
    results["inductor"] = Timing(*time_training(torch.compile(copy.deepcopy(base)), batches, steps))
    return results


def table(rows: dict[str, dict[str, Timing]], threads: int) -> str:
    lines = [
        f"torch threads: {threads}; median of the steps after {WARMUP} warm-up steps; compile = first step minus median",
        "",
        "| model | batch, image | eager ms/step | iree-bwdconv ms/step | inductor ms/step | ours / eager | "
        "ours compile s | lowering s (share) | iree-compile s | inductor compile s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for workload, r in rows.items():
        ours, eager, inductor = r["iree-bwdconv"], r["eager"], r["inductor"]
        share = ours.lowering_s / ours.compile_s if ours.compile_s else float("nan")
        lines.append(
            f"| {workload} | {eager.median_s * 1e3:.1f} | {ours.median_s * 1e3:.1f} | {inductor.median_s * 1e3:.1f} "
            f"| {ours.median_s / eager.median_s:.2f}x | {ours.compile_s:.1f} | {ours.lowering_s:.2f} ({share:.1%}) "
            f"| {ours.iree_compile_s:.1f} | {inductor.compile_s:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = {}
    for name, batch, size in WORKLOADS:
        rows[f"{name} | n{batch}, {size}x{size}"] = measure(name, batch, size, args.steps)
        print(f"{name} done", flush=True)
    text = table(rows, torch.get_num_threads())
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
