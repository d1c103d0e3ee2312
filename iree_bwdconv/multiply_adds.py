"""Multiply-adds: those a lowered module executes (every contraction of its
linalg, counted from its loop ranges) and those a convolution's gradients
need (the products that touch neither padding nor inserted zeros), for
`iree-bwdconv explain` and the benchmarks that compare forms by work."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from iree.compiler import ir

from iree_bwdconv import geometry
from iree_bwdconv.compiler import iree_ir, pipeline
from iree_bwdconv.spec import ConvBackwardSpec

_GENERALIZE = "builtin.module(linalg-generalize-named-ops)"  # every op, dispatches and util.func too
_MULTIPLIES = ("arith.mulf", "arith.muli")


def useful(spec: ConvBackwardSpec) -> int:
    """The products one of grad_input and grad_weight needs: those of the
    convolution itself whose input element is not padding (each gradient
    takes every such product once). A dynamic batch counts one image."""
    if spec.transposed:  # x's positions slide over the output
        window = zip(spec.input_spatial, spec.output_spatial, spec.kernel, spec.stride, spec.padding, spec.dilation)
    else:
        window = zip(spec.output_spatial, spec.input_spatial, spec.kernel, spec.stride, spec.padding, spec.dilation)
    pairs = math.prod(geometry.taps_inside(*dim) for dim in window)
    return (spec.batch or 1) * spec.in_channels_per_group * spec.out_channels * pairs


def _loop_ranges(op: ir.Operation) -> list[int]:
    """Each loop's static extent: the size of an operand dim its maps read
    as that loop alone."""
    maps = [ir.AffineMapAttr(attr).value for attr in ir.ArrayAttr(op.attributes["indexing_maps"])]
    ranges = [0] * maps[0].n_dims
    for operand, map_ in zip(op.operands, maps):
        shape = ir.ShapedType(operand.type).shape if isinstance(operand.type, ir.ShapedType) else []
        for position, expr in enumerate(map_.results):
            expr = expr.maybe_downcast()
            if isinstance(expr, ir.AffineDimExpr) and shape[position] != iree_ir.DYNAMIC:
                ranges[expr.position] = shape[position]
    return ranges


def _is_contraction(op: ir.Operation) -> bool:
    if op.name != "linalg.generic" or "reduction" not in str(op.attributes["iterator_types"]):
        return False
    body = op.regions[0].blocks[0]
    return any(inner.operation.name in _MULTIPLIES for inner in body.operations)


def _contractions(root: ir.Operation, dynamic_batch: int) -> int:
    return sum(math.prod(size or dynamic_batch for size in _loop_ranges(op))
               for op in iree_ir.ops_where(root, _is_contraction))


def executed(linalg: str, dynamic_batch: int = 1, repro_dir: Optional[str] = None) -> int:
    """Multiply-adds of every contraction in `linalg` (named ones
    generalized first); a dynamic size counts `dynamic_batch`."""
    generic = pipeline.run_iree_pipeline(linalg, _GENERALIZE, "generalize named ops", repro_dir=repro_dir)
    with ir.Context(), ir.Location.unknown():
        return _contractions(ir.Module.parse(generic), dynamic_batch)


@dataclass(frozen=True)
class FlowWork:
    """What a module's flow IR launches: multiply-adds (each dispatch's
    executable counted once per launch), dispatches launched (our CUDA
    kernel's among them), and the distinct executables behind them (IREE
    launches one executable as often as identical work recurs: the phases
    of a kernel that is a multiple of its stride share one)."""

    executed: int
    dispatches: int
    executables: int


def in_flow(flow: str, repro_dir: Optional[str] = None) -> FlowWork:
    generic = pipeline.run_iree_pipeline(flow, _GENERALIZE, "generalize named ops", repro_dir=repro_dir)
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(generic)
        # A hal.executable is our CUDA kernel's: its multiply-adds are not linalg's to count.
        work = {op.attributes["sym_name"].value: _contractions(op, 1) if op.name == "flow.executable" else 0
                for op in iree_ir.ops_where(module, lambda op: op.name in ("flow.executable", "hal.executable"))}
        launched = [str(ir.ArrayAttr(op.attributes["entry_points"])[0]).split("::")[0].lstrip("@").strip('"')
                    for op in iree_ir.ops_where(module, lambda op: op.name == "flow.dispatch")]
        externs = len(iree_ir.ops_where(module, lambda op: op.name == "hal.dispatch.extern"))
        return FlowWork(sum(work[name] for name in launched), len(launched) + externs, len(work) + externs)
