"""grad_weight of a 1x1 kernel on GPU targets: the input's pixels gathered
channels-last per image, multiplied with grad_output as it is, in partial
sums of whole images.

    dw[f, c] = sum_{n, p} dy[n, f, p] * rows[n, p, c]

`rows[n, p, c] = x[n, c, o*s]` is a transpose of the input (with the
stride's subsampling folded into its reads); grad_output is read in place,
[f, p] per image. Both operands are then a plain matmul's, [m, k] and
[k, n]: the layout in which IREE 3.13's CUDA code computed every f16 1x1
weight gradient right on the H100, where the contraction over dy[n, f, p]
and x[n, c, p] (both read along p) was wrong on every one. The im2col form
it replaces copied grad_output into [f, (n, p)] as well, the larger of the
two copies on layers with more output channels than inputs
(docs/performance.md, "Weight gradients on GPUs by dtype").

Positions are zero-padded to a multiple of POSITION_MULTIPLE: where the
reduction's length was not a multiple of the MMA's 16, IREE padded its
tiles and read past the positions instead of zeros (NaN on 7 of the 9
layers checked whose positions are not a multiple of 16; right on every
one padded). The padding and the
transpose are copies, which cost more than they save on layers with little
work per element copied (`applies`).
"""

from __future__ import annotations

import math

from torch_mlir import ir

from . import contraction_forms as forms
from . import geometry, targets
from . import linalg_builders as lb
from .linalg_builders import PARALLEL, REDUCTION
from .options import LoweringOptions
from .spec import ConvBackwardSpec

POSITION_MULTIPLE = 16
# Multiply-adds per element copied, f*c / (f + c), below which a layer keeps
# the im2col form. On the H100, f16/bf16 layers whose positions need
# padding ran slower at 43 (c64 k128 14x14 at n8: 0.105 ms against 0.096),
# level at 256 and 341, faster at 299 and up (c448 k896: 1.84 against 2.93);
# unpadded ones level or faster from 43 up. f32: faster at 171 and 299
# (c256 k512 28x28: 0.49 against 2.20), level from 256 up, slower at 51 and
# 85 (c64 k256 56x56: 0.86 against 0.39).
MIN_PADDED_INTENSITY = 256
F32_MIN_INTENSITY = 128
# IREE 3.13's CUDA code for this contraction reads grad_output's channels
# in whole tiles, past the last channel: into the next image's channels,
# and for the last image past the end of grad_output. Where the output
# channels were not a multiple of the tile (160, 224, 279, 288, 333, 2016
# against a tile of 64; 3 to 7 images; 72 to 208 input channels; f16 and
# bf16) the H100 stopped with an illegal address and the call never
# returned; with one image of slack after grad_output, or its channels
# padded to 64, it ran. im2col ran on all of them (docs/performance.md,
# "Random layers on the H100"). The tile is 64 on smaller layers and 128
# on larger ones: 1344 output channels at n8 c1024 40x44, tiled by 128,
# never returned either ("The weight rows' tiles"). So grad_output read in
# place takes a multiple of 128 channels, or exactly 64, which IREE cannot
# tile by more. Where its positions are padded it is copied anyway, and
# the copy gains zero channels up to a multiple of 128 (`padded_channels`)
# where that adds at most MAX_CHANNEL_PADDING of them.
OUT_CHANNEL_MULTIPLE = 128
MAX_CHANNEL_PADDING = 1 / 8


def padded_positions(spec: ConvBackwardSpec) -> int:
    """Zero positions appended to each image's to reach POSITION_MULTIPLE."""
    return -math.prod(spec.output_spatial) % POSITION_MULTIPLE


def padded_channels(spec: ConvBackwardSpec) -> int:
    """Zero output channels appended to grad_output's copy, up to a multiple
    of OUT_CHANNEL_MULTIPLE; none where grad_output is read in place (no
    positions padded)."""
    return -spec.out_channels % OUT_CHANNEL_MULTIPLE if padded_positions(spec) else 0


def intensity(spec: ConvBackwardSpec) -> float:
    """Multiply-adds per element of the two operands' copies."""
    f, c = spec.out_channels, spec.in_channels
    return f * c / (f + c)


def applies(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """A GPU target, an ungrouped, untransposed 1x1 kernel with a static
    batch and a multiple of OUT_CHANNEL_MULTIPLE output channels (or 64)
    where grad_output is read in place, at most MAX_CHANNEL_PADDING more
    where it is copied, unless `_one_strided_dim_unpadded`; in f32 with at
    least F32_MIN_INTENSITY, in f16/bf16 where the positions need padding
    with at least MIN_PADDED_INTENSITY."""
    if options.target == "cpu" or any(k != 1 for k in spec.kernel):
        return False
    if spec.groups != 1 or spec.transposed or spec.batch is None or _one_strided_dim_unpadded(spec):
        return False
    in_place = not padded_positions(spec)
    if in_place and spec.out_channels % OUT_CHANNEL_MULTIPLE and spec.out_channels != 64:
        return False
    if padded_channels(spec) > spec.out_channels * MAX_CHANNEL_PADDING:
        return False
    if not targets.half_precision_on_gpu(options.target, spec.dtype):
        return intensity(spec) >= F32_MIN_INTENSITY
    return not padded_positions(spec) or intensity(spec) >= MIN_PADDED_INTENSITY


def _one_strided_dim_unpadded(spec: ConvBackwardSpec) -> bool:
    """Positions along one dim only, strided, and a multiple of
    POSITION_MULTIPLE (so not padded): IREE 3.13 did not compile this
    form's contraction for CUDA or gfx942 ("failed to pack reduction
    dimensions for partial reduction"; 1-D at stride 2 and 3 with 48, 64
    and 96 positions, f16, bf16 and f32, and 1 x 64 at stride (1, 2)).
    With the positions padded, over two dims, or unstrided it compiled,
    and im2col compiled on all of them (docs/performance.md, "Random
    layers compiled for GPUs")."""
    long_dims = [axis for axis, size in enumerate(spec.output_spatial) if size > 1]
    return len(long_dims) == 1 and spec.stride[long_dims[0]] > 1 and padded_positions(spec) == 0


def grad_weight(spec: ConvBackwardSpec, grad_output: ir.Value, input_: ir.Value, split: int) -> ir.Value:
    """dw[f, c, k...] in f32, in `split` partial sums over runs of whole
    images (a divisor of the batch), summed. Any ungrouped, untransposed
    kernel: the rows are then the im2col gather's, [n, p, (c, k)] (measured
    as a benchmark form; the lowering takes it for 1x1 kernels only)."""
    r = spec.spatial_rank
    window = (spec.input_spatial, spec.output_spatial, spec.kernel, spec.stride, spec.padding, spec.dilation)
    low, high = geometry.window_padding_nd(*window)
    x = lb.expand_dim(lb.pad_or_crop(input_, [0, 0, *low], [0, 0, *high]), 1, (1, spec.in_channels))
    rows = forms.im2col(x, spec.output_spatial, spec.kernel, spec.stride, spec.dilation)  # [1, n, o.., c, k..]
    rows = forms.collapse_range(lb.collapse_dims(forms.collapse_range(rows, 2 + r, 3 + 2 * r), 0), 1, 1 + r)
    dy = forms.collapse_range(grad_output, 2, 2 + r)  # [n, f, p]
    extra, extra_channels = padded_positions(spec), padded_channels(spec)
    dy, rows = lb.pad(dy, [0] * 3, [0, extra_channels, extra]), lb.pad(rows, [0] * 3, [0, extra, 0])
    images = spec.batch // split
    dy, rows = lb.expand_dim(dy, 0, (split, images)), lb.expand_dim(rows, 0, (split, images))
    s, f, col, n, p = lb.dims(5)
    maps = [lb.affine_map(5, [s, n, f, p]), lb.affine_map(5, [s, n, p, col]), lb.affine_map(5, [s, f, col])]
    columns = spec.in_channels * math.prod(spec.kernel)
    out_sizes = [spec.out_channels + extra_channels, columns]
    init = lb.zeros([split, *out_sizes], lb.element_type("f32"))
    parts = lb.contraction(dy, rows, init, maps, [PARALLEL] * 3 + [REDUCTION] * 2)
    summed = lb.extract(forms.sum_partials(parts, out_sizes), [0, 0], [spec.out_channels, columns])
    return forms.expand_trailing(summed, [spec.in_channels, *spec.kernel])
