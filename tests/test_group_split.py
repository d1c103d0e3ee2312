"""Grouped convolutions on the CPU, group by group (`group_split`): the
forward pattern and the backward split give eager PyTorch's numbers, and
they split exactly what they say they split."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import iree_bwdconv
from iree_bwdconv import group_split, targets
from iree_bwdconv.runtime import LoadedModule
from iree_bwdconv.spec import make_spec

# (module, input shape): the cases the forward pattern splits.
SPLIT = [
    (nn.Conv2d(8, 12, 3, 2, 1, groups=4), (2, 8, 9, 10)),
    (nn.Conv2d(8, 12, 3, 1, 2, dilation=2, groups=2, bias=False), (3, 8, 9, 10)),
    (nn.Conv1d(6, 9, 3, 1, 1, groups=3), (2, 6, 11)),
    (nn.Conv3d(4, 4, (3, 1, 3), (1, 2, 1), (1, 0, 1), groups=2), (2, 4, 5, 6, 4)),
]


class Forward(nn.Module):
    def __init__(self, conv: nn.Module) -> None:
        super().__init__()
        self.conv = conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def run_cpu(module: nn.Module, x: torch.Tensor) -> tuple[str, torch.Tensor]:
    text = iree_bwdconv.lower(module, x, target="cpu")
    return text, LoadedModule(iree_bwdconv.compile(text, target="cpu"))(x)[0]


@pytest.mark.parametrize("conv, shape", SPLIT, ids=lambda v: str(v) if isinstance(v, tuple) else type(v).__name__)
def test_grouped_forward_is_split_and_exact(conv, shape):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    text, out = run_cpu(Forward(conv), x)
    assert "ngchw" not in text and "ngcw" not in text and "ngcdhw" not in text
    assert text.count("tensor.insert_slice") == conv.groups  # one per group, side by side
    reference = Forward(conv.double())(x.double())
    torch.testing.assert_close(out.double(), reference, rtol=1e-5, atol=1e-5)


def test_depthwise_forward_keeps_torch_mlirs_form():
    conv = nn.Conv2d(8, 8, 3, 1, 1, groups=8)
    x = torch.randn(2, 8, 9, 10)
    text, out = run_cpu(Forward(conv), x)
    assert "depthwise" in text and "tensor.insert_slice" not in text
    torch.testing.assert_close(out.double(), Forward(conv.double())(x.double()), rtol=1e-5, atol=1e-5)


def test_gpu_targets_keep_the_grouped_forms():
    conv = nn.Conv2d(8, 12, 3, 2, 1, groups=4)
    text = iree_bwdconv.lower(Forward(conv), torch.randn(2, 8, 9, 10), target="cuda")
    assert "tensor.insert_slice" not in text


@pytest.mark.parametrize("groups, channels, target, expected", [
    (4, 8, "cpu", True), (2, 4, "cpu", True), (8, 8, "cpu", False), (1, 8, "cpu", False), (4, 8, "cuda", False),
])
def test_applies(groups, channels, target, expected):
    with targets.lowering_for(target):
        assert group_split.applies(groups, channels) is expected


# (grad_output, input, weight) shapes, stride 2, 4 groups: C=8, F=12.
SPEC_SHAPES = {
    False: ((2, 12, 4, 4), (2, 8, 8, 8), (12, 2, 3, 3)),  # weight [F, C/G, k]
    True: ((2, 12, 8, 8), (2, 8, 4, 4), (8, 3, 3, 3)),  # weight [C, F/G, k]
}


@pytest.mark.parametrize("transposed", [False, True])
def test_ungrouped_spec_is_one_groups_share(transposed):
    grad_output, input_, weight = SPEC_SHAPES[transposed]
    spec = make_spec(grad_output, input_, weight, {"weight": "f32"}, None, [2, 2], [1, 1], [1, 1], transposed,
                     [1, 1] if transposed else [0, 0], 4, [True, True, False])
    one = group_split.ungrouped_spec(spec)
    assert one.groups == 1
    assert (one.in_channels, one.out_channels) == (2, 3)
    assert one.weight_shape == (weight[0] // 4, *weight[1:])
    assert (one.input_spatial, one.output_spatial) == (spec.input_spatial, spec.output_spatial)


def test_grouped_forward_with_a_dynamic_batch():
    conv = nn.Conv2d(8, 12, 3, 2, 1, groups=4)
    batch = torch.export.Dim("batch", min=2, max=64)
    text = iree_bwdconv.lower(Forward(conv), torch.randn(2, 8, 9, 10), dynamic_shapes=({0: batch},), target="cpu")
    assert "tensor<?x12x5x5xf32>" in text and text.count("tensor.insert_slice") == 4
    module = LoadedModule(iree_bwdconv.compile(text, target="cpu"))
    for n in (3, 5):
        x = torch.randn(n, 8, 9, 10)
        torch.testing.assert_close(module(x)[0].double(), Forward(conv.double())(x.double()), rtol=1e-5, atol=1e-5)
