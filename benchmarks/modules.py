"""IR for a benchmark shape: the raw torch-dialect export (what IREE's own
torch input lowers: the upstream path) and our linalg lowering."""

from __future__ import annotations

import functools

import torch

from iree_bwdconv import lowering
from iree_bwdconv.functional import ConvolutionBackward, spec_of

from .shapes import Shape

GRAD_INPUT_ONLY = (True, False, False)
ALL_GRADS = (True, True, True)


def arguments(shape: Shape, mask: tuple[bool, bool, bool]) -> tuple:
    return ([shape.k] if mask[2] else None, [shape.stride] * 2, [shape.padding] * 2, [1, 1], False,
            [0, 0], shape.groups, list(mask))


def example_tensors(shape: Shape) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dtype = shape.torch_dtype
    return (torch.zeros(shape.n, shape.k, *shape.out_hw, dtype=dtype),
            torch.zeros(shape.n, shape.c, *shape.hw, dtype=dtype),
            torch.zeros(shape.k, shape.c // shape.groups, shape.kernel, shape.kernel, dtype=dtype))


@functools.lru_cache(maxsize=None)
def raw_torch(shape: Shape, mask: tuple[bool, bool, bool]) -> str:
    tensors = example_tensors(shape)
    args = arguments(shape, mask)
    module = ConvolutionBackward(spec_of(*tensors, *args), args[0])
    return str(lowering.import_module(module, *tensors))


@functools.lru_cache(maxsize=None)
def ours(shape: Shape, mask: tuple[bool, bool, bool], target: str = "cpu") -> str:
    return lowering.lower_torch(lowering.parse_torch_mlir(raw_torch(shape, mask)), target=target)


UPSTREAM_FLAGS = ("--iree-input-type=torch",)
