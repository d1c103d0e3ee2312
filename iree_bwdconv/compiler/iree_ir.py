"""What the steps that run in IREE's own MLIR bindings share (the linalg
module after torch-mlir's pipeline, as text: the two bindings' objects do
not mix): `extern_kernels.link`, `operand_room.give`, `lowering.lower_torch`
(which runs both on one parse), `cpu_conv_store.guard`, and the benchmarks
that edit a lowered module."""

from __future__ import annotations

from typing import Callable, Sequence, Union

from iree.compiler import ir
from iree.compiler.dialects import arith, flow, tensor, util

Step = Callable[[ir.Module], None]
Size = Union[int, ir.Value]  # a static size, or a dynamic one as an `index` value
DYNAMIC = ir.ShapedType.get_dynamic_size()


def ops_where(module: ir.Module, wanted: Callable[[ir.Operation], bool]) -> list[ir.Operation]:
    """Every op of `module` that `wanted` picks, in walk order (the module
    must outlive them)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if wanted(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def indexing_maps(op: ir.Operation) -> list[ir.AffineMap]:
    """A linalg op's indexing maps, as its `indexing_maps` attribute holds them."""
    return [ir.AffineMapAttr(attr).value for attr in ir.ArrayAttr(op.attributes["indexing_maps"])]


def edited(text: str, *steps: Step) -> str:
    """`text` parsed once, edited in place by each of `steps` in turn, and
    printed."""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        for step in steps:
            step(module)
        return str(module)


def index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def sizes_of(value: ir.Value) -> list[Size]:
    """The sizes of a ranked tensor: static ones as ints, dynamic ones read
    by `tensor.dim`."""
    return [tensor.DimOp(value, index(axis)).result if size == DYNAMIC else size
            for axis, size in enumerate(value.type.shape)]


def kept(value: ir.Value, sizes: Sequence[Size]) -> ir.Value:
    """`value` behind `util.optimization_barrier`, which IREE neither folds
    nor fuses across. IREE cannot see through the barrier to a dynamic
    result's sizes, so `sizes` (the value's) are tied after it."""
    result = util.OptimizationBarrierOp([value.type], [value]).results[0]
    dynamic = [size for size in sizes if not isinstance(size, int)]
    return flow.TensorTieShapeOp(result, dynamic).result if dynamic else result
