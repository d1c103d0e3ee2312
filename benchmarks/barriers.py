"""IREE's `util.optimization_barrier` put on values of a module, for
measuring what the lowering no longer does.

Until 2026-11-24 the lowering kept a weight-first GEMM's row-major tap and
the per-phase tap table behind a barrier, so that IREE would not fold them
into the contraction's indexing map. The barrier made every call wait on
the host between two submissions (0.2-0.3 ms on the H100 in a module that
also computes the weight gradient); the taps are now gathered by flat
index, which IREE keeps as a dispatch of its own without a barrier
(`iree_bwdconv.builders.tap_tables`). These helpers rebuild the barrier'd forms:

- `mark` + `insert_barriers`: a benchmark that builds its own IR marks a
  value in torch-mlir's context; after torch-mlir's pipeline the mark
  becomes a barrier in IREE's context (the two MLIR copies share no
  objects, so the module crosses as text).
- `behind_barriers`: the lowering's text with every tap gather behind a
  barrier, as the lowering emitted it before.
"""

from __future__ import annotations

from typing import Callable

from iree.compiler import ir as iree_ir
from iree.compiler.dialects import util
from torch_mlir import ir

from iree_bwdconv.compiler.iree_ir import ops_where

ATTRIBUTE = "iree_bwdconv.materialize"


def mark(value: ir.Value) -> ir.Value:
    """Ask for `value` (an op's only result) to be materialized; returns it."""
    value.owner.attributes[ATTRIBUTE] = ir.UnitAttr.get()
    return value


def _behind(text: str, wanted: Callable[[iree_ir.Operation], bool]) -> str:
    """`text` with the result of every op that `wanted` picks behind a barrier."""
    with iree_ir.Context(), iree_ir.Location.unknown():
        module = iree_ir.Module.parse(text)
        for op in ops_where(module, wanted):
            (value,) = op.results
            with iree_ir.InsertionPoint.after(op):
                barrier = util.OptimizationBarrierOp([value.type], [value])
            value.replace_all_uses_except(barrier.results[0], barrier.operation)
        return str(module)


def insert_barriers(text: str) -> str:
    """`text` with every marked op's result behind a barrier and the marks
    removed; `text` itself where nothing is marked."""
    if ATTRIBUTE not in text:
        return text

    def marked(op: iree_ir.Operation) -> bool:
        if ATTRIBUTE not in op.attributes:
            return False
        del op.attributes[ATTRIBUTE]
        return True

    return _behind(text, marked)


def _is_tap_gather(op: iree_ir.Operation) -> bool:
    """A tap gather of `iree_bwdconv.builders.tap_tables`: a generic with no input
    whose one result is flat and whose body extracts from the weight (the
    weave's gather has no input either, but a result of rank 3 or more)."""
    if op.name != "linalg.generic" or len(op.operands) != 1 or len(op.results) != 1:
        return False
    body = op.regions[0].blocks[0]
    extracts = any(inner.operation.name == "tensor.extract" for inner in body.operations)
    return extracts and iree_ir.RankedTensorType(op.results[0].type).rank == 1


def behind_barriers(text: str) -> str:
    """The lowering's `text` with every tap gather behind a barrier."""
    return _behind(text, _is_tap_gather)
