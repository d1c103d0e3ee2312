"""The shapes our contractions take so that IREE's code generation knows
them: a convolution with exactly the indexing maps and loop order of
linalg's named convolutions, and a matmul over an im2col gather.

On this CPU the same stride-1 3x3 grad_input ran 50 ms as a generic with a
unit group dim and a reduction-first weight layout, and 3 ms with the maps
of `linalg.conv_2d_nchw_fchw`; the same grad_weight ran 67 ms as a generic
contraction, 51 ms as a convolution over transposed operands and 4.3 ms as
an im2col gather feeding a row-major matmul (docs/performance-journal.md). Every op
here is still a `linalg.generic`.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from iree_bwdconv import geometry
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.builders.linalg_builders import PARALLEL, REDUCTION


def positions_first(kernel: Sequence[int], out_sizes: Sequence[int]) -> bool:
    """Whether `conv` runs its output positions before its output channels:
    where its window slides along no dim (`geometry.slides_no_window`).
    IREE folds such a convolution's unit dims to a contraction with the
    source first and keeps the generic's loop order, and opdsl's order puts
    the second operand's rows (f) before the first's (o), which IREE 3.13's
    MMA code computes wrongly in f16/bf16 (`mma_order`). A window that
    slides stays a convolution, whose loops IREE orders itself."""
    return geometry.slides_no_window(kernel, out_sizes)


def conv(
    source: ir.Value, filter_: ir.Value, init: ir.Value, strides: Sequence[int], dilations: Sequence[int],
    filter_reduction_first: bool = False,
) -> ir.Value:
    """`init[n,(g,)f,o] += source[n,(g,)c,o*s + k*d] * filter[(g,)f,c,k]`.

    Grouped when the operands carry a group dim (rank 3 + r for the
    source): the maps of `conv_2d_ngchw_gfchw`, else those of
    `conv_{1,2,3}d_nc*_fc*`. Loop dims in opdsl's order: n, (g,) f, o..., c, k...
    With `filter_reduction_first` the filter is read as [(g,)c,f,k] instead
    (a data gradient's weight as it is, without its transpose).

    Where `positions_first`, the loops are n, (g,) o..., f, c, k... instead.
    """
    r = len(strides)
    lead = ir.RankedTensorType(source.type).rank - r  # 2, or 3 with a group dim
    num = lead + 1 + 2 * r
    d = lb.dims(num)
    n, groups = d[0], d[1 : lead - 1]
    if positions_first(lb.sizes_of(filter_)[-r:], lb.sizes_of(init)[-r:]):
        o, f = d[lead - 1 : lead - 1 + r], d[lead - 1 + r]
    else:
        f, o = d[lead - 1], d[lead : lead + r]
    c, k = d[lead + r], d[lead + r + 1 :]
    reads = [oi * s + ki * dil for oi, ki, s, dil in zip(o, k, strides, dilations)]
    maps = [
        lb.affine_map(num, [n, *groups, c, *reads]),
        lb.affine_map(num, [*groups, *((c, f) if filter_reduction_first else (f, c)), *k]),
        lb.affine_map(num, [n, *groups, f, *o]),
    ]
    return lb.contraction(source, filter_, init, maps, [PARALLEL] * (lead + r) + [REDUCTION] * (1 + r))


def grouped_conv(source: ir.Value, filter_: ir.Value, groups: int, out_sizes: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int], acc: ir.Type) -> ir.Value:
    """`out[n,f,o] = sum source[n,c,o*s + k*d] * filter[f,c,k]` within each
    of `groups` groups (channels split group-major, as torch's), in `acc`:
    one convolution with the group dim split out (`conv`), the result's
    channels merged back."""
    channels, outputs = lb.sizes_of(source)[1], lb.sizes_of(filter_)[0]
    if groups > 1:
        source = lb.expand_dim(source, 1, (groups, channels // groups))
        filter_ = lb.expand_dim(filter_, 0, (groups, outputs // groups))
    per_group = [groups, outputs // groups] if groups > 1 else [outputs]
    out = conv(source, filter_, lb.zeros([lb.sizes_of(source)[0], *per_group, *out_sizes], acc), strides, dilations)
    return lb.collapse_dims(out, 1) if groups > 1 else out


def windowless_grouped_conv(source: ir.Value, filter_: ir.Value, groups: int, out_sizes: Sequence[int],
                            strides: Sequence[int], dilations: Sequence[int], dtype: str,
                            acc: ir.Type, *, widened: bool) -> ir.Value:
    """`grouped_conv` of a `dtype` convolution whose window slides along no
    dim (`geometry.slides_no_window`) on a GPU target: the rows it reads of
    `source` copied at unit step, then the convolution over them without
    stride or dilation. The copy and the filter are widened to f32 where a
    group's channels are off IREE's MMA tile (`widened`, the plan's),
    in the copy: IREE 3.13's GPU codegen failed on a widening fused into a
    strided grouped contraction ("failed to apply fusion + hoisting
    patterns")."""
    kernel = lb.sizes_of(filter_)[2:]
    elem = lb.element_type("f32" if widened else dtype)
    steps, rows = geometry.windowless_reads(kernel, strides, dilations, out_sizes)
    unit = [1] * len(kernel)
    return grouped_conv(lb.subsample(source, steps, rows, elem), lb.convert(filter_, elem), groups, out_sizes, unit,
                        unit, acc)


def matmul(lhs: ir.Value, rhs: ir.Value, init: ir.Value, named: bool = False) -> ir.Value:
    """`init[(g,)m,n] += lhs[(g,)m,k] * rhs[(g,)k,n]`: the maps of linalg.matmul
    (batch_matmul with a leading group dim), as a generic, or as the named
    op itself where `named`. IREE folds the transposes around a generic
    contraction into its indexing maps, which on the CPU undid the row-major
    layout the transposes made (1x1 grad_input: 2.9 ms against 0.6 with the
    named op, which keeps them)."""
    batch = ir.RankedTensorType(lhs.type).rank - 2
    if named:
        return (linalg.batch_matmul if batch else linalg.matmul)(lhs, rhs, outs=[init])
    num = batch + 3
    *g, m, n, k = lb.dims(num)
    maps = [lb.affine_map(num, [*g, m, k]), lb.affine_map(num, [*g, k, n]), lb.affine_map(num, [*g, m, n])]
    return lb.contraction(lhs, rhs, init, maps, [PARALLEL] * (batch + 2) + [REDUCTION])


def weight_first_gemm(taps: ir.Value, source: ir.Value, init: ir.Value) -> ir.Value:
    """`init[n,(g,)c,o...] += taps[(g,)c,f] * source[n,(g,)f,o...]`: a 1x1
    kernel's contraction as a GEMM per image whose first operand is the
    row-major weight [(g,) c, f] (rows c, reduction f innermost) and whose
    positions o stay grad_output's own layout. Loop dims n, (g,) c, o..., f.

    The operand order is what IREE 3.13's CUDA code needs: the same GEMM
    with grad_output as the first operand (the positions innermost in the
    first operand, as in every convolution-shaped generic) computed f16 and
    bf16 wrongly on the H100 (largest error 1.2-1.5 times the largest
    value, eight 1x1 layers), and right with the weight first
    (docs/performance-journal.md, "Read first")."""
    lead = ir.RankedTensorType(taps.type).rank - 1  # 1, or 2 with a group dim
    r = ir.RankedTensorType(source.type).rank - 1 - lead
    num = lead + 2 + r
    n, *rest = lb.dims(num)
    groups, c, o, f = rest[: lead - 1], rest[lead - 1], rest[lead : lead + r], rest[lead + r]
    maps = [
        lb.affine_map(num, [*groups, c, f]),
        lb.affine_map(num, [n, *groups, f, *o]),
        lb.affine_map(num, [n, *groups, c, *o]),
    ]
    return lb.contraction(taps, source, init, maps, [PARALLEL] * (num - 1) + [REDUCTION])


def im2col_matmul(
    source: ir.Value, filter_: ir.Value, dilations: Sequence[int], acc: ir.Type,
    strides: Optional[Sequence[int]] = None, output_channels_first: bool = False,
) -> ir.Value:
    """`out[n,c,o...] = sum_{f,k} source[n,f,o*s + k*d] * filter[f,c,k...]`, an
    ungrouped convolution (stride 1 unless `strides`; a filter laid out
    [c, f, k...], as a forward convolution's weight is, with
    `output_channels_first`), as the CPU runs it
    best: an im2col gather of `source` into rows [n*o, f*k] and the named
    matmul with the filter as [f*k, c] (see `matmul`), then the result
    transposed back to [n, c, o...]. A 1x1 kernel's gather is a plain
    transpose. On this CPU the convolution-shaped generic ran 3x-5x slower
    on 1x1 kernels (docs/performance-journal.md). `source` is read from its start:
    pad or crop it beforehand."""
    sizes, kernel = lb.sizes_of(source), lb.sizes_of(filter_)[2:]
    r = len(kernel)
    strides = list(strides or [1] * r)
    windows = [(size - (k - 1) * d - 1) // s + 1 for size, k, d, s in zip(sizes[2:], kernel, dilations, strides)]
    cols = im2col(lb.expand_dim(source, 1, (1, sizes[1])), windows, kernel, strides, dilations)
    rows = collapse_range(collapse_range(cols, 0, 2 + r), 1, 2 + r)  # [n*o, f*k]
    out_axis, in_axis = (0, 1) if output_channels_first else (1, 0)
    taps = collapse_range(transpose(filter_, [in_axis, *range(2, 2 + r), out_axis]), 0, 1 + r)  # [f*k, c]
    out = matmul(rows, taps, lb.zeros([lb.sizes_of(rows)[0], lb.sizes_of(taps)[1]], acc), named=True)
    out = lb.expand_dim(out, 0, (sizes[0], math.prod(windows)))
    return expand_trailing(transpose(out, [0, 2, 1]), windows)


def sum_partials(parts: ir.Value, out_sizes: list[int]) -> ir.Value:
    """out[...] = sum_s parts[s, ...], the sum over s innermost as a
    reduction's loop order has it: the last step of a split-K."""
    rank = len(out_sizes) + 1
    *kept, s = lb.dims(rank)
    maps = [lb.affine_map(rank, [s, *kept]), lb.affine_map(rank, kept)]
    elem = ir.RankedTensorType(parts.type).element_type
    return lb.reduction(parts, lb.zeros(out_sizes, elem), maps, [PARALLEL] * (rank - 1) + [REDUCTION])


def split_matmul(lhs: ir.Value, rhs: ir.Value, out_sizes: list[int], split: int, multiple: int) -> ir.Value:
    """`out[(g,)m,n] = sum_k lhs[(g,)m,k] * rhs[(g,)k,n]` as `split`
    independent matmuls over contiguous runs of k (zero-padded to a
    multiple of `multiple`), then their sum:
    part[s,(g,)m,n] = sum_j lhs[(g,)m,s,j] * rhs[(g,)s,j,n]."""
    batch = len(out_sizes) - 2
    length = ir.RankedTensorType(lhs.type).shape[-1]
    chunk = split * multiple
    if length % chunk:
        extra = -length % chunk
        lhs = lb.pad(lhs, [0] * (batch + 2), [0] * (batch + 1) + [extra])
        rhs = lb.pad(rhs, [0] * (batch + 2), [0] * batch + [extra, 0])
        length += extra
    lhs = lb.expand_dim(lhs, batch + 1, (split, length // split))
    rhs = lb.expand_dim(rhs, batch, (split, length // split))
    num = batch + 4
    s, *g, m, n, j = lb.dims(num)
    maps = [lb.affine_map(num, [*g, m, s, j]), lb.affine_map(num, [*g, s, j, n]),
            lb.affine_map(num, [s, *g, m, n])]
    parts = lb.contraction(lhs, rhs, lb.zeros([split, *out_sizes], lb.element_type("f32")), maps,
                           [PARALLEL] * (batch + 3) + [REDUCTION])
    return sum_partials(parts, out_sizes)


def transpose(value: ir.Value, permutation: Sequence[int]) -> ir.Value:
    """result[i_0, ...] = value[i_perm...]: dim j of the result is dim
    permutation[j] of `value` (linalg.transpose's convention)."""
    if list(permutation) == sorted(permutation):
        return value
    sizes = lb.sizes_of(value)
    rank = len(sizes)
    out = tensor.EmptyOp([sizes[p] for p in permutation], ir.RankedTensorType(value.type).element_type).result
    d = lb.dims(rank)
    source_map = [d[permutation.index(axis)] for axis in range(rank)]

    @linalg.generic([value], [out], [lb.affine_map(rank, source_map), ir.AffineMap.get_identity(rank)],
                    [PARALLEL] * rank)
    def result(a, _):
        return a

    return result


def collapse_range(value: ir.Value, start: int, end: int) -> ir.Value:
    """Merge dims start..end-1 into one (one tensor.collapse_shape)."""
    src = ir.RankedTensorType(value.type)
    if end - start <= 1:
        return value
    shape = list(src.shape)
    merged = shape[start:end]
    size = lb.dynamic() if lb.dynamic() in merged else math.prod(merged)
    reassociation = [[i] for i in range(start)] + [list(range(start, end))]
    reassociation += [[i] for i in range(end, src.rank)]
    result_type = ir.RankedTensorType.get(shape[:start] + [size] + shape[end:], src.element_type)
    return tensor.CollapseShapeOp(result_type, value, reassociation).result


def expand_trailing(value: ir.Value, sizes: Sequence[int]) -> ir.Value:
    """Split the last dim into `sizes` (one tensor.expand_shape)."""
    return lb.expand_axis(value, ir.RankedTensorType(value.type).rank - 1, sizes)


def im2col(
    windowed: ir.Value, windows: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
    dilations: Sequence[int], columns_first: bool = False, padding: Optional[Sequence[int]] = None,
) -> ir.Value:
    """cols[g, n, o..., c, k...] = windowed[n, g, c, o*s + k*d]: each output
    position's receptive field laid out as a row; with `columns_first`
    cols[g, c, k..., n, o...], each (channel, tap) a row of every position,
    which copies runs of `windowed`'s innermost dim. `windowed` must span
    exactly the reads (cropped or padded beforehand), unless `padding` is
    given: then it is the unpadded source, read at `o*s + k*d - p` and zero
    outside it (`_padded_gather`)."""
    sizes = lb.sizes_of(windowed)
    r = len(kernel)
    batch, groups, channels = sizes[:3]
    num = 3 + 2 * r
    g, *rest = lb.dims(num)
    if columns_first:
        out_sizes = [groups, channels, *kernel, batch, *windows]
        c, k, n, o = rest[0], rest[1 : 1 + r], rest[1 + r], rest[2 + r :]
    else:
        out_sizes = [groups, batch, *windows, channels, *kernel]
        n, o, c, k = rest[0], rest[1 : 1 + r], rest[1 + r], rest[2 + r :]
    out = tensor.EmptyOp(out_sizes, ir.RankedTensorType(windowed.type).element_type).result
    if padding is not None:
        positions = [expr.position for expr in (n, c, *o, *k)]
        return _padded_gather(windowed, out, positions, strides, dilations, padding)
    reads = [oi * s + ki * dil for oi, ki, s, dil in zip(o, k, strides, dilations)]

    @linalg.generic([windowed], [out], [lb.affine_map(num, [n, g, c, *reads]), ir.AffineMap.get_identity(num)],
                    [PARALLEL] * num)
    def result(a, _):
        return a

    return result


def _padded_gather(source: ir.Value, out: ir.Value, positions: Sequence[int], strides: Sequence[int],
                   dilations: Sequence[int], padding: Sequence[int]) -> ir.Value:
    """out[...] = source[n, g, c, o*s + k*d - p], zero where a read falls
    outside the source, with the indices computed in the body of a generic
    that has no input. `positions` are out's dims of n, c, o..., k...; g is
    dim 0. IREE 3.13's GPU code tiles this as it tiles the gather over a
    padded source (one element a thread), and the source is never copied
    into a padded tensor: that pad is a slow_memcpy of its own at about 200
    GB/s (3.9 of the 19 ms of seed 003's g32 weight gradient)."""
    sizes = lb.sizes_of(source)
    r = len(strides)
    index_type = ir.IndexType.get()
    elem = ir.RankedTensorType(source.type).element_type
    rank = ir.RankedTensorType(out.type).rank

    @linalg.generic([], [out], [ir.AffineMap.get_identity(rank)], [PARALLEL] * rank)
    def result(_):
        const = lambda value: arith.constant(index_type, value)  # noqa: E731
        n, c, *window = (linalg.IndexOp(p).result for p in positions)
        o, k = window[:r], window[r:]
        inside, reads = None, []
        for oi, ki, s, d, p, size in zip(o, k, strides, dilations, padding, sizes[3:]):
            read = arith.addi(arith.muli(oi, const(s)), arith.muli(ki, const(d)))  # o*s + k*d, before the padding
            low = arith.cmpi(arith.CmpIPredicate.uge, read, const(p))
            high = arith.cmpi(arith.CmpIPredicate.ult, read, const(p + size))
            within = arith.andi(low, high)
            inside = within if inside is None else arith.andi(inside, within)
            clamped = arith.minui(arith.maxui(read, const(p)), const(p + size - 1))
            reads.append(arith.subi(clamped, const(p)))
        value = tensor.extract(source, [n, linalg.IndexOp(0).result, c, *reads])
        return arith.select(inside, value, arith.constant(elem, 0.0))

    return result


def stack_parts(parts: dict[tuple[int, ...], ir.Value], strides: Sequence[int], elem: ir.Type) -> ir.Value:
    """stack[r0, r1, .., *lead, q0, q1, ..] = parts[(r0, r1, ..)][.., q0, q1, ..],
    zero for residues without a part, rounded to `elem`: each part one
    contiguous block, which IREE writes in place from the dispatch that
    computes the part."""
    sizes = lb.sizes_of(next(iter(parts.values())))
    r = len(strides)
    stacked_sizes = list(strides) + sizes
    everything = len(parts) == math.prod(strides)
    stack = tensor.EmptyOp(stacked_sizes, elem).result if everything else lb.zeros(stacked_sizes, elem)
    for residues, part in parts.items():
        block = lb.expand_axis(lb.convert(part, elem), 0, [1] * r + [sizes[0]])
        stack = lb.insert_strided(block, stack, [*residues] + [0] * len(sizes), [1] * len(stacked_sizes))
    return stack


def interleave_by_gather(
    parts: dict[tuple[int, ...], ir.Value], strides: Sequence[int], spatial: Sequence[int], elem: ir.Type
) -> ir.Value:
    """out[.., i0, i1, ..] = parts[(i0 mod s0, i1 mod s1, ..)][.., i0 floordiv s0, ..]
    for `spatial` positions, rounded to `elem`: the phases woven straight
    into grad_input by one gather from their stack (`stack_parts`), which
    reads each element once and leaves no grid to cut. The gather's
    indices are computed in its body: as a semi-affine indexing map
    (`i mod s`, `i floordiv s`) IREE 3.13 fails to tile it where a tile
    size and s do not divide each other (CPU at stride 2, CUDA at 3).
    (`interleave` reads every part for every element and keeps one: 600 us
    of the H100's 920 for a 3x3 stride-3 layer's nine phases.)"""
    stack = stack_parts(parts, strides, elem)
    sizes = lb.sizes_of(next(iter(parts.values())))
    r = len(strides)
    lead = len(sizes) - r
    num = lead + r
    out = tensor.EmptyOp(sizes[:lead] + list(spatial), elem).result
    index_type = ir.IndexType.get()

    @linalg.generic([], [out], [ir.AffineMap.get_identity(num)], [PARALLEL] * num)
    def result(_):
        position = [linalg.IndexOp(lead + a).result for a in range(r)]
        step = [arith.constant(index_type, s) for s in strides]
        indices = ([arith.remui(i, s) for i, s in zip(position, step)] + [linalg.IndexOp(a).result for a in range(lead)]
                   + [arith.divui(i, s) for i, s in zip(position, step)])
        return tensor.extract(stack, indices)

    return result


def interleave(parts: dict[tuple[int, ...], ir.Value], strides: Sequence[int], elem: ir.Type) -> ir.Value:
    """grid[.., q0, r0, q1, r1, ..] = parts[(r0, r1, ..)][.., q0, q1, ..], zero for
    residues without a part, rounded to `elem`: the phases of a strided
    grad_input woven together (depth-to-space) in one elementwise pass, so
    no phase writes its result with a stride (a strided store kept IREE's
    CPU code from vectorizing the phase's convolution: 2.2 ms against 0.8).
    Collapsing each (q, r) pair gives positions q*s + r."""
    first = next(iter(parts.values()))
    sizes = lb.sizes_of(first)
    r = len(strides)
    lead = len(sizes) - r
    out_sizes = sizes[:lead] + [size for q, s in zip(sizes[lead:], strides) for size in (q, s)]
    out = tensor.EmptyOp(out_sizes, elem).result
    num = len(out_sizes)
    d = lb.dims(num)
    part_map = lb.affine_map(num, d[:lead] + [d[lead + 2 * a] for a in range(r)])
    maps = [part_map] * len(parts) + [ir.AffineMap.get_identity(num)]
    acc_type = ir.RankedTensorType(first.type).element_type
    index_type = ir.IndexType.get()

    @linalg.generic(list(parts.values()), [out], maps, [PARALLEL] * num)
    def result(*args):
        residue = [linalg.IndexOp(lead + 2 * a + 1).result for a in range(r)]
        value = arith.constant(acc_type, 0.0)
        for key, part in zip(parts, args[:-1]):
            chosen = None
            for a, wanted in enumerate(key):
                same = arith.cmpi(arith.CmpIPredicate.eq, residue[a], arith.constant(index_type, wanted))
                chosen = same if chosen is None else arith.andi(chosen, same)
            value = arith.select(chosen, part, value)
        return value if elem == acc_type else arith.truncf(elem, value)

    return result
