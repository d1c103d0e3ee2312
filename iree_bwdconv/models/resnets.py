"""torchvision's ResNet-18 and ResNet-50, rebuilt in plain torch.nn.

The layout is torchvision's layer by layer (its "v1.5": a bottleneck
block strides in its 3x3 convolution, not its first 1x1), so that the
parameter counts with 1000 classes are torchvision's
(tests/test_model_zoo.py). Weights keep PyTorch's default initialisation;
state-dict names are not torchvision's.
"""

from __future__ import annotations

from typing import Union

import torch
from torch import nn

from iree_bwdconv.models.model_zoo import Classifier, conv_norm_act


def projection(c_in: int, c_out: int, stride: int) -> Union[nn.Sequential, nn.Identity]:
    """The shortcut: a 1x1 convolution and batch norm where the block
    changes width or resolution, else the identity."""
    if stride == 1 and c_in == c_out:
        return nn.Identity()
    return conv_norm_act(c_in, c_out, 1, stride, act=None)


class BasicBlock(nn.Module):
    """relu(shortcut(x) + f(x)), f two 3x3 convolutions, the first strided."""

    expansion = 1

    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        self.main = nn.Sequential(conv_norm_act(c_in, width, 3, stride), conv_norm_act(width, width, 3, act=None))
        self.shortcut = projection(c_in, width, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.main(x) + self.shortcut(x))


class Bottleneck(nn.Module):
    """relu(shortcut(x) + f(x)), f a 1x1, a strided 3x3 and a 1x1 that
    widens fourfold."""

    expansion = 4

    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        c_out = width * self.expansion
        self.main = nn.Sequential(
            conv_norm_act(c_in, width, 1),
            conv_norm_act(width, width, 3, stride),
            conv_norm_act(width, c_out, 1, act=None),
        )
        self.shortcut = projection(c_in, c_out, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.main(x) + self.shortcut(x))


def resnet(block: type[Union[BasicBlock, Bottleneck]], depths: tuple[int, ...], num_classes: int) -> nn.Module:
    """A 7x7 stride-2 stem and 3x3 stride-2 max pool, then four stages at
    widths 64-512, each but the first halving the resolution in its first
    block."""
    layers: list[nn.Module] = [conv_norm_act(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
    c_in = 64
    for stage, (width, depth) in enumerate(zip((64, 128, 256, 512), depths)):
        for index in range(depth):
            stride = 2 if stage > 0 and index == 0 else 1
            layers.append(block(c_in, width, stride))
            c_in = width * block.expansion
    return Classifier(nn.Sequential(*layers), nn.Linear(c_in, num_classes))


def resnet18(num_classes: int = 10) -> nn.Module:
    return resnet(BasicBlock, (2, 2, 2, 2), num_classes)


def resnet50(num_classes: int = 10) -> nn.Module:
    return resnet(Bottleneck, (3, 4, 6, 3), num_classes)


RESNETS = {"resnet18": resnet18, "resnet50": resnet50}
