"""The first training step through the backend, from a cold start: the
graphs compiled one at a time (`parallel_compiles=1`) and side by side (the
default), in a fresh process each, the two settings taking turns.

The first step is what a user meets first: it compiles every forward and
backward graph of the model. Each run compiles afresh (no cache).

    ./dev python -m benchmarks.first_step [--rounds N] [--models demo,resnet18] [--out results.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# (model, batch size, image size)
WORKLOADS = {"demo": (16, 32), "resnet18": (4, 64), "shufflenet_v2_x1_0": (4, 64)}
SETTINGS = {"one at a time": 1, "side by side": None}


def first_step(model_name: str, parallel: int | None) -> dict:
    """In the child: seconds of the first forward and backward, and the backend's stats."""
    import torch

    import iree_bwdconv
    from iree_bwdconv.models import MODELS, SyntheticImages
    from iree_bwdconv.training import forward_backward

    batch, size = WORKLOADS[model_name]
    torch.manual_seed(0)
    model = MODELS[model_name]()
    images, labels = SyntheticImages(size=size, seed=0).batch(batch)
    backend = iree_bwdconv.backend(cache=False, fallback="raise", parallel_compiles=parallel)
    compiled = torch.compile(model, backend=backend)
    started = time.perf_counter()
    forward_backward(compiled, images, labels)
    seconds = time.perf_counter() - started
    stats = backend.stats
    return {"seconds": seconds, "graphs": stats.graphs, "lowering_s": stats.lowering_s,
            "iree_compile_s": stats.iree_compile_s, "parallel": backend.parallel_compiles}


def run_child(model_name: str, parallel: int | None) -> dict:
    command = [sys.executable, "-m", "benchmarks.first_step", "--child", model_name, str(parallel or 0)]
    proc = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default=",".join(WORKLOADS))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(first_step(args.child[0], int(args.child[1]) or None)))
        return
    lines = [f"cores: {os.cpu_count()}; first step from a cold start, median of {args.rounds} runs "
             "(fresh processes, the settings taking turns); lowering and iree-compile seconds are summed "
             "over graphs, so side by side they can exceed the step", "",
             "| model | batch, image | graphs | setting | first step s (min-max) | lowering s | iree-compile s | "
             "one at a time / side by side |", "|---|---|---|---|---|---|---|---|"]
    for name in args.models.split(","):
        runs: dict[str, list[dict]] = {setting: [] for setting in SETTINGS}
        for _ in range(args.rounds):
            for setting, parallel in SETTINGS.items():
                runs[setting].append(run_child(name, parallel))
        medians = {s: statistics.median(r["seconds"] for r in rs) for s, rs in runs.items()}
        batch, size = WORKLOADS[name]
        for setting, rs in runs.items():
            seconds = [r["seconds"] for r in rs]
            ratio = medians["one at a time"] / medians[setting]
            lines.append(f"| {name} | n{batch}, {size}x{size} | {rs[0]['graphs']} | {setting} "
                         f"(parallel_compiles={rs[0]['parallel']}) | {medians[setting]:.1f} "
                         f"({min(seconds):.1f}-{max(seconds):.1f}) "
                         f"| {statistics.median(r['lowering_s'] for r in rs):.1f} "
                         f"| {statistics.median(r['iree_compile_s'] for r in rs):.1f} | {ratio:.2f}x |")
        print(*lines[-len(SETTINGS):], sep="\n", flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
