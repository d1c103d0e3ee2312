"""The benchmark shapes of the strided data-gradient work: seed 003's
(MI355X report) and seed 001's (vendor phase-decomposition bugs), plus
stride-1 controls. `c` is input channels, `k` output channels, `hw` the
input's spatial size."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Shape:
    name: str
    n: int
    c: int
    k: int
    hw: tuple[int, int]
    kernel: int
    stride: int
    padding: int
    groups: int = 1
    dtype: str = "f16"

    @property
    def torch_dtype(self) -> torch.dtype:
        return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[self.dtype]

    @property
    def out_hw(self) -> tuple[int, int]:
        return tuple((s + 2 * self.padding - self.kernel) // self.stride + 1 for s in self.hw)  # type: ignore

    @property
    def useful_macs(self) -> int:
        """Multiply-adds of the forward convolution (= of its data gradient)."""
        return self.n * self.k * (self.c // self.groups) * math.prod(self.out_hw) * self.kernel**2

    def scaled(self, factor: int, max_batch: int = 2) -> "Shape":
        """A smaller shape for the CPU: fewer channels and images, same geometry class."""
        return Shape(f"{self.name} /{factor}", min(self.n, max_batch), max(self.groups, self.c // factor),
                     max(self.groups, self.k // factor), tuple(max(8, s // factor) for s in self.hw),  # type: ignore
                     self.kernel, self.stride, self.padding, self.groups, "f32")


SHAPES = (
    Shape("1x1 s2 n32 c1024 k2048 50x50 (003)", 32, 1024, 2048, (50, 50), 1, 2, 0),
    Shape("1x1 s2 n32 c512 k1024 100x100 (003)", 32, 512, 1024, (100, 100), 1, 2, 0),
    Shape("1x1 s2 n12 c896 k2016 59x91 (003)", 12, 896, 2016, (59, 91), 1, 2, 0, dtype="bf16"),
    Shape("1x1 s2 n4 c32 k224 470x725 (003)", 4, 32, 224, (470, 725), 1, 2, 0, dtype="bf16"),
    Shape("1x1 s2 n10 c448 k896 118x182 (003)", 10, 448, 896, (118, 182), 1, 2, 0, dtype="bf16"),
    Shape("3x3 s2 g32 n32 c256 k256 200x200 (003)", 32, 256, 256, (200, 200), 3, 2, 1, groups=32),
    Shape("3x3 s2 n1 c3 k32 940x1450 (003)", 1, 3, 32, (940, 1450), 3, 2, 1, dtype="bf16"),
    Shape("3x3 s2 n3 c3 k32 940x1450 (003)", 3, 3, 32, (940, 1450), 3, 2, 1, dtype="bf16"),
    Shape("3x3 s2 n5 c3 k32 940x1450 (003)", 5, 3, 32, (940, 1450), 3, 2, 1, dtype="bf16"),
    Shape("5x5 s2 n16 c128 k256 40x175 (001)", 16, 128, 256, (40, 175), 5, 2, 1),
    Shape("3x3 s2 n32 c256 k256 25x25 Retinanet (001)", 32, 256, 256, (25, 25), 3, 2, 1),
    Shape("3x3 s2 n1 c384 k384 277x209 i2v (001)", 1, 384, 384, (277, 209), 3, 2, 1),
    Shape("3x3 s2 n32 c256 k256 50x50 (001)", 32, 256, 256, (50, 50), 3, 2, 1),
    Shape("3x3 s1 n32 c256 k256 50x50 (control)", 32, 256, 256, (50, 50), 3, 1, 1),
    Shape("1x1 s1 n32 c1024 k2048 25x25 (control)", 32, 1024, 2048, (25, 25), 1, 1, 0),
)
