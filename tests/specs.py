"""Configurations for the rule tests, built as the functional API builds them."""

from __future__ import annotations

import torch

from iree_bwdconv import functional, geometry


def spec_nd(batch: int, channels: int, out_channels: int, sizes: tuple[int, ...], kernel: tuple[int, ...],
            stride: tuple[int, ...], padding: tuple[int, ...], dilation: tuple[int, ...] | None = None,
            groups: int = 1, dtype: torch.dtype = torch.float16, mask: tuple[bool, bool, bool] = (True, False, False)):
    """A configuration of any rank, traced on zeros."""
    dilation = dilation or (1,) * len(sizes)
    out = [geometry.conv_output_size(*dim) for dim in zip(sizes, kernel, stride, padding, dilation)]
    dy, x = torch.zeros(batch, out_channels, *out, dtype=dtype), torch.zeros(batch, channels, *sizes, dtype=dtype)
    w = torch.zeros(out_channels, channels // groups, *kernel, dtype=dtype)
    return functional.spec_of(dy, x, w, None, list(stride), list(padding), list(dilation), False, [0] * len(sizes),
                              groups, list(mask))
