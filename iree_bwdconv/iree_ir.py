"""What the steps that run in IREE's own MLIR bindings share (the linalg
module after torch-mlir's pipeline, as text: the two bindings' objects do
not mix): `extern_kernels.link`, `operand_room.give`, `lowering.lower_torch`
(which runs both on one parse), and the benchmarks that edit a lowered
module."""

from __future__ import annotations

from typing import Callable

from iree.compiler import ir

Step = Callable[[ir.Module], None]


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


def edited(text: str, *steps: Step) -> str:
    """`text` parsed once, edited in place by each of `steps` in turn, and
    printed."""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        for step in steps:
            step(module)
        return str(module)
