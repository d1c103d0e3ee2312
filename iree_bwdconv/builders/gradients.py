"""The contractions of convolution_backward as linalg.generic ops, one
rank-generic builder per gradient. Sizes and paddings come from `geometry`;
the builders only turn them into IR.

The contractions take the shapes of `contraction_forms` (a named
convolution's maps, or a matmul): an explicit group dim only where there
are groups. Loop dims are named as MLIR's opdsl names them: n (batch),
g (group), f (grad_output channel in group), c (input channel in group),
o/i (output/input spatial), k (kernel taps).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from torch_mlir import ir

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv.builders import cpu_weight, weight_rows
from iree_bwdconv import geometry
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.builders.linalg_builders import PARALLEL, REDUCTION
from iree_bwdconv.plan import Plan
from iree_bwdconv.plan.grad_weight import rows_columns, windows as summed_positions
from iree_bwdconv.spec import ConvBackwardSpec

ACCUMULATOR = "f32"


def _batch(value: ir.Value) -> lb.Size:
    return lb.sizes_of(value)[0]


def grad_bias(spec: ConvBackwardSpec, grad_output: ir.Value, *, plan: Plan) -> ir.Value:
    """db[f] = sum over n and every spatial position of dy[n, f, ...]; where
    the plan splits it, in two steps: rows[n, f, s] = sum_j dy[n, f, (s, j)]
    over runs j of the flattened positions, then db[f] = sum_{n,s} rows[n, f, s]."""
    r = spec.spatial_rank
    acc = lb.element_type(ACCUMULATOR)
    if plan.grad_bias.batch_first:  # cols[f, o] = sum_n dy[n, f, o], then db[f] = sum_o cols[f, o]
        f, *o, n = lb.dims(2 + r)
        cols = lb.reduction(grad_output, lb.zeros([spec.out_channels, *spec.output_spatial], acc),
                            [lb.affine_map(2 + r, [n, f, *o]), lb.affine_map(2 + r, [f, *o])],
                            [PARALLEL] * (1 + r) + [REDUCTION])
        f, *o = lb.dims(1 + r)
        total = lb.reduction(cols, lb.zeros([spec.out_channels], acc),
                             [lb.affine_map(1 + r, [f, *o]), lb.affine_map(1 + r, [f])], [PARALLEL] + [REDUCTION] * r)
        return lb.convert(total, lb.element_type(spec.dtype))
    split = plan.grad_bias.split
    if split is None:
        f, n, *o = lb.dims(2 + r)
        maps = [lb.affine_map(2 + r, [n, f, *o]), lb.affine_map(2 + r, [f])]
        total = lb.reduction(grad_output, lb.zeros([spec.out_channels], acc), maps,
                             [PARALLEL] + [REDUCTION] * (1 + r))
        return lb.convert(total, lb.element_type(spec.dtype))
    positions = math.prod(spec.output_spatial)
    runs = lb.expand_dim(forms.collapse_range(grad_output, 2, 2 + r), 2, (split, positions // split))
    n, f, s, j = lb.dims(4)
    rows = lb.reduction(runs, lb.zeros([_batch(grad_output), spec.out_channels, split], acc),
                        [lb.affine_map(4, [n, f, s, j]), lb.affine_map(4, [n, f, s])], [PARALLEL] * 3 + [REDUCTION])
    f, n, s = lb.dims(3)
    total = lb.reduction(rows, lb.zeros([spec.out_channels], acc),
                         [lb.affine_map(3, [n, f, s]), lb.affine_map(3, [f])], [PARALLEL] + [REDUCTION] * 2)
    return lb.convert(total, lb.element_type(spec.dtype))


def grad_weight(spec: ConvBackwardSpec, grad_output: ir.Value, input_: ir.Value, *, plan: Plan) -> ir.Value:
    """Weight gradient; reads the padded source at `o*s + k*d`, so no zero is
    ever multiplied but those of the padding itself.

    transposed=False: dw[g,f,(c,k)] = sum_{(n,o)} dy[n,g,f,o] * xp[n,g,c,o*s+k*d]
    transposed=True:  dw[g,c,(f,k)] = sum_{(n,i)} x[n,g,c,i] * dyp[n,g,f,i*s+k*d]

    as an im2col gather and one matmul per group, or as one contraction,
    either split-K, or as a 1x1 kernel's `weight_rows`: as `plan.grad_weight`
    says. The gather may cover a window larger than the kernel (its
    `taps`), whose extra columns are dropped from the result.
    """
    r, groups = spec.spatial_rank, spec.groups
    c_in, f_out = spec.in_channels_per_group, spec.out_channels_per_group
    if spec.transposed:
        source, windows, padded_input = spec.output_spatial, spec.input_spatial, False
    else:
        source, windows, padded_input = spec.input_spatial, spec.output_spatial, True
    window = (source, windows, spec.kernel, spec.stride, spec.padding, spec.dilation)
    if any(map(geometry.reads_only_padding, *window)):
        return lb.zeros(list(spec.weight_shape), lb.element_type(spec.dtype))
    weight = plan.grad_weight
    if weight.form == "rows":
        acc = weight_rows.grad_weight(spec, grad_output, input_, weight.image_split, weight.rows_padding)
        return lb.convert(acc, lb.element_type(spec.dtype))
    rows, columns = rows_columns(spec)
    by_im2col = weight.form == "im2col"
    columns_first, taps, unpadded = weight.columns_first, weight.taps, weight.gather_unpadded
    if not unpadded:  # the windowed operand padded (or cropped) to span exactly the reads
        low, high = geometry.window_padding_nd(source, windows, taps, spec.stride, spec.padding, spec.dilation)
        low, high = [0, 0, *low], [0, 0, *high]
        if padded_input:
            input_ = lb.pad_or_crop(input_, low, high)
        else:
            grad_output = lb.pad_or_crop(grad_output, low, high)
    x = lb.expand_dim(input_, 1, (groups, c_in))
    dy = lb.expand_dim(grad_output, 1, (groups, f_out))
    plain, windowed = (x, dy) if spec.transposed else (dy, x)
    if not by_im2col:
        if weight.widened:
            plain, windowed = _one_read_as_f32(plain, windowed)
        return grad_weight_contraction(spec, plain, windowed, rows, columns, weight.image_split)

    out_sizes = [*([groups] if groups > 1 else []), rows, columns * math.prod(taps)]
    padding = spec.padding if unpadded else None
    if columns_first and all(map(geometry.window_reads_source, *window)):  # no gather to make
        acc = cpu_weight.per_image_matmul(plain, windowed, out_sizes, plan.tuning)
    elif columns_first:
        cols = forms.im2col(windowed, windows, taps, spec.stride, spec.dilation, columns_first=True, padding=padding)
        cols = forms.collapse_range(forms.collapse_range(cols, 2 + r, 3 + 2 * r), 1, 2 + r)  # [g, col*k, n*o]
        acc = cpu_weight.columns_first_matmul(plain, cols if groups > 1 else lb.collapse_dims(cols, 0), out_sizes,
                                              plan.tuning)
    else:
        acc = _rows_matmul(spec, plain, windowed, windows, taps, padding, out_sizes, plan=plan)
    return _weight_from_matmul(spec, acc, out_sizes, columns, taps)


def _one_read_as_f32(plain: ir.Value, windowed: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The weight gradient's operands with the smaller one (positions of
    an image: both share the batch) read as f32. One f32 operand keeps
    IREE's CUDA code off its MMA instructions, which read past an operand
    here (IREE fault `cuda_mma_padding_overread`); the other stays f16 and
    is widened in the contraction's body instead of copied. On an H200
    the g32 3x3 s2 200x200 layer's three gradients took 17.3 ms so,
    against 23.6 with both operands copied into f32."""
    def per_image(value: ir.Value) -> int:  # the batch alone may be dynamic
        return math.prod(ir.RankedTensorType(value.type).shape[1:])

    f32 = lb.element_type(ACCUMULATOR)
    if per_image(plain) <= per_image(windowed):
        return lb.convert(plain, f32), windowed
    return plain, lb.convert(windowed, f32)


def _rows_matmul(
    spec: ConvBackwardSpec, plain: ir.Value, windowed: ir.Value, windows: Sequence[int], taps: tuple[int, ...],
    padding: Optional[Sequence[int]], out_sizes: list[int], *, plan: Plan
) -> ir.Value:
    """The im2col gather laid out a row per (image, position), [(g,) n*o,
    col*k], times grad_output as [(g,) row, n*o]: the named matmul on the
    CPU, a generic on GPU targets, split-K where the plan says."""
    r = spec.spatial_rank
    lhs = forms.collapse_range(forms.transpose(plain, [1, 2, 0, *range(3, 3 + r)]), 2, 3 + r)  # [g, row, n*o]
    cols = forms.im2col(windowed, windows, taps, spec.stride, spec.dilation, padding=padding)
    cols = forms.collapse_range(forms.collapse_range(cols, 1, 2 + r), 2, 3 + r)  # [g, n*o, col*k]
    if spec.groups == 1:  # a plain matmul, not a batch of one
        lhs, cols = lb.collapse_dims(lhs, 0), lb.collapse_dims(cols, 0)
    split = plan.grad_weight.im2col_split
    if split > 1:
        # Runs padded to a multiple: with runs of 676 (c64 n8 25x25, split 2) IREE 3.13's CUDA code left
        # NaN in 704 of 36864 f16 results when col2im's grad_input was in the same module.
        return forms.split_matmul(lhs, cols, out_sizes, split, plan.tuning.split_chunk_multiple)
    return forms.matmul(lhs, cols, lb.zeros(out_sizes, lb.element_type(ACCUMULATOR)), plan.grad_weight.named_matmul)


def _weight_from_matmul(
    spec: ConvBackwardSpec, acc: ir.Value, out_sizes: list[int], columns: int, taps: tuple[int, ...]
) -> ir.Value:
    """The weight gradient from the im2col matmul's [(g,) row, col*k]
    result: the taps unflattened, those past the kernel dropped."""
    acc = forms.expand_trailing(acc, [columns, *taps])
    acc = lb.extract(acc, [0] * (len(out_sizes) + len(taps)), [*out_sizes[:-1], columns, *spec.kernel])
    if spec.groups > 1:
        acc = lb.collapse_dims(acc, 0)
    return lb.convert(acc, lb.element_type(spec.dtype))


def grad_weight_contraction(
    spec: ConvBackwardSpec, plain: ir.Value, windowed: ir.Value, rows: int, columns: int, split: int
) -> ir.Value:
    """dw[g,row,col,k] = sum_{n,o} windowed[n,g,col,o*s+k*d] * plain[n,g,row,o], one
    generic, in `split` partial sums over runs of whole images. The windowed
    operand must come first: with the operands swapped, IREE's GPU code
    generation failed to compile some of these ("failed to pack reduction
    dimensions": the demo CNN's stem, 1x1 c512 k1024 100x100) and took 5 s
    on the 1x1 n32 c1024 k2048 50x50 gradients."""
    r = spec.spatial_rank
    out_sizes = [spec.groups, rows, columns, *spec.kernel]
    if split > 1:
        images = ir.RankedTensorType(windowed.type).shape[0] // split
        windowed = lb.expand_dim(windowed, 0, (split, images))
        plain = lb.expand_dim(plain, 0, (split, images))
    lead = 1 if split > 1 else 0
    num = lead + 4 + 2 * r
    d = lb.dims(num)
    s, (g, row, col, *rest) = d[:lead], d[lead:]
    if geometry.slides_no_window(spec.kernel, summed_positions(spec)):
        # IREE folds it to a contraction with `windowed` first: its columns' loop must come before
        # the rows', or IREE 3.13's MMA code computes it wrongly in f16/bf16 (`mma_order`).
        row, col = col, row
    k, (n, *o) = rest[:r], rest[r:]
    reads = [oi * st + ki * dil for oi, ki, st, dil in zip(o, k, spec.stride, spec.dilation)]
    maps = [lb.affine_map(num, [*s, n, g, col, *reads]), lb.affine_map(num, [*s, n, g, row, *o]),
            lb.affine_map(num, [*s, g, row, col, *k])]
    init = lb.zeros([split] * lead + out_sizes, lb.element_type(ACCUMULATOR))
    acc = lb.contraction(windowed, plain, init, maps, [PARALLEL] * (lead + 3 + r) + [REDUCTION] * (1 + r))
    if split > 1:
        acc = forms.sum_partials(acc, out_sizes)
    return lb.convert(lb.collapse_dims(acc, 0), lb.element_type(spec.dtype))


def zeros_like_input(spec: ConvBackwardSpec, grad_output: ir.Value) -> ir.Value:
    """An all-zero input gradient, for when every grad_output element reads
    only padding: nothing to contract."""
    sizes = [_batch(grad_output), spec.in_channels, *spec.input_spatial]
    return lb.zeros(sizes, lb.element_type(spec.dtype))
