"""A U-Net (Ronneberger et al., 2015) with padded convolutions and batch
norm, upsampling by `ConvTranspose2d` (kernel 2, stride 2): the decoder
whose transposed convolutions the stride-phase lowering runs without
zeros, forward and backward."""

from __future__ import annotations

import torch
from torch import nn

from iree_bwdconv.models.model_zoo import conv_norm_act


def double_conv(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(conv_norm_act(c_in, c_out, 3), conv_norm_act(c_out, c_out, 3))


class UNet(nn.Module):
    """`depth` halvings by max pool on the way down, each undone by a
    transposed convolution on the way up whose output is concatenated with
    the encoder's at that resolution. The output is a map of class scores
    per pixel, so the image side must be a multiple of 2**depth."""

    dense = True  # per-pixel outputs: training gives it per-pixel labels

    def __init__(self, num_classes: int = 10, width: int = 64, depth: int = 4) -> None:
        super().__init__()
        widths = [width * 2**level for level in range(depth + 1)]
        self.down = nn.ModuleList([double_conv(3, widths[0])])
        self.down.extend(double_conv(a, b) for a, b in zip(widths, widths[1:]))
        self.pool = nn.MaxPool2d(2)
        self.upsample = nn.ModuleList(nn.ConvTranspose2d(b, a, 2, stride=2) for a, b in zip(widths, widths[1:]))
        self.up = nn.ModuleList(double_conv(2 * a, a) for a in widths[:-1])
        self.head = nn.Conv2d(widths[0], num_classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for level, block in enumerate(self.down):
            x = block(x if level == 0 else self.pool(x))
            skips.append(x)
        skips.pop()
        for upsample, block in zip(reversed(self.upsample), reversed(self.up)):
            x = block(torch.cat([skips.pop(), upsample(x)], dim=1))
        return self.head(x)


def unet(num_classes: int = 10) -> nn.Module:
    return UNet(num_classes)
