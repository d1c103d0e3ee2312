"""GPU targets' im2col gather for grad_weight reads its source unpadded,
zero where a read falls in the padding (`contraction_forms._padded_gather`):
no pad of the source in the IR, and the weight gradient (lowered for CUDA,
compiled for and run on the CPU) against eager float64."""

from __future__ import annotations

import pytest
import torch

from iree_bwdconv import functional, reference
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.run import runtime
from iree_bwdconv.plan import grad_weight as gw


def _tensors(n, c, f, size, kernel, stride, padding, dilation, groups, dtype, transposed=False, seed=0):
    generator = torch.Generator().manual_seed(seed)
    r = len(size)
    if transposed:  # x is the transposed convolution's input, dy its output
        out = [(i - 1) * stride - 2 * padding + dilation * (kernel - 1) + 1 for i in size]
        w_shape = [c, f // groups, *[kernel] * r]
    else:
        out = [(i + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1 for i in size]
        w_shape = [f, c // groups, *[kernel] * r]
    dy = torch.randn(n, f, *out, generator=generator).to(dtype)
    x = torch.randn(n, c, *size, generator=generator).to(dtype)
    w = torch.randn(*w_shape, generator=generator).to(dtype)
    arguments = (None, [stride] * r, [padding] * r, [dilation] * r, transposed, [0] * r, groups,
                 [False, True, False])
    return dy, x, w, arguments


def _lowered_for_cuda(dy, x, w, arguments) -> str:
    functional.clear_cache()
    try:
        return functional.lowered(functional.spec_of(dy, x, w, *arguments), target="cuda")
    finally:
        functional.clear_cache()


CASES = [
    # n, c, f, size, kernel, stride, padding, dilation, groups
    (2, 16, 16, (13, 13), 3, 2, 1, 1, 4),     # grouped, odd size
    (2, 8, 12, (10, 11), 3, 1, 1, 1, 1),      # stride 1
    (3, 6, 8, (12, 12), 5, 2, 2, 1, 2),
    (2, 4, 8, (9, 9), 3, 2, 3, 1, 1),         # padding 3: reads that are all padding
    (2, 8, 8, (14, 14), 3, 2, 2, 2, 1),       # dilation 2
    (2, 8, 8, (16,), 3, 3, 1, 1, 8),          # 1-D, depthwise
    (1, 4, 4, (6, 7, 5), 3, 2, 1, 1, 1),      # 3-D
    (2, 4, 8, (11, 11), 3, 2, 0, 1, 1),       # no padding, and a tail no read reaches
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", CASES)
def test_right_on_the_cpu(case, dtype, monkeypatch):
    monkeypatch.setattr(gw, "by_im2col", lambda spec, options, tuning: (True, "forced"))
    dy, x, w, arguments = _tensors(*case, dtype)
    mlir = _lowered_for_cuda(dy, x, w, arguments)
    assert "tensor.pad %arg1" not in mlir  # the input is read unpadded
    grad_weight = runtime.run(pipeline.iree_compile(mlir, "cpu"), [dy, x, w])[0]
    (comparison,) = reference.compare([None, grad_weight, None], dy, x, w, arguments)
    assert comparison.ok, comparison


@pytest.mark.parametrize("groups", [1, 2])
def test_right_for_transposed_convolutions(groups, monkeypatch):
    monkeypatch.setattr(gw, "by_im2col", lambda spec, options, tuning: (True, "forced"))
    dy, x, w, arguments = _tensors(2, 8, 6, (7, 6), 3, 2, 1, 1, groups, torch.float32, transposed=True, seed=1)
    mlir = _lowered_for_cuda(dy, x, w, arguments)
    assert "tensor.pad %arg0" not in mlir  # there the taps read grad_output, unpadded
    grad_weight = runtime.run(pipeline.iree_compile(mlir, "cpu"), [dy, x, w])[0]
    (comparison,) = reference.compare([None, grad_weight, None], dy, x, w, arguments)
    assert comparison.ok, comparison


def test_the_cpu_keeps_its_padded_source():
    """The CPU's gather reads a padded copy (the gather with the padding
    in its body is a GPU form, unmeasured on the CPU)."""
    dy, x, w, arguments = _tensors(2, 64, 64, (14, 14), 3, 1, 1, 1, 1, torch.float32)
    mlir = functional.lowered(functional.spec_of(dy, x, w, *arguments), target="cpu")
    assert "tensor.pad %arg1" in mlir


def test_right_with_a_dynamic_batch(monkeypatch):
    monkeypatch.setattr(gw, "by_im2col", lambda spec, options, tuning: (True, "forced"))
    dy, x, w, arguments = _tensors(3, 8, 8, (11, 11), 3, 2, 1, 1, 2, torch.float32)
    functional.clear_cache()
    try:
        mlir = functional.lowered(functional.spec_of(dy, x, w, *arguments, dynamic_batch=True), target="cuda")
    finally:
        functional.clear_cache()
    assert "?x" in mlir and "tensor.pad %arg1" not in mlir
    compiled = pipeline.iree_compile(mlir, "cpu")
    for n in (3, 5):
        dy, x, w, arguments = _tensors(n, 8, 8, (11, 11), 3, 2, 1, 1, 2, torch.float32, seed=n)
        grad_weight = runtime.run(compiled, [dy, x, w])[0]
        (comparison,) = reference.compare([None, grad_weight, None], dy, x, w, arguments)
        assert comparison.ok, (n, comparison)
