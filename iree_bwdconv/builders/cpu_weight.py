"""The CPU's matmuls for a weight gradient whose im2col gather is laid
out columns-first (`plan.grad_weight.columns_first`: a deep reduction,
unstrided or with a narrow result): the gather, one (channel, tap) row over
every image and position, multiplied by grad_output channels-last and
split-K; where the gather would copy the windowed operand as it is (a 1x1
kernel, no padding, stride 1), that operand itself, image by image.

IREE 3.13's CPU code runs a matmul whose second operand is read along its
rows, [k, n] with n innermost, faster than one with both operands read along
the reduction; and on this project's 2-core CPU a matmul over a reduction
of a few thousand terms ran faster as partial sums over chunks of about a
thousand (docs/performance-journal.md, "The columns-first gather as the matmul's
first operand, split-K"). Sums are f32, as `gradients.ACCUMULATOR`.
"""

from __future__ import annotations

import math

from torch_mlir import ir

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.builders.linalg_builders import PARALLEL, REDUCTION
from iree_bwdconv.plan.grad_weight import cpu_chunks
from iree_bwdconv.plan.tuning import Tuning


def columns_first_matmul(plain: ir.Value, cols: ir.Value, out_sizes: list[int], tuning: Tuning) -> ir.Value:
    """out[(g,) row, col] = sum_t cols[(g,) col, t] * plain[n, (g,) row, o..]
    over t = (n, o..): the gather [(g,) col, t] times grad_output
    channels-last [(g,) t, row], split-K (`cpu_chunks`), then transposed to
    [(g,) row, col]."""
    r = ir.RankedTensorType(plain.type).rank - 3
    grouped = len(out_sizes) == 3
    channels_last = forms.collapse_range(forms.transpose(plain, [1, 0, *range(3, 3 + r), 2]), 1, 2 + r)
    if not grouped:  # [1, t, row] -> [t, row]
        channels_last = lb.collapse_dims(channels_last, 0)
    swapped = [*out_sizes[:-2], out_sizes[-1], out_sizes[-2]]
    split = cpu_chunks(ir.RankedTensorType(cols.type).shape[-1], tuning)
    if split > 1:
        acc = forms.split_matmul(cols, channels_last, swapped, split, multiple=1)
    else:
        acc = forms.matmul(cols, channels_last, lb.zeros(swapped, lb.element_type("f32")), named=True)
    lead = len(out_sizes) - 2
    return forms.transpose(acc, [*range(lead), lead + 1, lead])


def per_image_matmul(plain: ir.Value, windowed: ir.Value, out_sizes: list[int], tuning: Tuning) -> ir.Value:
    """out[(g,) row, col] = sum_{n,o} windowed[n, g, col, o..] * plain[n, g, row, o..]
    with no gather: partial sums over each image's positions in chunks s,
    part[n, s, g, col, row] = sum_j windowed[n, g, col, (s, j)] * plain_cl[n, g, (s, j), row]
    (plain channels-last, `cpu_chunks` of the positions), then the sum over
    (n, s) written [(g,) row, col]."""
    r = ir.RankedTensorType(plain.type).rank - 3
    images, groups, cols_per_group = ir.RankedTensorType(windowed.type).shape[:3]
    rows = ir.RankedTensorType(plain.type).shape[2]
    positions = math.prod(ir.RankedTensorType(windowed.type).shape[3:])
    split = cpu_chunks(positions, tuning)
    chunk = (split, positions // split)
    lhs = lb.expand_dim(forms.collapse_range(windowed, 3, 3 + r), 3, chunk)  # [n, g, col, s, j]
    rhs = forms.collapse_range(forms.transpose(plain, [0, 1, *range(3, 3 + r), 2]), 2, 2 + r)
    rhs = lb.expand_dim(rhs, 2, chunk)  # [n, g, s, j, row]
    n, s, g, col, row, j = lb.dims(6)
    maps = [lb.affine_map(6, [n, g, col, s, j]), lb.affine_map(6, [n, g, s, j, row]),
            lb.affine_map(6, [n, s, g, col, row])]
    acc = lb.element_type("f32")
    parts = lb.contraction(lhs, rhs, lb.zeros([images, split, groups, cols_per_group, rows], acc), maps,
                           [PARALLEL] * 5 + [REDUCTION])
    g, row, col, n, s = lb.dims(5)
    total = lb.reduction(parts, lb.zeros([groups, rows, cols_per_group], acc),
                         [lb.affine_map(5, [n, s, g, col, row]), lb.affine_map(5, [g, row, col])],
                         [PARALLEL] * 3 + [REDUCTION] * 2)
    return total if len(out_sizes) == 3 else lb.collapse_dims(total, 0)
