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
(docs/performance-journal.md, "Weight gradients on GPUs by dtype").

Positions are zero-padded to a multiple of 16 (`Tuning.rows_position_multiple`): where the
reduction's length was not a multiple of the MMA's 16, IREE padded its
tiles and read past the positions instead of zeros (NaN on 7 of the 9
layers checked whose positions are not a multiple of 16; right on every
one padded). The padding and the
transpose are copies, which cost more than they save on layers with little
work per element copied (`plan.grad_weight.rows_apply`).
"""

from __future__ import annotations

import math

from torch_mlir import ir

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv import geometry
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.builders.linalg_builders import PARALLEL, REDUCTION
from iree_bwdconv.spec import ConvBackwardSpec


def grad_weight(spec: ConvBackwardSpec, grad_output: ir.Value, input_: ir.Value, split: int,
                padding: tuple[int, int]) -> ir.Value:
    """dw[f, c, k...] in f32, in `split` partial sums over runs of whole
    images (a divisor of the batch), summed, with `padding` (positions,
    output channels) of zeros appended (`plan.grad_weight.rows_padding`). Any ungrouped, untransposed
    kernel: the rows are then the im2col gather's, [n, p, (c, k)] (measured
    as a benchmark form; the lowering takes it for 1x1 kernels only)."""
    r = spec.spatial_rank
    window = (spec.input_spatial, spec.output_spatial, spec.kernel, spec.stride, spec.padding, spec.dilation)
    low, high = geometry.window_padding_nd(*window)
    x = lb.expand_dim(lb.pad_or_crop(input_, [0, 0, *low], [0, 0, *high]), 1, (1, spec.in_channels))
    rows = forms.im2col(x, spec.output_spatial, spec.kernel, spec.stride, spec.dilation)  # [1, n, o.., c, k..]
    rows = forms.collapse_range(lb.collapse_dims(forms.collapse_range(rows, 2 + r, 3 + 2 * r), 0), 1, 1 + r)
    dy = forms.collapse_range(grad_output, 2, 2 + r)  # [n, f, p]
    extra, extra_channels = padding
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
