"""model_zoo's and resnets' networks against torchvision's: the published parameter
counts with 1000 classes (a layout that differs anywhere in width, kernel,
groups or squeeze size changes them), the number of convolutions, and a
train-mode forward pass on CIFAR-sized images."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from iree_bwdconv.models import model_zoo
from iree_bwdconv.models.model_zoo import ZOO
from iree_bwdconv.models.resnets import RESNETS

NETWORKS = {**ZOO, **RESNETS}

# torchvision's `num_params` of each model's ImageNet weights.
TORCHVISION_PARAMS = {
    "resnet18": 11_689_512,
    "resnet50": 25_557_032,
    "regnet_x_400mf": 5_495_976,
    "mobilenet_v2": 3_504_872,
    "mobilenet_v3_small": 2_542_856,
    "mobilenet_v3_large": 5_483_032,
    "shufflenet_v2_x1_0": 2_278_604,
    "efficientnet_b0": 5_288_548,
}

# Counted from torchvision's code: stem, every block's convs (projections
# and squeeze-excitation 1x1s included), last 1x1.
CONVS = {
    "resnet18": 1 + 2 * 8 + 3,
    "resnet50": 1 + 3 * 16 + 4,
    "regnet_x_400mf": 1 + 3 * 22 + 4,
    "mobilenet_v2": 1 + 2 + 3 * 16 + 1,
    "mobilenet_v3_small": 1 + 11 + 11 + 10 + 2 * 9 + 1,
    "mobilenet_v3_large": 1 + 15 + 15 + 14 + 2 * 8 + 1,
    "shufflenet_v2_x1_0": 1 + 5 * 3 + 3 * 13 + 1,
    "efficientnet_b0": 1 + 4 + 5 * 15 + 1,
}


def test_zoo_names():
    assert set(NETWORKS) == set(TORCHVISION_PARAMS)


@pytest.mark.parametrize("name", sorted(TORCHVISION_PARAMS))
def test_parameter_count_is_torchvisions(name):
    model = NETWORKS[name](num_classes=1000)
    assert sum(p.numel() for p in model.parameters()) == TORCHVISION_PARAMS[name]


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_count(name):
    model = NETWORKS[name](num_classes=1000)
    assert sum(isinstance(m, nn.Conv2d) for m in model.modules()) == CONVS[name]


def test_regnet_x_400mf_stages():
    # torchvision's widths [24, 64, 152, 392] become [32, 64, 160, 400] once
    # made divisible by the group width.
    assert model_zoo.regnet_stages(22, 24, 24.48, 2.54, 16) == [(32, 1, 16), (64, 2, 16), (160, 7, 16),
                                                                 (400, 12, 16)]


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_train_forward_is_deterministic(name):
    """Shape (2, num_classes) in train mode, and with dropout and
    stochastic depth at their default 0 the same input gives the same output."""
    torch.manual_seed(0)
    model = NETWORKS[name](num_classes=10).train()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        first, second = model(x), model(x)
    assert first.shape == (2, 10)
    assert torch.isfinite(first).all()
    torch.testing.assert_close(first, second, rtol=0, atol=0)


def test_probabilities_can_be_set():
    v2 = model_zoo.mobilenet_v2(dropout=0.2)
    assert [m.p for m in v2.modules() if isinstance(m, nn.Dropout)] == [0.2]
    b0 = model_zoo.efficientnet_b0(dropout=0.2, stochastic_depth=0.2)
    drops = [m.p for m in b0.modules() if isinstance(m, model_zoo.StochasticDepth)]
    # torchvision's linear rule: block i of 16 drops with 0.2 * i / 16.
    assert drops == pytest.approx([0.2 * i / 16 for i in range(16)])
    assert all(m.p == 0.0 for m in model_zoo.efficientnet_b0().modules()
               if isinstance(m, (nn.Dropout, model_zoo.StochasticDepth)))
