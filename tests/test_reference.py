"""The oracle's error bound passes correct results and catches wrong ones."""

from __future__ import annotations

import pytest
import torch

from iree_bwdconv import reference

ARGS = ([4], [2, 2], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True])


def tensors(dtype):
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(s, generator=g).to(dtype) for s in ((2, 4, 4, 4), (2, 3, 8, 8), (4, 3, 3, 3)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_eager_in_the_same_dtype_is_within_bound(dtype):
    dy, x, w = tensors(dtype)
    got = torch.ops.aten.convolution_backward(dy.float(), x.float(), w.float(), *ARGS)
    got = tuple(g.to(dtype) for g in got)
    assert all(c.ok for c in reference.compare(got, dy, x, w, ARGS))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_a_one_percent_error_in_one_element_is_caught(dtype):
    dy, x, w = tensors(dtype)
    exact = reference.eager_float64(dy, x, w, *ARGS)
    got = [g.to(dtype) for g in exact]
    got[0] = got[0].clone()
    got[0].view(-1)[5] += 0.01 * float(exact[0].abs().max()) + 0.05
    results = reference.compare(got, dy, x, w, ARGS)
    assert [c.ok for c in results] == [False, True, True]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_correctly_rounded_subnormal_passes(dtype):
    """A 1x1 grouped gradient with one term per element: products in the
    subnormal range rounded once to dtype are right (their error is absolute
    there, up to half the smallest subnormal), one subnormal step more is not."""
    tiny = torch.finfo(dtype).smallest_normal
    dy = torch.full((1, 2, 1, 1), 0.37 * tiny ** 0.5).to(dtype)
    x = torch.zeros(1, 2, 1, 1, dtype=dtype)
    w = torch.full((2, 1, 1, 1), 0.11 * tiny ** 0.5).to(dtype)
    args = (None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2, [True, False, False])
    exact = reference.eager_float64(dy, x, w, *args)[0]
    rounded = exact.to(dtype)
    assert 0 < float(rounded.abs().max()) < tiny and float((rounded.double() - exact).abs().max()) > 0
    assert reference.compare([rounded, None, None], dy, x, w, args)[0].ok
    step = tiny * torch.finfo(dtype).eps
    off = (rounded.double() + 2 * step).to(dtype)
    assert not reference.compare([off, None, None], dy, x, w, args)[0].ok


def test_reduction_lengths():
    assert reference.reduction_lengths((2, 4, 4, 4), (2, 3, 8, 8), (4, 3, 3, 3), False, 1) == (36, 32, 32)
    # transposed: weight [C, F/G, K]; grad_weight sums over the input positions.
    assert reference.reduction_lengths((2, 6, 9), (2, 4, 4), (4, 3, 3), True, 2) == (9, 8, 18)
