"""linalg goes through our pattern; TOSA and StableHLO keep torch-mlir's
decomposition of convolution_backward (the op is not backend-legal there)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import iree_bwdconv
import iree_bwdconv.patterns as patterns
from iree_bwdconv import lowering
from iree_bwdconv.errors import LoweringError
from iree_bwdconv.options import LoweringOptions


class ConvBackward2D(torch.nn.Module):
    def __init__(self, transposed: bool = False) -> None:
        super().__init__()
        self.transposed = transposed

    def forward(self, grad_output, input, weight):
        output_padding = [1, 1] if self.transposed else [0, 0]
        return torch.ops.aten.convolution_backward(
            grad_output, input, weight, [4], [2, 2], [1, 1], [1, 1], self.transposed,
            output_padding, 1, [True, True, True])


def plain_2d():
    return torch.randn(2, 4, 4, 4), torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)


@pytest.mark.parametrize("backend, marker", [("tosa", "tosa.transpose_conv2d"), ("stablehlo", "stablehlo.convolution")])
def test_other_backends_use_torch_mlirs_decomposition(backend, marker):
    text = iree_bwdconv.lower(ConvBackward2D(), *plain_2d(), backend=backend)
    assert marker in text
    assert "torch." not in text and "linalg.generic" not in text


def test_linalg_backend_uses_our_pattern(monkeypatch):
    calls = []

    def spying(pattern):
        """`pattern`, noting each op it rewrites (the plan picks which one does)."""
        def spy(op, rewriter, *, options):
            reason = pattern.rewrite(op, rewriter, options=options)
            if reason is None:
                calls.append(op.name)
            return reason

        return dataclasses.replace(pattern, rewrite=spy)

    monkeypatch.setattr(patterns, "REGISTRY", tuple(spying(pattern) for pattern in patterns.REGISTRY))
    text = iree_bwdconv.lower(ConvBackward2D(), *plain_2d())
    assert calls == ["torch.aten.convolution_backward"]
    # Our form: the grad_weight im2col matrix [(n, o), (c, k)] of this shape,
    # which torch-mlir's own lowering never builds.
    assert "tensor<32x27xf32>" in text and "linalg.generic" in text


def test_linalg_refuses_rather_than_falling_back(monkeypatch):
    """Without our patterns the op must not reach torch-mlir's own lowering."""
    monkeypatch.setattr(patterns, "REGISTRY", ())
    with pytest.raises(LoweringError, match="convolution_backward"):
        iree_bwdconv.lower(ConvBackward2D(), *plain_2d())


def test_declined_op_reports_why():
    raw = lowering.import_module(ConvBackward2D(), *plain_2d())
    lowering.to_torch_backend(raw, "linalg")
    module = lowering.parse_torch_mlir(str(raw).replace("f32", "f64"))
    with pytest.raises(LoweringError, match=r"grad_output\.dtype='f64': supported dtypes are f32, f16, bf16"):
        lowering.rewrite_convolution_backward(module, LoweringOptions())


def test_transposed_lowers_on_linalg():
    dy, x, w = torch.randn(2, 4, 8, 8), torch.randn(2, 3, 4, 4), torch.randn(3, 4, 3, 3)
    text = iree_bwdconv.lower(ConvBackward2D(transposed=True), dy, x, w)
    assert "linalg.generic" in text and "torch." not in text


def test_unknown_backend_is_named():
    with pytest.raises(ValueError, match="backend='onnx'"):
        iree_bwdconv.lower(ConvBackward2D(), *plain_2d(), backend="onnx")
