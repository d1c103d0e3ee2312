"""Static statistics of compiled IR: multiply-adds executed by contractions,
dispatches, and splat/copy dispatches. Works on linalg-on-tensors IR and on
iree-compile's flow-level IR (whose dispatch bodies are linalg too)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from iree.compiler import ir


@dataclass(frozen=True)
class Stats:
    macs: int
    contractions: int
    dispatches: int = 0
    splats: int = 0
    slow_memcpy: int = 0


def _loop_ranges(op: ir.Operation) -> list[int]:
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    ranges: list[int] = [0] * maps[0].n_dims
    for operand, amap in zip(list(op.operands), maps):
        shape = ir.ShapedType(operand.type).shape
        for size, expr in zip(shape, amap.results):
            if isinstance(expr, ir.AffineDimExpr) and size >= 0:
                ranges[ir.AffineDimExpr(expr).position] = size
    return ranges


def _is_contraction(op: ir.Operation) -> bool:
    if op.name != "linalg.generic":
        return False
    names = {inner.name for block in op.regions[0].blocks for inner in block.operations}
    iterators = str(op.attributes["iterator_types"])
    return "reduction" in iterators and bool(names & {"arith.mulf", "arith.muli"})


def contraction_macs(text: str) -> tuple[int, int]:
    """(multiply-adds, contraction count) of every reducing generic with a
    product in its body. Flow IR dispatch bodies read `dispatch.tensor`s; the
    generics inside still see plain tensors, which is all this needs."""
    total, count = 0, 0
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)

        def visit(op):
            nonlocal total, count
            if _is_contraction(op.operation):
                total += math.prod(_loop_ranges(op.operation))
                count += 1
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
    return total, count


def flow_stats(flow: str) -> Stats:
    macs, contractions = contraction_macs(flow)
    main = flow[flow.index("util.func public @main"):]
    return Stats(
        macs=macs,
        contractions=contractions,
        dispatches=len(re.findall(r"flow\.dispatch @", main)),
        splats=main.count("flow.tensor.splat"),
        slow_memcpy=len(re.findall(r"flow\.dispatch @\S*slow_memcpy", main)),
    )
