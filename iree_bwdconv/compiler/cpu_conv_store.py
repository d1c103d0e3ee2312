"""A copy between a convolution and a partial store of it, on the CPU, where
IREE 3.13's llvm-cpu code would write the result to the wrong places.

IREE folds unit dims away before it forms dispatches, so a convolution over
one image reaches the CPU's codegen without a batch dim. There
`InsertBatchDimForBatchlessConvPass` gives it one back and folds the
collapse_shape this leaves into the dispatch's store. That fold takes the
dims a rank-reducing store drops to be all before its first kept one. Where
the convolution's result is inserted into a larger tensor (a stride phase
into grad_input, a group into its channels) and the result has a dim of one
after a larger one (a phase of one row, say), the store drops a dim after
its first kept one: the values land in the wrong places, or iree-compile
fails ("offset ... is out-of-bounds"). docs/performance-journal.md, "A batchless
convolution on the CPU", has the smallest module that shows it. GPU
targets' pipelines do not run that pass; the same modules were right on an
H100.

`guard` puts `util.optimization_barrier` between such a result and its
insert (or its pad, which IREE makes an insert): IREE then stores the convolution's result whole, and copies it into
place in a dispatch of its own. `pipeline` runs it on every module it
compiles for the CPU, in IREE's bindings (torch-mlir's have no util
dialect); it prints the module again only where it changed something.
"""

from __future__ import annotations

from typing import Optional

from iree.compiler import ir

from iree_bwdconv.compiler.iree_ir import kept, ops_where, sizes_of

# Ops that IREE fuses into the convolution's dispatch and moves its reshapes
# through, between the convolution and the insert.
_PASSED_THROUGH = ("tensor.collapse_shape", "tensor.expand_shape", "tensor.cast")


def _is_convolution(op: ir.Operation) -> bool:
    """A contraction that reads an operand at a sum of loop dims: what
    IREE's convolution matching sees (or a named convolution)."""
    if op.name.startswith("linalg.conv") or op.name.startswith("linalg.depthwise_conv"):
        return True
    if op.name != "linalg.generic" or "reduction" not in str(op.attributes["iterator_types"]):
        return False
    maps = [ir.AffineMapAttr(attr).value for attr in ir.ArrayAttr(op.attributes["indexing_maps"])]
    return any(not isinstance(expr, (ir.AffineDimExpr, ir.AffineConstantExpr)) for m in maps for expr in m.results)


def _is_elementwise(op: ir.Operation) -> bool:
    return op.name == "linalg.generic" and "reduction" not in str(op.attributes["iterator_types"])


def _convolution_behind(value: ir.Value) -> Optional[ir.Operation]:
    """The convolution `value` comes from, through elementwise ops and
    reshapes, or None."""
    while not isinstance(value.owner, ir.Block):
        op = value.owner.operation
        if _is_convolution(op):
            return op
        if not (_is_elementwise(op) or op.name in _PASSED_THROUGH) or not op.operands:
            return None
        value = op.operands[0]
    return None


def drops_a_dim_after_a_kept_one(sizes: list[int]) -> bool:
    """Whether a store of a slice of `sizes` (a dynamic size is not one),
    its unit dims folded away, drops a dim after the first one it keeps."""
    first_kept = next((axis for axis, size in enumerate(sizes) if size != 1), len(sizes))
    return any(size == 1 for size in sizes[first_kept:])


def _placed_sizes(op: ir.Operation) -> Optional[tuple[list[int], list[int]]]:
    """The sizes of the slice that `op` places into a tensor and that
    tensor's shape, for the two ops IREE turns into a partial store: an
    insert_slice, and a pad (a fill and an insert_slice to IREE)."""
    if op.name == "tensor.insert_slice":
        return list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"])), list(op.operands[1].type.shape)
    if op.name == "tensor.pad":
        return list(op.operands[0].type.shape), list(op.results[0].type.shape)
    return None


def _at_risk(op: ir.Operation) -> bool:
    placed = _placed_sizes(op)
    if placed is None:
        return False
    sizes, whole = placed
    return sizes != whole and drops_a_dim_after_a_kept_one(sizes) and _convolution_behind(op.operands[0]) is not None


def guard(text: str) -> str:
    """`text` with a barrier before every insert of a convolution's result
    that IREE's CPU code would store wrongly; `text` itself where there is
    none."""
    if "tensor.insert_slice" not in text and "tensor.pad" not in text:
        return text
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        inserts = ops_where(module, _at_risk)
        for op in inserts:
            with ir.InsertionPoint(op):
                op.operands[0] = kept(op.operands[0], sizes_of(op.operands[0]))
        return str(module) if inserts else text
