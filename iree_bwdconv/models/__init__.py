"""The CNNs `iree-bwdconv train` and the training benchmarks use (ours,
torchvision's layouts from `resnets` and `model_zoo`, a U-Net and an
encoder-decoder), and
the synthetic image dataset they learn from."""

from __future__ import annotations

import torch
from torch import nn

from iree_bwdconv.models.decoder import decoder
from iree_bwdconv.models.model_zoo import ZOO
from iree_bwdconv.models.resnets import RESNETS
from iree_bwdconv.models.unet import unet


def conv_bn(c_in: int, c_out: int, kernel: int, stride: int = 1, groups: int = 1, relu: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(c_out),
    ]
    if relu:
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DownsampleBlock(nn.Module):
    """A residual block that halves the resolution: a 3x3 stride-2 conv and a
    grouped 3x3 conv, beside a 1x1 stride-2 projection shortcut."""

    def __init__(self, c_in: int, c_out: int, groups: int = 1) -> None:
        super().__init__()
        self.main = nn.Sequential(conv_bn(c_in, c_out, 3, 2), conv_bn(c_out, c_out, 3, groups=groups, relu=False))
        self.shortcut = conv_bn(c_in, c_out, 1, 2, relu=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.main(x) + self.shortcut(x))


class DemoCNN(nn.Module):
    """Every kind of convolution whose gradients we lower: 3x3 stride 2,
    1x1 stride-2 projection, grouped, depthwise stride 2, pointwise."""

    def __init__(self, num_classes: int = 10, width: int = 16) -> None:
        super().__init__()
        self.stem = conv_bn(3, width, 3, 2)
        self.block = DownsampleBlock(width, 2 * width, groups=4)
        self.depthwise = conv_bn(2 * width, 2 * width, 3, 2, groups=2 * width)
        self.pointwise = conv_bn(2 * width, 4 * width, 1)
        self.head = nn.Linear(4 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pointwise(self.depthwise(self.block(self.stem(x))))
        return self.head(x.mean(dim=(2, 3)))


MODELS = {"demo": DemoCNN, **RESNETS, **ZOO, "unet": unet, "decoder": decoder}


class SyntheticImages:
    """Batches of images whose class sets the orientation and frequency of a
    stripe pattern, under noise: learnable, and made on the fly from a seed."""

    def __init__(self, num_classes: int = 10, size: int = 32, seed: int = 0) -> None:
        self.num_classes, self.size = num_classes, size
        self.generator = torch.Generator().manual_seed(seed)

    def batch(self, batch_size: int, dense: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Images and their labels; `dense`: a label per pixel, the image's
        class where its stripes are bright and 0 elsewhere (for models that
        segment)."""
        g = self.generator
        labels = torch.randint(0, self.num_classes, (batch_size,), generator=g)
        angle = labels.float() * (torch.pi / self.num_classes)
        frequency = 0.2 + 0.05 * (labels % 3).float()
        grid = torch.arange(self.size, dtype=torch.float32)
        y, x = torch.meshgrid(grid, grid, indexing="ij")
        phase = torch.rand(batch_size, generator=g) * 2 * torch.pi
        along = x * torch.cos(angle)[:, None, None] + y * torch.sin(angle)[:, None, None]
        stripes = torch.sin(frequency[:, None, None] * along + phase[:, None, None])
        colour = torch.rand(batch_size, 3, 1, 1, generator=g) + 0.5
        noise = 0.3 * torch.randn(batch_size, 3, self.size, self.size, generator=g)
        images = stripes[:, None] * colour + noise
        if dense:
            return images, torch.where(stripes > 0, labels[:, None, None], 0)
        return images, labels
