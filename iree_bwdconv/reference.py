"""The numerical oracle: eager PyTorch in float64, and an error bound that
scales with each gradient's reduction length.

For a result rounded to a format with unit roundoff u_out and sums of L
products accumulated in f32 (u_acc), |got - ref| <= u_out*|ref| +
L*u_acc*|ref|_abs per element, where |ref|_abs is the same gradient of the
absolute values of the inputs (the sum of the terms' magnitudes). Below
the normal range a rounding's error is absolute, up to half the smallest
subnormal (eta): each rounding adds eta_out or eta_acc. We allow twice
that. The inputs of the reference are the very f16/bf16 tensors the
lowering saw, widened exactly to float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import torch

GRADIENTS = ("grad_input", "grad_weight", "grad_bias")
_ACCUMULATOR_UNIT_ROUNDOFF = torch.finfo(torch.float32).eps / 2


def unit_roundoff(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps / 2


def underflow_error(dtype: torch.dtype) -> float:
    """Half the smallest subnormal: the most a rounding to `dtype` can be
    off below its normal range, where u*|x| no longer bounds it."""
    info = torch.finfo(dtype)
    return info.smallest_normal * info.eps / 2


_ACCUMULATOR_UNDERFLOW = underflow_error(torch.float32)


def eager_float64(grad_output, input, weight, *arguments) -> tuple[Optional[torch.Tensor], ...]:
    return torch.ops.aten.convolution_backward(
        grad_output.double(), input.double(), weight.double(), *arguments
    )


def reduction_lengths(
    grad_output_shape: Sequence[int], input_shape: Sequence[int], weight_shape: Sequence[int],
    transposed: bool, groups: int,
) -> tuple[int, int, int]:
    """Terms summed per element of grad_input, grad_weight and grad_bias."""
    per_group = weight_shape[1] if transposed else weight_shape[0] // groups
    taps = math.prod(weight_shape[2:])
    batch = grad_output_shape[0]
    windows = input_shape[2:] if transposed else grad_output_shape[2:]
    return per_group * taps, batch * math.prod(windows), batch * math.prod(grad_output_shape[2:])


def error_bound(reference: torch.Tensor, magnitude: torch.Tensor, length: int, dtype: torch.dtype) -> torch.Tensor:
    """The oracle's bound on |got - reference| for a sum of `length` terms
    whose magnitudes sum to `magnitude`: a rounding to `dtype`, and one in
    the f32 accumulator per term."""
    return 2 * (unit_roundoff(dtype) * reference.abs() + underflow_error(dtype)
                + length * (_ACCUMULATOR_UNIT_ROUNDOFF * magnitude + _ACCUMULATOR_UNDERFLOW))


@dataclass(frozen=True)
class Comparison:
    gradient: str
    max_error: float
    max_excess: float  # max of error - bound; <= 0 passes
    max_reference: float

    @property
    def ok(self) -> bool:
        return self.max_excess <= 0.0


def compare(
    got: Sequence[Optional[torch.Tensor]],
    grad_output: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    arguments: Sequence,
) -> list[Comparison]:
    """Compare `got` (aten's argument order) with eager float64, per gradient.

    A gradient that output_mask leaves out must come back as None.
    """
    reference = eager_float64(grad_output, input, weight, *arguments)
    magnitudes = eager_float64(grad_output.abs(), input.abs(), weight.abs(), *arguments)
    transposed, groups, mask = arguments[4], arguments[6], arguments[7]
    lengths = reduction_lengths(grad_output.shape, input.shape, weight.shape, transposed, groups)
    results = []
    for name, wanted, value, ref, mag, length in zip(GRADIENTS, mask, got, reference, magnitudes, lengths):
        if not wanted:
            if value is not None:
                raise AssertionError(f"{name} was not asked for but came back")
            continue
        if value is None or tuple(value.shape) != tuple(ref.shape) or value.dtype != grad_output.dtype:
            raise AssertionError(f"{name}: expected {tuple(ref.shape)} {grad_output.dtype}, got "
                                 f"{None if value is None else (tuple(value.shape), value.dtype)}")
        error = (value.double() - ref).abs()
        bound = error_bound(ref, mag, length, grad_output.dtype)
        results.append(Comparison(
            gradient=name,
            max_error=float(error.max()) if error.numel() else 0.0,
            max_excess=float((error - bound).max()) if error.numel() else 0.0,
            max_reference=float(ref.abs().max()) if ref.numel() else 0.0,
        ))
    return results
