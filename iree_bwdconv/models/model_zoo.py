"""torchvision's small ImageNet CNNs, rebuilt in plain torch.nn.

Each network here has the layout of the torchvision model of the same name,
layer by layer: channel counts, kernels, strides, groups, paddings,
activations, batch-norm eps and momentum, residual rules, channel shuffle
and squeeze-excitation blocks, so that training them needs neither
torchvision nor downloaded weights. Their parameter counts with 1000
classes are torchvision's (tests/test_model_zoo.py). Weights keep PyTorch's
default initialisation, and state-dict names are not torchvision's.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Callable, Optional

import torch
from torch import nn

# Dropout and stochastic depth keep torchvision's places but default to
# probability 0: a compiled run draws other random masks than an eager run,
# so with them on the two runs' outputs and gradients could not be compared.
# The `dropout` and `stochastic_depth` keywords set them (torchvision: 0.2).

Norm = Callable[[int], nn.Module]
Activation = Callable[..., nn.Module]


def make_divisible(value: float, divisor: int = 8) -> int:
    """torchvision's `_make_divisible`: the nearest multiple of divisor, at
    least divisor, and never more than 10% below value."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def conv_norm_act(c_in: int, c_out: int, kernel: int = 3, stride: int = 1, groups: int = 1, *,
                  norm: Norm = nn.BatchNorm2d, act: Optional[Activation] = nn.ReLU) -> nn.Sequential:
    """torchvision's Conv2dNormActivation as these models use it: a bias-free
    convolution (the norm has the bias) padded to keep the size at stride 1,
    the norm, and an optional in-place activation."""
    layers: list[nn.Module] = [
        nn.Conv2d(c_in, c_out, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
        norm(c_out),
    ]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


class SqueezeExcitation(nn.Module):
    """Scales each channel by a gate computed from the mean of all channels
    (torchvision.ops.SqueezeExcitation)."""

    def __init__(self, channels: int, squeeze: int, act: Callable[[], nn.Module] = nn.ReLU,
                 gate: Callable[[], nn.Module] = nn.Sigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.activation = act()
        self.scale_activation = gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return scale * x


class StochasticDepth(nn.Module):
    """torchvision's StochasticDepth in "row" mode: in training, zeroes each
    sample's residual branch with probability p and scales the rest by
    1 / (1 - p)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"drop probability must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        survival = 1.0 - self.p
        noise = x.new_empty((x.shape[0],) + (1,) * (x.dim() - 1)).bernoulli_(survival)
        if survival > 0.0:
            noise.div_(survival)
        return x * noise


class Classifier(nn.Module):
    """Features, global average pool, then a head on the pooled vector."""

    def __init__(self, features: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# ---------------------------------------------------------------- RegNet


def regnet_stages(depth: int, w_0: int, w_a: float, w_m: float, group_width: int,
                  bottleneck: float = 1.0) -> list[tuple[int, int, int]]:
    """(width, depth, group width) of each stage, by torchvision's
    `BlockParams.from_init_params` and `_adjust_widths_groups_compatibilty`."""
    if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
        raise ValueError("invalid RegNet settings")
    # In float32 tensors as torchvision computes them: the rounding of a
    # width near a half-step must come out the same.
    widths_cont = torch.arange(depth) * w_a + w_0
    capacity = torch.round(torch.log(widths_cont / w_0) / math.log(w_m))
    block_widths = (torch.round(w_0 * torch.pow(w_m, capacity) / 8) * 8).int().tolist()
    stages: list[tuple[int, int, int]] = []
    for width, run in itertools.groupby(block_widths):  # a stage: a run of one width
        w_bot = int(width * bottleneck)
        group = min(group_width, w_bot)
        stages.append((int(make_divisible(w_bot, group) / bottleneck), len(list(run)), group))
    return stages


class ResBottleneckBlock(nn.Module):
    """RegNet's block: relu(proj(x) + f(x)), f a 1x1, grouped 3x3, 1x1
    bottleneck, proj a strided 1x1 where the shape changes, else identity."""

    def __init__(self, c_in: int, c_out: int, stride: int, group_width: int, bottleneck: float = 1.0) -> None:
        super().__init__()
        w_b = int(round(c_out * bottleneck))
        self.proj = conv_norm_act(c_in, c_out, 1, stride, act=None) if c_in != c_out or stride != 1 else None
        self.f = nn.Sequential(
            conv_norm_act(c_in, w_b, 1),
            conv_norm_act(w_b, w_b, 3, stride, groups=w_b // group_width),
            conv_norm_act(w_b, c_out, 1, act=None),
        )
        self.activation = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x if self.proj is None else self.proj(x)
        return self.activation(shortcut + self.f(x))


def regnet_x_400mf(num_classes: int = 10) -> nn.Module:
    """RegNetX-400MF: depth 22, w_0 24, w_a 24.48, w_m 2.54, group width 16,
    a 32-channel stem, no squeeze-excitation."""
    layers: list[nn.Module] = [conv_norm_act(3, 32, 3, 2)]
    c_in = 32
    for width, depth, group in regnet_stages(22, 24, 24.48, 2.54, 16):
        layers += [ResBottleneckBlock(c_in if i == 0 else width, width, 2 if i == 0 else 1, group)
                   for i in range(depth)]
        c_in = width
    return Classifier(nn.Sequential(*layers), nn.Linear(c_in, num_classes))


# ------------------------------------------- MobileNet V2 and V3, EfficientNet


class InvertedResidual(nn.Module):
    """MobileNetV2/V3's and EfficientNet's block: a 1x1 expansion (where
    the width changes), a depthwise conv, squeeze-excitation (if any) and a
    linear 1x1 projection, plus the input where stride and width allow."""

    def __init__(self, c_in: int, c_exp: int, c_out: int, kernel: int, stride: int, *, act: Activation,
                 norm: Norm, se: Optional[nn.Module] = None, drop: Optional[float] = None) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        if c_exp != c_in:
            layers.append(conv_norm_act(c_in, c_exp, 1, norm=norm, act=act))
        layers.append(conv_norm_act(c_exp, c_exp, kernel, stride, groups=c_exp, norm=norm, act=act))
        if se is not None:
            layers.append(se)
        layers.append(conv_norm_act(c_exp, c_out, 1, norm=norm, act=None))
        self.block = nn.Sequential(*layers)
        self.use_res_connect = stride == 1 and c_in == c_out
        # EfficientNet's blocks only: MobileNet's have no stochastic depth.
        self.stochastic_depth = StochasticDepth(drop) if drop is not None else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.block(x)
        if not self.use_res_connect:
            return out
        if self.stochastic_depth is not None:
            out = self.stochastic_depth(out)
        return out + x


# (expand ratio t, channels c, repeats n, first stride s)
_MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                 (6, 320, 1, 1))


def mobilenet_v2(num_classes: int = 10, *, dropout: float = 0.0) -> nn.Module:
    """MobileNetV2 at width 1.0: ReLU6, a 32-channel stem, a 1280-channel
    head; torchvision's dropout is 0.2."""
    layers: list[nn.Module] = [conv_norm_act(3, 32, 3, 2, act=nn.ReLU6)]
    c_in = 32
    for t, c, n, s in _MOBILENET_V2:
        for i in range(n):
            layers.append(InvertedResidual(c_in, int(round(c_in * t)), c, 3, s if i == 0 else 1,
                                           act=nn.ReLU6, norm=nn.BatchNorm2d))
            c_in = c
    layers.append(conv_norm_act(c_in, 1280, 1, act=nn.ReLU6))
    return Classifier(nn.Sequential(*layers), nn.Sequential(nn.Dropout(dropout), nn.Linear(1280, num_classes)))


# (input, kernel, expanded, output, squeeze-excitation, hard-swish, stride)
_MOBILENET_V3_LARGE = (
    (16, 3, 16, 16, False, False, 1), (16, 3, 64, 24, False, False, 2), (24, 3, 72, 24, False, False, 1),
    (24, 5, 72, 40, True, False, 2), (40, 5, 120, 40, True, False, 1), (40, 5, 120, 40, True, False, 1),
    (40, 3, 240, 80, False, True, 2), (80, 3, 200, 80, False, True, 1), (80, 3, 184, 80, False, True, 1),
    (80, 3, 184, 80, False, True, 1), (80, 3, 480, 112, True, True, 1), (112, 3, 672, 112, True, True, 1),
    (112, 5, 672, 160, True, True, 2), (160, 5, 960, 160, True, True, 1), (160, 5, 960, 160, True, True, 1),
)
_MOBILENET_V3_SMALL = (
    (16, 3, 16, 16, True, False, 2), (16, 3, 72, 24, False, False, 2), (24, 3, 88, 24, False, False, 1),
    (24, 5, 96, 40, True, True, 2), (40, 5, 240, 40, True, True, 1), (40, 5, 240, 40, True, True, 1),
    (40, 5, 120, 48, True, True, 1), (48, 5, 144, 48, True, True, 1), (48, 5, 288, 96, True, True, 2),
    (96, 5, 576, 96, True, True, 1), (96, 5, 576, 96, True, True, 1),
)


def _mobilenet_v3(setting: tuple[tuple[int, int, int, int, bool, bool, int], ...], last_channel: int,
                  num_classes: int, dropout: float) -> nn.Module:
    """MobileNetV3 at width 1.0 (every width in the tables is already a
    multiple of 8), without the dilated or reduced tail."""
    norm = functools.partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
    layers: list[nn.Module] = [conv_norm_act(3, setting[0][0], 3, 2, norm=norm, act=nn.Hardswish)]
    for c_in, kernel, c_exp, c_out, use_se, use_hs, stride in setting:
        se = SqueezeExcitation(c_exp, make_divisible(c_exp // 4), gate=nn.Hardsigmoid) if use_se else None
        layers.append(InvertedResidual(c_in, c_exp, c_out, kernel, stride,
                                       act=nn.Hardswish if use_hs else nn.ReLU, norm=norm, se=se))
    c_last = setting[-1][3]
    layers.append(conv_norm_act(c_last, 6 * c_last, 1, norm=norm, act=nn.Hardswish))
    head = nn.Sequential(
        nn.Linear(6 * c_last, last_channel),
        nn.Hardswish(inplace=True),
        nn.Dropout(dropout, inplace=True),
        nn.Linear(last_channel, num_classes),
    )
    return Classifier(nn.Sequential(*layers), head)


def mobilenet_v3_large(num_classes: int = 10, *, dropout: float = 0.0) -> nn.Module:
    """MobileNetV3-Large; torchvision's dropout is 0.2."""
    return _mobilenet_v3(_MOBILENET_V3_LARGE, 1280, num_classes, dropout)


def mobilenet_v3_small(num_classes: int = 10, *, dropout: float = 0.0) -> nn.Module:
    """MobileNetV3-Small; torchvision's dropout is 0.2."""
    return _mobilenet_v3(_MOBILENET_V3_SMALL, 1024, num_classes, dropout)


# (expand ratio, kernel, first stride, input, output, layers) of EfficientNet-B0
_EFFICIENTNET_B0 = ((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
                    (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1))


def efficientnet_b0(num_classes: int = 10, *, dropout: float = 0.0, stochastic_depth: float = 0.0) -> nn.Module:
    """EfficientNet-B0 (width and depth 1.0): SiLU, squeeze to a quarter of
    each block's input, stochastic depth rising linearly with the block's
    index; torchvision's dropout and stochastic depth are both 0.2."""
    total = sum(setting[-1] for setting in _EFFICIENTNET_B0)
    layers: list[nn.Module] = [conv_norm_act(3, _EFFICIENTNET_B0[0][3], 3, 2, act=nn.SiLU)]
    index = 0
    for expand, kernel, stride, c_in, c_out, repeats in _EFFICIENTNET_B0:
        stage: list[nn.Module] = []
        for i in range(repeats):
            c_block = c_in if i == 0 else c_out
            c_exp = make_divisible(c_block * expand)
            se = SqueezeExcitation(c_exp, max(1, c_block // 4), act=functools.partial(nn.SiLU, inplace=True))
            stage.append(InvertedResidual(c_block, c_exp, c_out, kernel, stride if i == 0 else 1, act=nn.SiLU,
                                          norm=nn.BatchNorm2d, se=se, drop=stochastic_depth * index / total))
            index += 1
        layers.append(nn.Sequential(*stage))
    c_last = _EFFICIENTNET_B0[-1][4]
    layers.append(conv_norm_act(c_last, 4 * c_last, 1, act=nn.SiLU))
    head = nn.Sequential(nn.Dropout(dropout, inplace=True), nn.Linear(4 * c_last, num_classes))
    return Classifier(nn.Sequential(*layers), head)


# ----------------------------------------------------------- ShuffleNetV2


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    """Interleaves the channels of `groups` equal groups."""
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).contiguous().view(n, c, h, w)


class ShuffleBlock(nn.Module):
    """ShuffleNetV2's unit. At stride 1 half the channels pass untouched and
    the other half go through 1x1, depthwise 3x3, 1x1; at stride 2 the whole
    input goes through both that branch and a depthwise 3x3, 1x1 branch.
    The halves are concatenated and shuffled."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        half = c_out // 2
        if stride == 1 and c_in != 2 * half:
            raise ValueError(f"at stride 1 the input needs {2 * half} channels, has {c_in}")
        self.stride = stride
        self.branch1 = nn.Sequential()
        if stride > 1:
            self.branch1 = nn.Sequential(*conv_norm_act(c_in, c_in, 3, stride, groups=c_in, act=None),
                                         *conv_norm_act(c_in, half, 1))
        self.branch2 = nn.Sequential(
            *conv_norm_act(c_in if stride > 1 else half, half, 1),
            *conv_norm_act(half, half, 3, stride, groups=half, act=None),
            *conv_norm_act(half, half, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            kept, x = x.chunk(2, dim=1)
        else:
            kept = self.branch1(x)
        return channel_shuffle(torch.cat((kept, self.branch2(x)), dim=1), 2)


def shufflenet_v2_x1_0(num_classes: int = 10) -> nn.Module:
    """ShuffleNetV2 1.0x: a 24-channel stem and max pool, stages of 4, 8
    and 4 units at 116, 232 and 464 channels, a 1024-channel 1x1 head."""
    layers: list[nn.Module] = [conv_norm_act(3, 24, 3, 2), nn.MaxPool2d(3, 2, 1)]
    c_in = 24
    for repeats, c_out in zip((4, 8, 4), (116, 232, 464)):
        layers.append(nn.Sequential(*(ShuffleBlock(c_in if i == 0 else c_out, c_out, 2 if i == 0 else 1)
                                      for i in range(repeats))))
        c_in = c_out
    layers.append(conv_norm_act(c_in, 1024, 1))
    return Classifier(nn.Sequential(*layers), nn.Linear(1024, num_classes))


ZOO: dict[str, Callable[..., nn.Module]] = {
    "regnet_x_400mf": regnet_x_400mf,
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "mobilenet_v3_large": mobilenet_v3_large,
    "shufflenet_v2_x1_0": shufflenet_v2_x1_0,
    "efficientnet_b0": efficientnet_b0,
}
