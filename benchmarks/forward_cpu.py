"""Forward convolutions on this CPU: torch-mlir's lowering (a named
convolution: `conv_2d_nchw_fchw`, `conv_2d_ngchw_gfchw` or the depthwise
op), ours (`iree_bwdconv/patterns/convolution_forward.py`: groups sliced apart, im2col +
named matmul where its rule says), and torch eager. The rules of that
pattern (`plan.forward`: `im2col_applies`, `group_split_applies`) rest on this table; for the rows
the pattern declines, "ours" is the form it declines (see `compiled`), to
show what declining saves. Each row's
variants are timed in turns over ROUNDS rounds; medians.

    ./dev python -m benchmarks.forward_cpu [--out results.md]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from pathlib import Path
from typing import Callable, NamedTuple

import torch
import torch.nn.functional as F

import iree_bwdconv
import iree_bwdconv.patterns as patterns
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import forward as plan_forward
from iree_bwdconv.plan import tuning
from iree_bwdconv.run.runtime import LoadedModule


class Layer(NamedTuple):
    name: str
    n: int
    c: int
    f: int
    size: int
    kernel: int
    stride: int
    groups: int = 1

    @property
    def padding(self) -> int:
        return self.kernel // 2


LAYERS = (
    # grouped, 3x3 stride 1
    Layer("demo CNN's grouped layer", 16, 32, 32, 8, 3, 1, 4),
    Layer("g4, 16 per group", 16, 64, 64, 16, 3, 1, 4),
    Layer("g16, 4 per group", 4, 64, 64, 28, 3, 1, 16),
    Layer("g64, 4 per group", 2, 256, 256, 28, 3, 1, 64),
    Layer("g32, 8 per group (ResNeXt)", 4, 256, 256, 28, 3, 1, 32),
    Layer("g32, 2 per group", 4, 64, 64, 28, 3, 1, 32),
    Layer("depthwise", 16, 32, 32, 8, 3, 1, 32),
    Layer("depthwise", 4, 128, 128, 14, 3, 1, 128),
    # ResNet-18 at n4 64x64 (the training benchmark's), then ResNet-50's wider layers
    Layer("R18 stem", 4, 3, 64, 64, 7, 2),
    Layer("R18 3x3 c64", 4, 64, 64, 16, 3, 1),
    Layer("R18 3x3 s2 c64->128", 4, 64, 128, 16, 3, 2),
    Layer("R18 1x1 s2 projection", 4, 64, 128, 16, 1, 2),
    Layer("R18 3x3 c128", 4, 128, 128, 8, 3, 1),
    Layer("R18 3x3 s2 c128->256", 4, 128, 256, 8, 3, 2),
    Layer("R18 3x3 c256", 4, 256, 256, 4, 3, 1),
    Layer("R18 3x3 s2 c256->512", 4, 256, 512, 4, 3, 2),
    Layer("R18 3x3 c512", 4, 512, 512, 2, 3, 1),
    Layer("R50 3x3 c64", 2, 64, 64, 56, 3, 1),
    Layer("R50 3x3 c128", 2, 128, 128, 28, 3, 1),
    Layer("R50 3x3 c256", 2, 256, 256, 14, 3, 1),
    Layer("R50 1x1 c256->64", 4, 256, 64, 28, 1, 1),
)
ROUNDS, CALLS = 5, 10
DECLINED_DEPTHWISE, DECLINED_NAMED = "declined (depthwise)", "declined (named conv)"


class Conv(torch.nn.Module):
    def __init__(self, layer: Layer) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, w, stride=self.layer.stride, padding=self.layer.padding, groups=self.layer.groups)


def compiled(layer: Layer, x: torch.Tensor, w: torch.Tensor, ours: bool, choice: str) -> Callable[[], object]:
    """The layer lowered with our forward pattern or without it, checked
    against float64 eager. Where the pattern declines the layer, ours is
    the form it declines: the depthwise layer split apart, the narrow
    stride-1 layer as im2col."""
    registry, cpu = patterns.REGISTRY, tuning.TUNING["cpu"]
    if not ours:
        patterns.REGISTRY = tuple(p for p in registry if p.name != "convolution_forward")
    elif choice == DECLINED_DEPTHWISE:
        tuning.TUNING["cpu"] = dataclasses.replace(cpu, split_min_channels_per_group=1)
    elif choice == DECLINED_NAMED:
        tuning.TUNING["cpu"] = dataclasses.replace(cpu, forward_im2col_min_channels=0)
    try:
        text = iree_bwdconv.lower(Conv(layer), x, w, target="cpu")
    finally:
        patterns.REGISTRY, tuning.TUNING["cpu"] = registry, cpu
    assert ("linalg.conv_" in text or "depthwise" in text) != ours
    module = LoadedModule(iree_bwdconv.compile(text, target="cpu"))
    expected = Conv(layer)(x.double(), w.double())
    torch.testing.assert_close(module(x, w)[0].double(), expected, rtol=1e-4, atol=1e-3)
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


def ours_form(layer: Layer) -> str:
    """What the pattern does with this layer when its rules are not overridden."""
    c = layer.c // layer.groups
    cpu = tuning.for_target("cpu")
    if layer.groups > 1 and not plan_forward.group_split_applies(layer.groups, layer.c, LoweringOptions(target="cpu"),
                                                                 cpu):
        return DECLINED_DEPTHWISE
    im2col = plan_forward.im2col_applies(c, [layer.kernel] * 2, [layer.stride] * 2, cpu)
    if layer.groups == 1 and not im2col:
        return DECLINED_NAMED
    return ("split, " if layer.groups > 1 else "") + ("im2col" if im2col else "conv")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines = [
        f"torch threads: {torch.get_num_threads()}; f32, padding k//2; median ms of {ROUNDS} rounds of {CALLS} calls",
        "",
        "| layer | n, c -> f, image, kernel, stride, groups | the pattern's choice | eager ms | torch-mlir ms | "
        "ours ms | ours / torch-mlir |",
        "|---|---|---|---|---|---|---|",
    ]
    choices = [ours_form(layer) for layer in LAYERS]
    for layer, choice in zip(LAYERS, choices):
        torch.manual_seed(0)
        x = torch.randn(layer.n, layer.c, layer.size, layer.size)
        w = torch.randn(layer.f, layer.c // layer.groups, layer.kernel, layer.kernel)
        ms = median_ms({
            "eager": lambda: F.conv2d(x, w, stride=layer.stride, padding=layer.padding, groups=layer.groups),
            "torch-mlir": compiled(layer, x, w, False, choice),
            "ours": compiled(layer, x, w, True, choice),
        })
        lines.append(
            f"| {layer.name} | n{layer.n} c{layer.c}->{layer.f} {layer.size}x{layer.size} {layer.kernel}x{layer.kernel} "
            f"s{layer.stride} g{layer.groups} | {choice} | {ms['eager']:.3f} | {ms['torch-mlir']:.3f} "
            f"| {ms['ours']:.3f} | {ms['ours'] / ms['torch-mlir']:.2f} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
