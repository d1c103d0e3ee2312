"""Time per training step on this CPU: torch.compile with our backend, eager
PyTorch, and torch.compile with inductor, in one run, from the same weights
on the same batches. Compile time (the first step beyond an ordinary one) is
reported apart, and so is our lowering's own share of it.

Each workload runs twice, in a fresh process each time: with libgomp's
default spinning and with GOMP_SPINCOUNT limited as `iree-bwdconv train`
limits it (`iree_bwdconv.run.openmp`), since the variable only counts when set
before torch is imported.

    ./dev python -m benchmarks.train_step [--steps N] [--out results.md]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

import iree_bwdconv
from iree_bwdconv.run import openmp
from iree_bwdconv.models import MODELS, SyntheticImages
from iree_bwdconv.training import forward_backward

# (model, batch size, image size): the demo as `iree-bwdconv train` runs it,
# and ResNet-18's layout at a small batch.
WORKLOADS = (("demo", 16, 32), ("resnet18", 4, 64))
WARMUP = 3
ROUNDS = 5
# Column label -> GOMP_SPINCOUNT for the child process (None: libgomp's default).
SPIN_SETTINGS = {"default": None, openmp.SPIN_COUNT: openmp.SPIN_COUNT}


@dataclass
class Timing:
    first_s: float
    median_s: float
    lowering_s: Optional[float] = None  # import + patterns + pass pipelines
    iree_compile_s: Optional[float] = None

    @property
    def compile_s(self) -> float:
        return max(self.first_s - self.median_s, 0.0)


class Trainer:
    """One model and its optimizer, stepping through the shared batches."""

    def __init__(self, model: torch.nn.Module, batches: list) -> None:
        self.model, self.batches, self.next = model, batches, 0
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(self) -> float:
        images, labels = self.batches[self.next % len(self.batches)]
        self.next += 1
        started = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=True)
        forward_backward(self.model, images, labels)
        self.optimizer.step()
        return time.perf_counter() - started


def measure(name: str, batch: int, size: int, steps: int) -> dict[str, Timing]:
    """First step and median step of each variant. After the first step
    and warm-up, the variants take turns, `steps` steps each for ROUNDS
    rounds, so that a slow spell of the machine falls on all of them."""
    torch.manual_seed(0)
    base = MODELS[name]()
    data = SyntheticImages(size=size, seed=0)
    batches = [data.batch(batch) for _ in range(8)]
    torch._dynamo.reset()
    backend = iree_bwdconv.backend(cache=False)  # a cold compile, every run
    trainers = {
        "eager": Trainer(copy.deepcopy(base), batches),
        "iree-bwdconv": Trainer(torch.compile(copy.deepcopy(base), backend=backend), batches),
        "inductor": Trainer(torch.compile(copy.deepcopy(base)), batches),
    }
    first = {variant: trainer.step() for variant, trainer in trainers.items()}
    for trainer in trainers.values():
        for _ in range(WARMUP):
            trainer.step()
    times: dict[str, list[float]] = {variant: [] for variant in trainers}
    for _ in range(ROUNDS):
        for variant, trainer in trainers.items():
            times[variant] += [trainer.step() for _ in range(steps)]
    results = {variant: Timing(first[variant], statistics.median(t)) for variant, t in times.items()}
    results["iree-bwdconv"].lowering_s = backend.stats.import_s + backend.stats.lowering_s
    results["iree-bwdconv"].iree_compile_s = backend.stats.iree_compile_s
    return results


def table(rows: dict[str, dict[str, Timing]], threads: int) -> str:
    lines = [
        f"torch threads: {threads}; median of {ROUNDS} rounds of steps, the variants taking turns, after "
        f"{WARMUP} warm-up steps; compile = first step minus median",
        "",
        "| model | batch, image | GOMP_SPINCOUNT | eager ms/step | iree-bwdconv ms/step | inductor ms/step | ours / eager | "
        "ours compile s | lowering s (share) | iree-compile s | inductor compile s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
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


def measure_here(steps: int) -> dict[str, dict[str, dict]]:
    return {f"{name} | n{batch}, {size}x{size}": {k: dataclasses.asdict(t) for k, t in measure(name, batch, size, steps).items()}
            for name, batch, size in WORKLOADS}


def measure_in_child(steps: int, spin: str | None) -> dict[str, dict[str, Timing]]:
    env = {k: v for k, v in os.environ.items() if k not in (openmp.SPIN_VARIABLE, "OMP_WAIT_POLICY")}
    if spin is not None:
        env[openmp.SPIN_VARIABLE] = spin
    proc = subprocess.run([sys.executable, "-m", "benchmarks.train_step", "--child", "--steps", str(steps)],
                          env=env, capture_output=True, text=True, check=True)
    rows = json.loads(proc.stdout.splitlines()[-1])
    return {w: {k: Timing(**t) for k, t in r.items()} for w, r in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=10, help="steps per variant per round")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_here(args.steps)))
        return
    rows = {}
    for label, spin in SPIN_SETTINGS.items():
        for workload, timings in measure_in_child(args.steps, spin).items():
            name, shape = workload.split(" | ")
            rows[f"{name} | {shape} | {label}"] = timings
        print(f"GOMP_SPINCOUNT {label} done", flush=True)
    text = table(rows, torch.get_num_threads())
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
