"""An encoder-decoder for dense prediction whose decoder upsamples by the
three strided transposed convolutions that decoders are built of: FPN's
and segmentation heads' k3 s2 p1 op1, DCGAN's k4 s2 p1 and U-Net's k2 s2.
Its training step runs each of them forward and backward, which is what
`benchmarks.train_gpu` times against the zero-inserting forward."""

from __future__ import annotations

import torch
from torch import nn

from iree_bwdconv.models.model_zoo import conv_norm_act

# (kernel, padding, output_padding) of each stride-2 upsampling, in order.
UPSAMPLINGS = ((3, 1, 1), (4, 1, 0), (2, 0, 0))


def upsample_norm_act(c_in: int, c_out: int, kernel: int, padding: int, output_padding: int) -> nn.Sequential:
    """A stride-2 transposed convolution that doubles the image side, then
    batch norm (which holds the bias) and ReLU."""
    return nn.Sequential(
        nn.ConvTranspose2d(c_in, c_out, kernel, stride=2, padding=padding, output_padding=output_padding,
                           bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


class Decoder(nn.Module):
    """Three stride-2 3x3 convolutions down to an eighth of the image side
    at `8 * width` channels, the three upsamplings back to the full side at
    `width` channels, and a 1x1 head of class scores per pixel. The image
    side must be a multiple of 8."""

    dense = True  # per-pixel outputs: training gives it per-pixel labels

    def __init__(self, num_classes: int = 10, width: int = 32) -> None:
        super().__init__()
        widths = [width * 2**level for level in range(len(UPSAMPLINGS) + 1)]  # width .. 8 * width
        encoder_widths = [3, *widths[1:]]
        self.encode = nn.Sequential(*(conv_norm_act(a, b, 3, 2) for a, b in zip(encoder_widths, encoder_widths[1:])))
        ups = zip(reversed(widths[1:]), reversed(widths[:-1]), UPSAMPLINGS)
        self.decode = nn.Sequential(*(upsample_norm_act(a, b, *geometry) for a, b, geometry in ups))
        self.head = nn.Conv2d(widths[0], num_classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.decode(self.encode(x)))


def decoder(num_classes: int = 10) -> nn.Module:
    return Decoder(num_classes)
