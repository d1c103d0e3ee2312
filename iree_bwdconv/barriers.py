"""Values a GPU form needs IREE to keep as they are.

IREE folds a transpose into the indexing map of the contraction that reads
it. For the weight-first GEMM of a 1x1 kernel or a 1-tap phase
(`contraction_forms.weight_first_gemm`) that undoes the row-major tap the
form made, and IREE 3.13's CUDA
configuration then tiles the GEMM by 8 images x 8 positions (n32 c1024
k2048 25x25, f16), or 2x8 positions at 50x50 (5.5 ms against 2.9 with the
weight kept; docs/performance.md, "1x1 grad_input"). A pattern marks the
op whose result must stay (`mark`, in torch-mlir's context); once
torch-mlir's pipeline is done, `insert_barriers` puts IREE's
`util.optimization_barrier` on that result, in IREE's own context: the two
MLIR copies share no objects, so the module crosses as text. The barrier
costs one small dispatch (the weight's transpose) and IREE removes it
before code generation.

This makes the linalg of a GPU lowering IREE's own input: it holds one
`util` op wherever a mark was made. CPU lowerings make no mark.
"""

from __future__ import annotations

from iree.compiler import ir as iree_ir
from iree.compiler.dialects import util
from torch_mlir import ir

ATTRIBUTE = "iree_bwdconv.materialize"


def mark(value: ir.Value) -> ir.Value:
    """Ask for `value` (an op's only result) to be materialized; returns it."""
    value.owner.attributes[ATTRIBUTE] = ir.UnitAttr.get()
    return value


def insert_barriers(text: str) -> str:
    """`text` with every marked op's result behind an optimization barrier
    and the marks removed; `text` itself where nothing is marked."""
    if ATTRIBUTE not in text:
        return text
    with iree_ir.Context(), iree_ir.Location.unknown():
        module = iree_ir.Module.parse(text)
        marked: list[iree_ir.Operation] = []

        def visit(op: iree_ir.Operation) -> iree_ir.WalkResult:
            if ATTRIBUTE in op.attributes:
                marked.append(op)
            return iree_ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        for op in marked:
            del op.attributes[ATTRIBUTE]
            (value,) = op.results
            with iree_ir.InsertionPoint.after(op):
                barrier = util.OptimizationBarrierOp([value.type], [value])
            value.replace_all_uses_except(barrier.results[0], barrier.operation)
        return str(module)
