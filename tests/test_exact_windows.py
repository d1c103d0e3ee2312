"""`iree_bwdconv.compiler.exact_windows`: inputs read by a window with one output
position cropped to the span read, where IREE 3.13 would refuse them
(`iree_faults.UNIT_WINDOW_FOLD`)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import iree_bwdconv
from iree_bwdconv.compiler import exact_windows, iree_faults, pipeline
from iree_bwdconv.run import runtime


@pytest.mark.parametrize("terms, constant, extents, span", [
    ({0: 2, 1: 1}, 0, [1, 3], 3),      # o*2 + k, one output: k alone, spans 3
    ({0: 2, 1: 1}, 0, [2, 3], None),   # two outputs: nothing folds to k alone
    ({0: 2, 1: 2}, 0, [1, 3], None),   # dilated: k*2 is no loop alone
    ({0: 1, 1: 1}, 0, [4, 1], 4),      # a 1-wide window: o alone, spans the outputs
    ({0: 2, 1: 1}, 1, [1, 3], 4),      # an offset shifts the span's end
    ({0: 2, 1: 1}, 0, [1, None], None),  # an extent unknown
])
def test_span_after_folding(terms, constant, extents, span):
    assert exact_windows.span_after_folding(terms, constant, extents) == span


def test_named_convolution_reads_cropped():
    text = iree_faults.UNIT_WINDOW_FOLD.reproducer()
    cropped = exact_windows.crop(text)
    assert "tensor.extract_slice %arg0[0, 0, 0, 0] [1, 1, 3, 3] [1, 1, 1, 1]" in cropped


class Module(torch.nn.Module):
    def __init__(self, f) -> None:
        super().__init__()
        self.f = f

    def forward(self, *args):
        return self.f(*args)


# Windows with one output position over inputs they read only in part:
# each refused by iree-compile without the crop.
LAYERS = {
    "max_pool_k3_s2_4x4": (lambda x: F.max_pool2d(x, 3, 2), [(2, 3, 4, 4)]),
    "avg_pool_k2_s2_3x3": (lambda x: F.avg_pool2d(x, 2, 2), [(2, 3, 3, 3)]),
    "depthwise_k3_s2_3x4": (lambda x, w: F.conv2d(x, w, stride=2, groups=4), [(2, 4, 3, 4), (8, 1, 3, 3)]),
    "depthwise_k5_s2_p2_2x2": (lambda x, w: F.conv2d(x, w, stride=2, padding=2, groups=4), [(2, 4, 2, 2), (4, 1, 5, 5)]),
    "dense_k3_s2_3x4": (lambda x, w: F.conv2d(x, w, stride=2), [(2, 4, 3, 4), (6, 4, 3, 3)]),
    "grouped_k3_s2_3x4": (lambda x, w: F.conv2d(x, w, stride=2, groups=2), [(2, 4, 3, 4), (4, 2, 3, 3)]),
    "conv1d_k3_s2_4": (lambda x, w: F.conv1d(x, w, stride=2), [(2, 4, 4), (4, 4, 3)]),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_unit_windows_compile_and_match_eager(name):
    f, shapes = LAYERS[name]
    generator = torch.Generator().manual_seed(0)
    args = [torch.randn(shape, generator=generator) for shape in shapes]
    text = iree_bwdconv.lower(Module(f), *args, target="cpu")
    with pytest.raises(iree_bwdconv.PipelineError, match="inferred input/output operand"):
        pipeline.iree_compile(text, "cpu", as_given=True)
    (got,) = runtime.run(pipeline.iree_compile(text, "cpu"), args, "cpu")
    expected = f(*(a.double() for a in args))
    assert (got.double() - expected).abs().max().item() <= 1e-5 * max(expected.abs().max().item(), 1.0)


@pytest.mark.parametrize("target", ["gfx942", "cuda"])
def test_unit_windows_compile_for_gpu_targets(target):
    f, shapes = LAYERS["depthwise_k3_s2_3x4"]
    args = [torch.randn(shape) for shape in shapes]
    assert pipeline.iree_compile(iree_bwdconv.lower(Module(f), *args, target=target), target)


def test_a_module_whose_windows_fit_comes_back_as_it_was():
    x, w = torch.randn(2, 4, 8, 8), torch.randn(4, 4, 3, 3)
    text = iree_bwdconv.lower(Module(lambda x, w: F.conv2d(x, w, stride=2, padding=1)), x, w, target="cpu")
    assert exact_windows.crop(text) is text


def test_a_generic_with_a_scalar_operand_is_cropped_too():
    """A scalar `ins` has a map of no results and no shape."""
    text = """
#window = affine_map<(d0, d1) -> (d0 * 2 + d1)>
#scalar = affine_map<(d0, d1) -> ()>
#out = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<4xf32>, %c: f32) -> tensor<1x3xf32> {
  %e = tensor.empty() : tensor<1x3xf32>
  %r = linalg.generic {indexing_maps = [#window, #scalar, #out], iterator_types = ["parallel", "parallel"]}
      ins(%x, %c : tensor<4xf32>, f32) outs(%e : tensor<1x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<1x3xf32>
  return %r : tensor<1x3xf32>
}"""
    assert "tensor.extract_slice %arg0[0] [3] [1] : tensor<4xf32> to tensor<3xf32>" in exact_windows.crop(text)
