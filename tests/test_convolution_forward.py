"""The forward pattern on the CPU (`iree_bwdconv/patterns/convolution_forward.py`):
grouped convolutions split by group, ungrouped ones as im2col + matmul
where the rule says so, everything else left to torch-mlir; every form
checked against eager PyTorch in float64."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import iree_bwdconv
from iree_bwdconv.run.runtime import LoadedModule

# (module, input shape, contraction expected): every form the pattern emits.
CASES = [
    (nn.Conv2d(8, 12, 3, 2, 1, groups=4), (2, 8, 9, 10), "linalg.matmul"),  # per group, strided: im2col
    (nn.Conv2d(8, 12, 3, 1, 2, dilation=2, groups=2, bias=False), (3, 8, 9, 10), "linalg.generic"),
    (nn.Conv1d(6, 9, 3, 1, 1, groups=3), (2, 6, 11), "linalg.generic"),
    (nn.Conv3d(4, 4, (3, 1, 3), (1, 2, 1), (1, 0, 1), groups=2), (2, 4, 5, 6, 4), "linalg.matmul"),
    (nn.Conv2d(3, 16, 7, 2, 3), (2, 3, 19, 20), "linalg.matmul"),  # a stem: strided, odd sizes
    (nn.Conv2d(8, 16, 1, 2, bias=False), (2, 8, 9, 9), "linalg.matmul"),  # a 1x1 projection
    (nn.Conv2d(128, 8, 3, 1, 1), (1, 128, 5, 6), "linalg.matmul"),  # wide stride 1
    (nn.Conv1d(4, 6, 3, 2, 2, dilation=2), (2, 4, 13), "linalg.matmul"),
]


class Forward(nn.Module):
    def __init__(self, conv: nn.Module) -> None:
        super().__init__()
        self.conv = conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def check_cpu(conv: nn.Module, x: torch.Tensor, **lower_args) -> str:
    text = iree_bwdconv.lower(Forward(conv), x, target="cpu", **lower_args)
    out = LoadedModule(iree_bwdconv.compile(text, target="cpu"))(x)[0]
    torch.testing.assert_close(out.double(), Forward(conv.double())(x.double()), rtol=1e-5, atol=1e-4)
    return text


@pytest.mark.parametrize("conv, shape, contraction", CASES, ids=[f"{c}-{s}" for c, s, _ in CASES])
def test_forward_forms_are_exact(conv, shape, contraction):
    torch.manual_seed(0)
    text = check_cpu(conv, torch.randn(*shape))
    assert "linalg.conv_" not in text  # torch-mlir's named convolution did not run
    assert contraction in text
    if conv.groups > 1:
        assert text.count("tensor.insert_slice") == conv.groups  # one per group, side by side


@pytest.mark.parametrize("conv, named", [
    (nn.Conv2d(8, 8, 3, 1, 1, groups=8), "depthwise"),  # IREE recognizes depthwise
    (nn.Conv2d(16, 32, 3, 1, 1), "linalg.conv_2d_nchw_fchw"),  # narrow stride 1: the named op is this form
])
def test_declined_forward_keeps_torch_mlirs_form(conv, named):
    text = check_cpu(conv, torch.randn(2, conv.in_channels, 9, 10))
    assert named in text and "linalg.matmul" not in text


def test_gpu_targets_keep_torch_mlirs_forms():
    text = iree_bwdconv.lower(Forward(nn.Conv2d(8, 12, 3, 2, 1, groups=4)), torch.randn(2, 8, 9, 10), target="cuda")
    assert "ngchw" in text and "tensor.insert_slice" not in text


@pytest.mark.parametrize("conv, taken", [
    (nn.Conv2d(8, 16, 1, 2), True),                  # a strided 1x1 projection in f32
    (nn.Conv3d(4, 6, 1, (1, 2, 1)), True),
    (nn.Conv2d(8, 16, 1, 1), False),                 # stride 1: the named convolution was faster
    (nn.Conv2d(8, 16, 1, 2, groups=2), False),       # grouped: not measured
])
def test_gpu_targets_take_im2col_for_strided_f32_one_tap_kernels(conv, taken):
    """On GPU targets an ungrouped strided 1x1 kernel in f32 is an im2col
    gather and the named matmul; lowered for CUDA, compiled for and run on
    the CPU, against eager float64."""
    torch.manual_seed(0)
    x = torch.randn(2, conv.in_channels, *[9] * (conv.weight.dim() - 2))
    text = iree_bwdconv.lower(Forward(conv), x, target="cuda")
    assert ("linalg.matmul" in text) == taken and ("linalg.conv_" in text) != taken
    out = LoadedModule(iree_bwdconv.compile(text, target="cpu"))(x)[0]
    torch.testing.assert_close(out.double(), Forward(conv.double())(x.double()), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("conv, rows, form", [
    (nn.Conv2d(8, 16, (3, 1)), 3, "linalg.matmul"),  # one output row, a kernel one wide: a 1x1 kernel to IREE
    (nn.Conv2d(8, 16, (3, 1), groups=2), 3, "f32"),  # grouped: one grouped convolution in f32
    (nn.Conv2d(8, 16, 1, 2, groups=4), 9, "f32"),    # a grouped 1x1 kernel is one too
    (nn.Conv2d(8, 8, 1, groups=8), 9, "f32"),        # and a depthwise one
    (nn.Conv2d(8, 16, (3, 1)), 4, "linalg.conv_"),   # two output rows: the window slides
    (nn.Conv2d(8, 16, (3, 3)), 3, "linalg.conv_"),   # and here along the width
])
def test_gpu_targets_avoid_torch_mlirs_half_convolutions_that_slide_along_no_dim(conv, rows, form):
    """torch-mlir's named convolution of a 3x1 kernel over three rows came
    out of the H100 105% off in f16, grouped ones (1x1 among them) 117%-135%;
    the im2col matmul and the grouped convolution in f32 were right. Lowered
    for CUDA, compiled for and run on the CPU, against eager float64."""
    torch.manual_seed(0)
    conv = conv.half()
    x = torch.randn(2, conv.in_channels, rows, 9).half()
    text = iree_bwdconv.lower(Forward(conv), x, target="cuda")
    contractions = [line for line in text.splitlines() if "linalg.conv_" in line or "linalg.matmul" in line
                    or ("linalg.generic" in line and "reduction" in line)]
    assert len(contractions) == 1, contractions
    if form == "f32":  # a generic over f32 operands
        assert "linalg.generic" in contractions[0] and "xf16" not in contractions[0], contractions
    else:
        assert form in contractions[0], contractions
    out = LoadedModule(iree_bwdconv.compile(text, target="cpu"))(x)[0]
    torch.testing.assert_close(out.double(), Forward(conv.double())(x.double()), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("conv", [nn.Conv2d(8, 12, 3, 2, 1, groups=4), nn.Conv2d(8, 12, 3, 2, 1)])
def test_forward_with_a_dynamic_batch(conv):
    batch = torch.export.Dim("batch", min=2, max=64)
    text = iree_bwdconv.lower(Forward(conv), torch.randn(2, 8, 9, 10), dynamic_shapes=({0: batch},), target="cpu")
    assert "tensor<?x12x5x5xf32>" in text
    module = LoadedModule(iree_bwdconv.compile(text, target="cpu"))
    for n in (3, 5):
        x = torch.randn(n, 8, 9, 10)
        torch.testing.assert_close(module(x)[0].double(), Forward(conv.double())(x.double()), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["cpu", "gfx942", "cuda"])
@pytest.mark.parametrize("make", [lambda: nn.Conv3d(4, 4, 3, 1, 1, groups=4),
                                  lambda: nn.Conv3d(3, 6, (3, 1, 2), 2, (1, 0, 1), groups=3)],
                         ids=["k3_s1", "k3x1x2_s2_multiplier2"])
def test_depthwise_3d_forward_which_torch_mlir_cannot_lower_is_ours(make, target):
    """torch-mlir leaves a depthwise Conv3d unlowered on every target; it
    is one grouped convolution of ours, right on the CPU and compiled for
    the GPU targets."""
    torch.manual_seed(0)
    conv = make()
    x = torch.randn(2, conv.in_channels, 5, 4, 6)
    if target == "cpu":
        check_cpu(conv, x)
    else:
        assert iree_bwdconv.compile(iree_bwdconv.lower(Forward(conv), x, target=target), target=target)
