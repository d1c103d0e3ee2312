"""A registry of named convolution_backward cases, as torch-mlir's e2e suite
registers its tests. Each case is checked against eager PyTorch in float64.

Names encode the configuration, e.g. `ConvolutionBackward2D_s2_p1_d1_g4_f16`;
`case()` derives them, so a name cannot disagree with what it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch

from iree_bwdconv import geometry

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class ConvBackwardCase:
    name: str
    input_shape: tuple[int, ...]
    weight_shape: tuple[int, ...]
    grad_output_shape: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    transposed: bool
    output_padding: tuple[int, ...]
    groups: int
    output_mask: tuple[bool, bool, bool]
    dtype: str
    bias_sizes: Optional[tuple[int, ...]]
    dynamic_batch: bool = False
    note: str = field(default="", compare=False)

    def arguments(self) -> tuple:
        """Positional arguments after the three tensors, as aten takes them."""
        return (
            None if self.bias_sizes is None else list(self.bias_sizes),
            list(self.stride), list(self.padding), list(self.dilation), self.transposed,
            list(self.output_padding), self.groups, list(self.output_mask),
        )

    def tensors(self, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        make = lambda shape: torch.randn(shape, generator=generator).to(DTYPES[self.dtype])  # noqa: E731
        return make(self.grad_output_shape), make(self.input_shape), make(self.weight_shape)


CASES: dict[str, ConvBackwardCase] = {}


def _per_dim(name: str, values: tuple[int, ...]) -> str:
    if len(set(values)) == 1:
        return f"{name}{values[0]}"
    return name + "x".join(map(str, values))


def case_name(c: ConvBackwardCase) -> str:
    rank = len(c.weight_shape) - 2
    parts = [f"ConvolutionBackward{rank}D"]
    if c.transposed:
        parts.append("transposed")
    parts += [
        "k" + "x".join(map(str, c.weight_shape[2:])),
        _per_dim("s", c.stride), _per_dim("p", c.padding), _per_dim("d", c.dilation),
    ]
    if c.transposed:
        parts.append(_per_dim("op", c.output_padding))
    parts.append(f"g{c.groups}")
    if c.output_mask != (True, True, True):
        parts.append("mask" + "".join("1" if m else "0" for m in c.output_mask))
    if c.dynamic_batch:
        parts.append("dynbatch")
    parts.append(c.dtype)
    return "_".join(parts)


def case(
    input_shape: tuple[int, ...],
    out_channels: int,
    kernel: tuple[int, ...],
    *,
    stride: tuple[int, ...] = (),
    padding: tuple[int, ...] = (),
    dilation: tuple[int, ...] = (),
    transposed: bool = False,
    output_padding: tuple[int, ...] = (),
    groups: int = 1,
    output_mask: tuple[bool, bool, bool] = (True, True, True),
    dtype: str = "f32",
    bias: bool = True,
    dynamic_batch: bool = False,
    suffix: str = "",
    note: str = "",
) -> ConvBackwardCase:
    """Describe a case by its forward convolution; sizes default per dim to
    stride 1, padding 0, dilation 1, output_padding 0."""
    rank = len(kernel)
    stride, padding = stride or (1,) * rank, padding or (0,) * rank
    dilation, output_padding = dilation or (1,) * rank, output_padding or (0,) * rank
    n, channels, *spatial = input_shape
    if transposed:
        weight = (channels, out_channels // groups, *kernel)
        out = geometry.transposed_output_size_nd(spatial, kernel, stride, padding, dilation, output_padding)
    else:
        weight = (out_channels, channels // groups, *kernel)
        out = geometry.conv_output_size_nd(spatial, kernel, stride, padding, dilation)
    c = ConvBackwardCase(
        name="", input_shape=tuple(input_shape), weight_shape=weight,
        grad_output_shape=(n, out_channels, *out), stride=tuple(stride), padding=tuple(padding),
        dilation=tuple(dilation), transposed=transposed, output_padding=tuple(output_padding),
        groups=groups, output_mask=output_mask, dtype=dtype,
        bias_sizes=(out_channels,) if bias else None, dynamic_batch=dynamic_batch, note=note,
    )
    name = case_name(c) + (f"_{suffix}" if suffix else "")
    return ConvBackwardCase(**{**c.__dict__, "name": name})


def register(c: ConvBackwardCase) -> ConvBackwardCase:
    if c.name in CASES:
        raise ValueError(f"e2e case {c.name} is registered twice")
    CASES[c.name] = c
    return c
