"""max_pool2d's backward as a gather by stride phase, in aten ops.

torch's own decomposition (the one torch-mlir's table carries) scatters
each output gradient to the position its index names: a scatter_add, which
IREE runs as one serial dispatch. On an H200 that dispatch was 665 of
ResNet-18's 723 ms per training step (batch 32, 128x128), and four of them
5.9 of a U-Net's 6.5 s.

Here every input position gathers instead. Pooling is a depthwise window
with stride s, padding p and dilation d, so its backward has the phases of
a convolution's data gradient (`geometry.grad_input_phases`): the positions
of residue class r along a dim are reached by a fixed set of taps, each
from a fixed shift of the output grid. A tap's contribution is the output
gradient where the window's maximum sat at that tap (its index names that
input position), else zero. Each phase is a sum of shifted slices, and the
phases interleave into the input's shape: elementwise work of the output's
size per tap, no scatter, nothing done on inserted zeros. A phase that no
tap reaches is zeros.
"""

from __future__ import annotations

from typing import Sequence

import torch

from iree_bwdconv.geometry import Phase, grad_input_phases, position_grid_length

aten = torch.ops.aten


def _pair(values: Sequence[int], default: int) -> tuple[int, int]:
    values = list(values) or [default]
    return (values[0], values[-1])


def _pad_to(x: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    return aten.constant_pad_nd(x, [0, cols - x.shape[-1], 0, rows - x.shape[-2]], 0.0)


def _window(x: torch.Tensor, start_h: int, start_w: int, rows: int, cols: int) -> torch.Tensor:
    return x[..., start_h:start_h + rows, start_w:start_w + cols]


def _phase_sum(taps: dict[tuple[int, int], torch.Tensor], ph: Phase, pw: Phase, margins: tuple[int, int],
               like: torch.Tensor) -> torch.Tensor:
    """The gradient at the positions of phase pair (ph, pw): over each pair
    of taps that reaches them, the tap's masked gradient shifted into place."""
    if ph.is_empty or pw.is_empty:
        return like.new_zeros(like.shape[:-2] + (max(ph.count, 0), max(pw.count, 0)))
    total = None
    for jh, kh in enumerate(ph.tap_indices):
        for jw, kw in enumerate(pw.tap_indices):
            part = _window(taps[kh, kw], margins[0] + ph.dy_start + jh * ph.tap_dilation,
                           margins[1] + pw.dy_start + jw * pw.tap_dilation, ph.count, pw.count)
            total = part if total is None else total + part
    return total


def max_pool2d_with_indices_backward(grad_output: torch.Tensor, self: torch.Tensor, kernel_size: Sequence[int],
                                     stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                                     ceil_mode: bool, indices: torch.Tensor) -> torch.Tensor:
    if not all(isinstance(n, int) for n in (*self.shape, *grad_output.shape)):
        return NotImplemented  # symbolic sizes: torch's own decomposition
    (kh_, kw_) = _pair(kernel_size, 1)
    (sh, sw) = _pair(stride, 1) if list(stride) else (kh_, kw_)  # no stride: the kernel's
    (ph_, pw_), (dh, dw) = _pair(padding, 0), _pair(dilation, 1)
    height, width = self.shape[-2:]
    out_h, out_w = grad_output.shape[-2:]
    rows, cols = grad_input_phases(height, kh_, sh, ph_, dh), grad_input_phases(width, kw_, sw, pw_, dw)
    # Margins that keep every phase's window inside the padded output grid.
    lo_h = max([0] + [-p.dy_start for p in rows if not p.is_empty])
    lo_w = max([0] + [-p.dy_start for p in cols if not p.is_empty])
    hi_h = max([0] + [p.dy_start + p.dy_length - out_h for p in rows if not p.is_empty])
    hi_w = max([0] + [p.dy_start + p.dy_length - out_w for p in cols if not p.is_empty])
    wide = torch.float32 if grad_output.dtype in (torch.float16, torch.bfloat16) else grad_output.dtype
    grad = aten.constant_pad_nd(grad_output.to(wide), [lo_w, hi_w, lo_h, hi_h], 0.0)
    index = aten.constant_pad_nd(indices, [lo_w, hi_w, lo_h, hi_h], -1)
    # The input position each tap of each (padded) output window reads.
    oh = torch.arange(-lo_h, out_h + hi_h, device=indices.device, dtype=indices.dtype)
    ow = torch.arange(-lo_w, out_w + hi_w, device=indices.device, dtype=indices.dtype)
    taps = {}
    for kh in {k for p in rows for k in p.tap_indices}:
        for kw in {k for p in cols for k in p.tap_indices}:
            read = (oh * sh - ph_ + kh * dh)[:, None] * width + (ow * sw - pw_ + kw * dw)[None, :]
            taps[kh, kw] = torch.where(index == read, grad, 0.0)
    grid_h, grid_w = position_grid_length(height, sh), position_grid_length(width, sw)
    by_residue_h = sorted(rows, key=lambda p: p.position_residue)
    by_residue_w = sorted(cols, key=lambda p: p.position_residue)
    # [..., q_h, rho_h, q_w, rho_w] holds position (q_h*s_h + rho_h, q_w*s_w + rho_w).
    grid = torch.stack([
        torch.stack([_pad_to(_phase_sum(taps, p_h, p_w, (lo_h, lo_w), grad), grid_h, grid_w)
                     for p_w in by_residue_w], dim=-1)
        for p_h in by_residue_h], dim=-3)
    shape = grid.shape[:-4] + (grid_h * sh, grid_w * sw)
    return grid.reshape(shape)[..., :height, :width].to(grad_output.dtype)
