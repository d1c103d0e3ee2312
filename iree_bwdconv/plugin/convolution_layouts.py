"""The layouts of a linalg convolution, read from its indexing maps, in
opdsl's letters: `n` batch, `g` group, `c` input channel, `f` output
channel, `d`, `h`, `w` the spatial dims.

Frontends write one convolution in several ops: torch-mlir a named
`conv_2d_nchw_fchw` or `conv_2d_ngchw_gfchw`; IREE's StableHLO conversion
a named `conv_2d_nhwc_hwcf`, a `depthwise_conv_2d_nhwc_hwc(m)` where each
channel is its own group, and a `linalg.generic` for other groupings. The
maps say the same of each, so they, not the op's name, are read: which
loop is which (linalg's own convolution inference), where each sits in
each operand, and the stride and dilation of each spatial dim. A letter
an operand lacks is a unit dim there: a depthwise filter `hwc` has one
input and one output channel per group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from iree.compiler import ir
from iree.compiler.dialects import linalg

BATCH, CHANNEL, FILTER, GROUP = "n", "c", "f", "g"
SPATIAL = "dhw"


@dataclass(frozen=True)
class ConvolutionLayouts:
    """Each operand's dims as letters, and each spatial dim's stride and
    dilation, in the input's order of the spatial dims."""

    input: str
    filter: str
    output: str
    strides: tuple[int, ...]
    dilations: tuple[int, ...]

    @property
    def spatial(self) -> str:
        return "".join(letter for letter in self.input if letter in SPATIAL)


def _terms(expr: ir.AffineExpr) -> Optional[dict[int, int]]:
    """A sum of loop dims times constants as {dim: factor}, or None."""
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position: 1}
    if isinstance(expr, ir.AffineMulExpr):
        dim, factor = (expr.lhs, expr.rhs) if isinstance(expr.rhs, ir.AffineConstantExpr) else (expr.rhs, expr.lhs)
        if isinstance(dim, ir.AffineDimExpr) and isinstance(factor, ir.AffineConstantExpr):
            return {dim.position: factor.value}
        return None
    if isinstance(expr, ir.AffineAddExpr):
        lhs, rhs = _terms(expr.lhs), _terms(expr.rhs)
        if lhs is None or rhs is None or set(lhs) & set(rhs):
            return None
        return {**lhs, **rhs}
    return None


def _one_each(dims: linalg.ConvolutionDimensions) -> Union[dict[int, str], str]:
    """The letter of each loop dim that is not spatial, where there is at
    most one of each kind (and exactly one batch)."""
    kinds = {BATCH: list(dims.batch), GROUP: list(dims.depth), CHANNEL: list(dims.input_channel),
             FILTER: list(dims.output_channel)}
    if len(kinds[BATCH]) != 1:
        return f"{len(kinds[BATCH])} batch dims, not one"
    for letter, loops in kinds.items():
        if len(loops) > 1:
            return f"{len(loops)} loops of kind {letter!r}"
    return {loops[0]: letter for letter, loops in kinds.items() if loops}


def _multiply_accumulates(op: ir.Operation) -> bool:
    """Whether the body is out + in * filter and nothing else (each factor
    maybe extended first, as a named f16 convolution into f32 does)."""
    block = op.regions[0].blocks[0]
    args = list(block.arguments)
    ops = [o.operation for o in block.operations]

    def made_by(value: ir.Value, name: str) -> Optional[ir.Operation]:
        owner = value.owner
        return None if isinstance(owner, ir.Block) or owner.operation.name != name else owner.operation

    def factor(value: ir.Value) -> tuple[Optional[ir.Value], list[ir.Operation]]:
        extended = made_by(value, "arith.extf")
        return (extended.operands[0], [extended]) if extended is not None else (value, [])

    if len(args) != 3 or not ops or ops[-1].name != "linalg.yield" or len(ops[-1].operands) != 1:
        return False
    total = made_by(ops[-1].operands[0], "arith.addf")
    if total is None or args[2] not in list(total.operands):
        return False
    product = next((made_by(v, "arith.mulf") for v in total.operands if v != args[2]), None)
    if product is None:
        return False
    (a, a_ops), (b, b_ops) = (factor(v) for v in product.operands)
    return {a, b} == {args[0], args[1]} and len(ops) == 3 + len(a_ops) + len(b_ops)


def convolution_layouts(op: ir.Operation) -> Union[ConvolutionLayouts, str]:
    """The layouts of a convolution with one input, one filter and one
    output, or why `op` is not one we read."""
    dims = linalg.infer_convolution_dimensions(op)
    if dims is None:
        return f"{op.name} is not a convolution"
    maps = [ir.AffineMapAttr(attr).value for attr in linalg.get_indexing_maps(op)]
    if len(maps) != 3 or len(op.operands) != 3:
        return f"{len(op.operands)} operands, not an input, a filter and an output"
    if not _multiply_accumulates(op):
        return "its body is not a sum of products"
    letters = _one_each(dims)
    if isinstance(letters, str):
        return letters
    image, taps = set(dims.output_image), set(dims.filter_loop)
    rank = len(image)
    if not 1 <= rank <= 3 or len(taps) != rank:
        return f"{rank} spatial dims"
    spatial = SPATIAL[3 - rank:]
    input_layout, strides, dilations = "", [], []
    for expr in maps[0].results:
        terms = _terms(expr)
        if terms is None:
            return f"its input is read at {expr}"
        if len(terms) == 1 and next(iter(terms)) in letters and next(iter(terms.values())) == 1:
            input_layout += letters[next(iter(terms))]
            continue
        outs = [(d, f) for d, f in terms.items() if d in image and d not in letters]
        windows = [(d, f) for d, f in terms.items() if d in taps and d not in letters]
        if len(terms) != 2 or len(outs) != 1 or len(windows) != 1:
            return f"its input is read at {expr}"
        (out, stride), (tap, dilation) = outs[0], windows[0]
        letter = spatial[len(strides)]
        letters.update({out: letter, tap: letter})
        input_layout += letter
        strides.append(stride)
        dilations.append(dilation)
    if len(strides) != rank:
        return f"{len(strides)} of its {rank} spatial dims are windows of its input"
    operand_layouts = [input_layout]
    for map_ in maps[1:]:
        if not all(isinstance(expr, ir.AffineDimExpr) and expr.position in letters for expr in map_.results):
            return f"its filter or output is read at {map_}"
        operand_layouts.append("".join(letters[expr.position] for expr in map_.results))
    return ConvolutionLayouts(*operand_layouts, strides=tuple(strides), dilations=tuple(dilations))
