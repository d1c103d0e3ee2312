"""The f16/bf16 contractions that IREE 3.13's CUDA code reads past an
operand's end with (`mma_padding`), given whole MMA tiles instead.

IREE pads a contraction's workgroup tiles itself where a dim is not a
multiple of its tile, and its loads of such a tile read past an operand
that holds the dim outside its innermost (`cuda_mma_padding_overread`).
Here each padded dim is made a multiple of its tile beforehand: every
operand that it indexes is copied into zeros of the longer size, the
contraction runs over those copies, and its result is cut back. IREE then
has nothing to pad, and the contraction keeps its f16/bf16 operands and
MMA instructions, where the widening (`mma_padding.widened`) takes it to
f32 code without them: widened, five forward 1x1 layers of ResNet-50 at
224x224 took 16.5 ms of a 61.7 ms step on an H200, and with whole tiles
its IREE calls took 49.1 ms a step instead of 66.2 (docs/gpu.md).

A padded parallel dim's extra rows compute values that are cut away,
whatever the body. A padded reduction dim adds products of zeros, so it
is padded only where the body sums products and every input reads it. A
contraction whose loops IREE reshaped before it configured them (its
extents are not the source op's) is widened.
"""

from __future__ import annotations

from typing import Iterator, Optional, Sequence

from iree.compiler import ir
from iree.compiler.dialects import arith, flow, linalg, tensor

from iree_bwdconv.compiler import mma_padding
from iree_bwdconv.compiler.iree_ir import indexing_maps
from iree_bwdconv.compiler.mma_padding import Overread, as_generic, generalized_ops, loop_extents


def whole_sizes(extents: Sequence[int], tiles: Sequence[int], dims: Sequence[int]) -> list[int]:
    """`extents` with each of `dims` rounded up to a multiple of its tile."""
    return [-(-size // tiles[d]) * tiles[d] if d in dims else size for d, size in enumerate(extents)]


def _why_not(op: ir.Operation, overread: Overread) -> Optional[str]:
    """Why the generic `op` cannot take `overread`'s dims as whole tiles
    (None: it can)."""
    if op.name != "linalg.generic":
        return "not a generic"
    extents = loop_extents(op)
    if extents is None or tuple(extents) != overread.extents:
        return "its loops are not the dispatch's"
    if len(op.results) != 1 or any(len(body_op.regions) for body_op in op.regions[0].blocks[0].operations):
        return "not a one-result contraction with a plain body"
    maps = indexing_maps(op)
    for affine_map in maps:
        for expr in affine_map.results:
            if not isinstance(expr, ir.AffineDimExpr) and _dims_in(expr) & set(overread.dims):
                return "a padded dim indexes an operand through a sum"
    kinds = [str(kind) for kind in ir.ArrayAttr(op.attributes["iterator_types"])]
    reduced = [d for d in overread.dims if "reduction" in kinds[d]]
    if reduced and not _sums_products(op.regions[0].blocks[0]):
        return "a padded dim is a reduction of a body that is not a sum of products"
    count = len(op.operands) - len(op.results)
    if any(d not in _dims_in_results(affine_map) for d in reduced for affine_map in maps[:count]):
        return "a padded reduction dim does not index every input"
    return None


def _dims_in_results(affine_map: ir.AffineMap) -> set[int]:
    return {expr.position for expr in affine_map.results if isinstance(expr, ir.AffineDimExpr)}


def _sums_products(block: ir.Block) -> bool:
    """A body that adds the product of its inputs (each maybe converted) to
    its output: where every input reads zeros, it adds zero."""
    ops = list(block.operations)
    names = [op.name for op in ops]
    if names[-3:] != ["arith.mulf", "arith.addf", "linalg.yield"]:
        return False
    if any(name not in ("arith.extf", "arith.truncf") for name in names[:-3]):
        return False
    multiply, add, yielded = ops[-3:]
    accumulator = block.arguments[len(block.arguments) - 1]
    return ({add.operands[0], add.operands[1]} == {accumulator, multiply.results[0]}
            and yielded.operands[0] == add.results[0])


def _dims_in(expr: ir.AffineExpr) -> set[int]:
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position}
    if isinstance(expr, ir.AffineBinaryExpr):
        return _dims_in(expr.lhs) | _dims_in(expr.rhs)
    return set()


def _zeros(sizes: Sequence[int], element: ir.Type) -> ir.Value:
    zero = arith.ConstantOp(element, ir.FloatAttr.get(element, 0.0)).result
    return linalg.fill(zero, outs=[tensor.EmptyOp(list(sizes), element).result])


def _placed(value: ir.Value, sizes: Sequence[int]) -> ir.Value:
    """`value` at the start of zeros of `sizes`; itself where they are its own."""
    kind = ir.RankedTensorType(value.type)
    if list(kind.shape) == list(sizes):
        return value
    rank = kind.rank
    return tensor.InsertSliceOp(value, _zeros(sizes, kind.element_type), [], [], [],
                                [0] * rank, list(kind.shape), [1] * rank).result


def _operand_sizes(affine_map: ir.AffineMap, shape: Sequence[int], extents: Sequence[int]) -> list[int]:
    return [extents[expr.position] if isinstance(expr, ir.AffineDimExpr) else size
            for expr, size in zip(affine_map.results, shape)]


def _init(value: ir.Value, sizes: Sequence[int]) -> ir.Value:
    """The output `value` at `sizes`: a fill made again at them (in the
    dispatch, where IREE fuses it), else `value` placed in zeros."""
    owner = value.owner
    if isinstance(owner, (ir.Operation, ir.OpView)) and owner.name == "linalg.fill":
        element = ir.RankedTensorType(value.type).element_type
        return linalg.fill(owner.operands[0], outs=[tensor.EmptyOp(list(sizes), element).result])
    return _placed(value, sizes)


def _pad(op: ir.Operation, overread: Overread) -> None:
    """`op` anew, in a dispatch of its own, over copies of its operands
    whose `overread.dims` are whole tiles; its result cut back to its own
    sizes after the dispatch. Outside a dispatch, IREE folds the cut into
    the contraction and is back at the sizes it pads."""
    extents = whole_sizes(overread.extents, overread.tiles, overread.dims)
    count = len(op.operands) - len(op.results)
    old_block = op.regions[0].blocks[0]
    maps = indexing_maps(op)

    def sizes(value: ir.Value, affine_map: ir.AffineMap) -> list[int]:
        return _operand_sizes(affine_map, ir.RankedTensorType(value.type).shape, extents)

    with ir.InsertionPoint(op):
        inputs = [_placed(value, sizes(value, affine_map)) for value, affine_map in zip(op.operands[:count], maps)]
        output, output_map = op.operands[count], maps[count]
        old_type = ir.RankedTensorType(op.results[0].type)
        result_type = ir.RankedTensorType.get(sizes(output, output_map), old_type.element_type)
        region = flow.DispatchRegionOp([result_type], [], [])
        with ir.InsertionPoint(region.regions[0].blocks.append()):
            new = linalg.GenericOp([result_type], inputs, [_init(output, result_type.shape)],
                                   op.attributes["indexing_maps"], op.attributes["iterator_types"])
            block = new.regions[0].blocks.append(*(arg.type for arg in old_block.arguments))
            mapping = dict(zip(old_block.arguments, block.arguments))
            with ir.InsertionPoint(block):
                for body_op in old_block.operations:
                    clone = body_op.clone()
                    for position, operand in enumerate(clone.operands):
                        if operand in mapping:
                            clone.operands[position] = mapping[operand]
                    mapping.update(zip(body_op.results, clone.results))
            flow.ReturnOp([new.results[0]])
        rank = old_type.rank
        cut = tensor.ExtractSliceOp(old_type, region.results[0], [], [], [], [0] * rank, list(old_type.shape),
                                    [1] * rank).result
    op.results[0].replace_all_uses_with(cut)
    old_init = output.owner
    op.erase()
    if (isinstance(old_init, (ir.Operation, ir.OpView)) and old_init.name == "linalg.fill"
            and not any(True for _ in old_init.results[0].uses)):
        old_init.erase()  # the fill made again at the whole tiles' sizes


def padded(text: str, found: Sequence[Overread]) -> tuple[str, list[Overread]]:
    """`text` with each contraction whose loops are those of one of `found`
    given whole tiles where it can take them (a named op made a generic
    first), and those of `found` that no contraction took: they are for
    the widening. Another contraction of the same counts as one taken
    (which widening by counts alone would widen too) is left as it is:
    where it was the one IREE padded, the next compile finds it again.
    `text` itself, and all of `found`, where it is not IR these bindings
    read."""
    if not found:
        return text, []
    with ir.Context(), ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError:
            return text, list(found)
        taken: list[Overread] = []
        _copy, pairs = generalized_ops(module)
        for op, generic in pairs:
            match = next((overread for overread in found if _why_not(generic, overread) is None), None)
            if match is not None:
                _pad(op if op.name == "linalg.generic" else as_generic(op, generic), match)
                taken.append(match)
        left = [overread for overread in found if overread not in taken]
        return (str(module) if taken else text), left


def rewrites(text: str, found: Sequence[Overread]) -> Iterator[str]:
    """The modules that avoid `found`, to compile in turn until one passes:
    whole tiles where a contraction can take them (the rest widened), then
    every one widened, as before whole tiles (where IREE pads the padded
    module anew); each widening first with one operand read as f32, then
    with every operand (`mma_padding.widened`), where IREE's code for the
    first failed. Each widening is made only when asked for, and none
    that is `text` or one made before."""
    tiled, untiled = padded(text, found), (text, list(found))
    made = [text]
    for (source, left), every in ((tiled, False), (untiled, False), (tiled, True), (untiled, True)):
        module = mma_padding.widened(source, left, every=every)
        if module not in made:
            made.append(module)
            yield module
