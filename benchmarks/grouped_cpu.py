"""Grouped forward convolutions on this CPU: torch-mlir's grouped form
(`linalg.conv_2d_ngchw_gfchw`, or the depthwise named op), the groups
sliced apart (what `patterns/convolution_group_split.py` emits), and torch
eager; the rule of `iree_bwdconv.group_split` rests on this table. Each
row's variants are timed in turns over ROUNDS rounds; medians.

    ./dev python -m benchmarks.grouped_cpu [--out results.md]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

import iree_bwdconv
import iree_bwdconv.patterns as patterns
from iree_bwdconv import group_split
from iree_bwdconv.runtime import LoadedModule

# (n, channels in = out, image size, groups), 3x3 kernels, padding 1.
SHAPES = (
    (16, 32, 8, 4),  # the demo CNN's grouped layer
    (16, 64, 16, 4),
    (16, 32, 16, 2),
    (4, 64, 28, 16),
    (2, 256, 28, 64),  # 4 channels per group
    (4, 256, 28, 32),  # ResNeXt's 32x8d width
    (4, 64, 28, 32),  # 2 channels per group
    (16, 32, 8, 32),  # depthwise
    (4, 128, 14, 128),  # depthwise
)
ROUNDS, CALLS = 5, 10


class Grouped(torch.nn.Module):
    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, w, padding=1, groups=self.groups)


def compiled(x: torch.Tensor, w: torch.Tensor, groups: int, split: bool) -> Callable[[], object]:
    """The module lowered with or without the forward split pattern; with
    it, depthwise layers (which the pattern declines) are split too."""
    registry, minimum = patterns.REGISTRY, group_split.MIN_CHANNELS_PER_GROUP
    if split:
        group_split.MIN_CHANNELS_PER_GROUP = 1
    else:
        patterns.REGISTRY = tuple(p for p in registry if p.name != "convolution_group_split")
    try:
        text = iree_bwdconv.lower(Grouped(groups), x, w, target="cpu")
    finally:
        patterns.REGISTRY, group_split.MIN_CHANNELS_PER_GROUP = registry, minimum
    assert ("tensor.insert_slice" in text) == split
    module = LoadedModule(iree_bwdconv.compile(text, target="cpu"))
    expected = F.conv2d(x.double(), w.double(), padding=1, groups=groups)
    torch.testing.assert_close(module(x, w)[0].double(), expected, rtol=1e-4, atol=1e-4)
    return lambda: module(x, w)


def median_ms(variants: dict[str, Callable[[], object]]) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():
        fn()
    for _ in range(ROUNDS):
        for name, fn in variants.items():
            for _ in range(CALLS):
                started = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - started)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines = [
        f"torch threads: {torch.get_num_threads()}; f32, 3x3 kernels, padding 1; median ms of {ROUNDS} rounds",
        "",
        "| n, channels, image, groups | channels per group | eager ms | grouped form ms | split ms | split / grouped |",
        "|---|---|---|---|---|---|",
    ]
    for n, c, size, groups in SHAPES:
        torch.manual_seed(0)
        x, w = torch.randn(n, c, size, size), torch.randn(c, c // groups, 3, 3)
        ms = median_ms({
            "eager": lambda: F.conv2d(x, w, padding=1, groups=groups),
            "grouped": compiled(x, w, groups, split=False),
            "split": compiled(x, w, groups, split=True),
        })
        lines.append(f"| n{n} c{c} {size}x{size} g{groups} | {c // groups} | {ms['eager']:.3f} | {ms['grouped']:.3f} "
                     f"| {ms['split']:.3f} | {ms['split'] / ms['grouped']:.2f} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
