"""Small builders over the MLIR Python bindings (torch-mlir's copy) that the
rewrite patterns compose. They take the current insertion point and
location from the caller's `with` block, as the bindings' op builders do.

Sizes are `int | Value`: an int is static, a Value is a dynamic `index`.
"""

from __future__ import annotations

from typing import Sequence, Union

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from iree_bwdconv import geometry

Size = Union[int, ir.Value]
PARALLEL = linalg.IteratorType.parallel
REDUCTION = linalg.IteratorType.reduction

ELEMENT_TYPES = {
    "f32": ir.F32Type.get,
    "f16": ir.F16Type.get,
    "bf16": ir.BF16Type.get,
}


def element_type(dtype: str) -> ir.Type:
    return ELEMENT_TYPES[dtype]()


def dynamic() -> int:
    return ir.ShapedType.get_dynamic_size()


def static_and_dynamic(sizes: Sequence[Size]) -> tuple[list[int], list[ir.Value]]:
    """Split sizes the way ops with mixed static/dynamic operands want them."""
    static = [s if isinstance(s, int) else dynamic() for s in sizes]
    values = [s for s in sizes if not isinstance(s, int)]
    return static, values


def tensor_type(sizes: Sequence[Size], elem: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(static_and_dynamic(sizes)[0], elem)


def sizes_of(value: ir.Value) -> list[Size]:
    """Static sizes as ints, dynamic ones as `tensor.dim` values."""
    shape = ir.RankedTensorType(value.type).shape
    out: list[Size] = []
    for axis, size in enumerate(shape):
        if size == dynamic():
            out.append(tensor.dim(value, arith.constant(ir.IndexType.get(), axis)))
        else:
            out.append(size)
    return out


def empty(sizes: Sequence[Size], elem: ir.Type) -> ir.Value:
    """A tensor whose every element is written before it is read."""
    return tensor.EmptyOp(list(sizes), elem).result


def zeros(sizes: Sequence[Size], elem: ir.Type) -> ir.Value:
    """A tensor of zeros: the init of every accumulation."""
    return linalg.fill(arith.constant(elem, 0.0), outs=[empty(sizes, elem)])


def pad(value: ir.Value, low: Sequence[int], high: Sequence[int]) -> ir.Value:
    """Zero-pad; a no-op (the value itself) when every amount is 0."""
    if not any(low) and not any(high):
        return value
    src = ir.RankedTensorType(value.type)
    shape = [n if n == dynamic() else n + lo + hi for n, lo, hi in zip(src.shape, low, high)]
    result_type = ir.RankedTensorType.get(shape, src.element_type)
    op = tensor.PadOp(result_type, value, [], [], list(low), list(high))
    block = op.regions[0].blocks.append(*([ir.IndexType.get()] * src.rank))
    with ir.InsertionPoint(block):
        tensor.YieldOp(arith.constant(src.element_type, 0.0))
    return op.result


def pad_or_crop(value: ir.Value, low: Sequence[int], high: Sequence[int]) -> ir.Value:
    """Zero-pad by `low` and `high`; a negative amount crops that many
    elements from that end instead (unit-stride slices only)."""
    sizes = sizes_of(value)
    starts = [max(0, -lo) for lo in low]
    kept = [s if lo >= 0 and h >= 0 else s - max(0, -lo) - max(0, -h) for s, lo, h in zip(sizes, low, high)]
    cropped = extract(value, starts, kept)
    return pad(cropped, [max(0, lo) for lo in low], [max(0, h) for h in high])


def window(value: ir.Value, spans: Sequence[tuple[int, int]]) -> ir.Value:
    """Elements `start .. start + length - 1` of each of the value's last
    `len(spans)` dims (static), zero where they fall outside it
    (`geometry.span_padding`); the leading dims as they are."""
    shape = ir.RankedTensorType(value.type).shape
    lead = len(shape) - len(spans)
    amounts = [geometry.span_padding(size, start, length) for size, (start, length) in zip(shape[lead:], spans)]
    return pad_or_crop(value, [0] * lead + [low for low, _ in amounts], [0] * lead + [high for _, high in amounts])


def extract(value: ir.Value, offsets: Sequence[int], sizes: Sequence[Size]) -> ir.Value:
    """Unit-stride slice (never a strided one: IREE 3.13 cannot compile a
    dispatch reading a strided view, see docs/architecture.md)."""
    src = ir.RankedTensorType(value.type)
    static_sizes, dyn_sizes = static_and_dynamic(sizes)
    result_type = ir.RankedTensorType.get(static_sizes, src.element_type)
    if list(static_sizes) == list(src.shape) and not any(offsets):
        return value
    return tensor.ExtractSliceOp(
        result_type, value, [], dyn_sizes, [], list(offsets), static_sizes, [1] * src.rank
    ).result


def insert_strided(
    source: ir.Value, dest: ir.Value, offsets: Sequence[int], strides: Sequence[int]
) -> ir.Value:
    """Write `source` into `dest` at `offsets`, stepping by `strides`."""
    static_sizes, dyn_sizes = static_and_dynamic(sizes_of(source))
    return tensor.InsertSliceOp(
        source, dest, [], dyn_sizes, [], list(offsets), static_sizes, list(strides)
    ).result


def expand_axis(value: ir.Value, axis: int, sizes: Sequence[int]) -> ir.Value:
    """Split dim `axis` into dims of `sizes` (one tensor.expand_shape); with
    a single size, the value itself."""
    if len(sizes) <= 1:
        return value
    src = ir.RankedTensorType(value.type)
    old = sizes_of(value)
    reassociation = [[i] for i in range(axis)] + [list(range(axis, axis + len(sizes)))]
    reassociation += [[i + len(sizes) - 1] for i in range(axis + 1, src.rank)]
    static, dyn = static_and_dynamic(old[:axis] + list(sizes) + old[axis + 1 :])
    return tensor.ExpandShapeOp(
        ir.RankedTensorType.get(static, src.element_type), value, reassociation, dyn, static
    ).result


def expand_dim(value: ir.Value, axis: int, factors: tuple[int, int]) -> ir.Value:
    """Split dim `axis` into two dims of sizes `factors` (e.g. channels into
    [groups, channels/groups]); a unit group dim stays explicit so that one
    code path serves grouped and ungrouped convolutions."""
    return expand_axis(value, axis, factors)


def collapse_dims(value: ir.Value, axis: int) -> ir.Value:
    """Merge dims `axis` and `axis + 1` (the inverse of expand_dim)."""
    src = ir.RankedTensorType(value.type)
    shape = list(src.shape)
    merged = dynamic() if dynamic() in shape[axis : axis + 2] else shape[axis] * shape[axis + 1]
    new_shape = shape[:axis] + [merged] + shape[axis + 2 :]
    reassociation = [[i] for i in range(axis)] + [[axis, axis + 1]]
    reassociation += [[i] for i in range(axis + 2, src.rank)]
    return tensor.CollapseShapeOp(
        ir.RankedTensorType.get(new_shape, src.element_type), value, reassociation
    ).result


def extend(value: ir.Value, acc_type: ir.Type) -> ir.Value:
    if value.type == acc_type:
        return value
    return arith.extf(acc_type, value)


def contraction(
    lhs: ir.Value,
    rhs: ir.Value,
    init: ir.Value,
    maps: Sequence[ir.AffineMap],
    iterators: Sequence[linalg.IteratorType],
) -> ir.Value:
    """`init[out_map] += lhs[lhs_map] * rhs[rhs_map]`, products and sums in
    the init's element type (f32 for every dtype we lower)."""
    acc_type = ir.RankedTensorType(init.type).element_type

    @linalg.generic([lhs, rhs], [init], list(maps), list(iterators))
    def result(a, b, acc):
        return arith.addf(acc, arith.mulf(extend(a, acc_type), extend(b, acc_type)))

    return result


def reduction(value: ir.Value, init: ir.Value, maps: Sequence[ir.AffineMap], iterators) -> ir.Value:
    """`init[out_map] += value[in_map]` in the init's element type."""
    acc_type = ir.RankedTensorType(init.type).element_type

    @linalg.generic([value], [init], list(maps), list(iterators))
    def result(a, acc):
        return arith.addf(acc, extend(a, acc_type))

    return result


def convert(value: ir.Value, elem: ir.Type) -> ir.Value:
    """Elementwise float conversion: the final f32 -> f16/bf16 rounding, or
    a widening to f32."""
    src = ir.RankedTensorType(value.type)
    if src.element_type == elem:
        return value
    out = tensor.EmptyOp(sizes_of(value), elem).result
    identity = ir.AffineMap.get_identity(src.rank)
    widen = ir.FloatType(elem).width > ir.FloatType(src.element_type).width

    @linalg.generic([value], [out], [identity, identity], [PARALLEL] * src.rank)
    def result(a, _):
        return arith.extf(elem, a) if widen else arith.truncf(elem, a)

    return result


def subsample(value: ir.Value, strides: Sequence[int], sizes: Sequence[int], elem: ir.Type) -> ir.Value:
    """`out[..., i] = value[..., i*s]` over the trailing dims (`sizes` of
    them), converted to `elem`: a copy that reads at stride, not a strided
    slice (see `extract`)."""
    src = ir.RankedTensorType(value.type)
    lead = src.rank - len(strides)
    d = dims(src.rank)
    reads = [*d[:lead], *(i * s for i, s in zip(d[lead:], strides))]
    out = tensor.EmptyOp([*sizes_of(value)[:lead], *sizes], elem).result

    @linalg.generic([value], [out], [affine_map(src.rank, reads), ir.AffineMap.get_identity(src.rank)],
                    [PARALLEL] * src.rank)
    def result(a, _):
        return extend(a, elem)

    return result


def dims(count: int) -> list[ir.AffineExpr]:
    return [ir.AffineDimExpr.get(i) for i in range(count)]


def affine_map(num_dims: int, exprs: Sequence[ir.AffineExpr]) -> ir.AffineMap:
    return ir.AffineMap.get(num_dims, 0, list(exprs))


def select_taps(value: ir.Value, taps: dict[int, tuple[int, int, int]]) -> ir.Value:
    """Gather along kernel axes: for `axis: (first, step, count)`, result
    element j of that axis is `value[first - step*j]`. A flip is
    `(K-1, 1, K)`; a stride-phase's reversed sub-kernel is
    `(last_tap, s/g, taps)`. Axes that would be left as they are are skipped,
    and with none left no op is emitted.

    The reversal cannot go into a consumer's indexing map instead: IREE's
    tiling sizes slices wrongly for maps with a negative coefficient.
    """
    src = ir.RankedTensorType(value.type)
    identity_axes = {a for a, (first, step, count) in taps.items()
                     if count == src.shape[a] and (count == 1 or (first, step) == (0, -1))}
    taps = {a: t for a, t in taps.items() if a not in identity_axes}
    if not taps:
        return value
    index_type = ir.IndexType.get()
    sizes = sizes_of(value)
    out_sizes = [taps[a][2] if a in taps else size for a, size in enumerate(sizes)]
    out = tensor.EmptyOp(out_sizes, src.element_type).result
    identity = ir.AffineMap.get_identity(src.rank)

    @linalg.generic([], [out], [identity], [PARALLEL] * src.rank)
    def result(_):
        indices = []
        for axis in range(src.rank):
            index = linalg.IndexOp(axis).result
            if axis in taps:
                first, step, _ = taps[axis]
                scaled = arith.muli(index, arith.constant(index_type, step)) if step != 1 else index
                index = arith.subi(arith.constant(index_type, first), scaled)
            indices.append(index)
        return tensor.extract(value, indices)

    return result


def leading_by_gather(value: ir.Value, axis: int, count: int) -> ir.Value:
    """The first `count` elements of `axis`, gathered by a generic rather
    than cut by a slice: IREE 3.13 copies a slice it must materialize (one
    returned, say) with its byte-copy dispatch, `slow_memcpy`, at about a
    tenth of an elementwise generic's speed on the H200."""
    return select_taps(value, {axis: (0, -1, count)})


def flip(value: ir.Value, axes: Sequence[int]) -> ir.Value:
    """Reverse `value` along `axes` (static sizes); size-1 axes need nothing,
    so a 1x1 kernel gets no flip at all."""
    shape = ir.RankedTensorType(value.type).shape
    return select_taps(value, {a: (shape[a] - 1, 1, shape[a]) for a in axes})
