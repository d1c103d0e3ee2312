"""Windowed inputs cropped to the span their windows read, where IREE would
otherwise refuse the module (`iree_faults.UNIT_WINDOW_FOLD`).

IREE 3.13 folds every loop of extent 1 away before it forms dispatches. A
convolution or a pooling with one output position along a dim reads its
input there at `o*s + k*d` with o = 0, which becomes `k` alone where d = 1;
IREE then takes the window's extent from the input, and an input longer
than the window (a 3x3 stride-2 window over 4 columns reads 3 of them)
makes iree-compile fail ("inferred input/output operand #1 has shape's
dimension #3 to be 4, but found 3"). torch-mlir's named convolutions and
poolings, and our own generics, all meet it; the gradients already read
exact spans (`geometry.window_padding`).

`crop` slices such an input to exactly the positions read, for the named
convolutions and poolings with channels first that torch-mlir makes and
for any `linalg.generic`. `pipeline` runs it on every module it compiles;
a module without such a read comes back as it was.
"""

from __future__ import annotations

from typing import Optional, Sequence

from iree.compiler import ir
from iree.compiler.dialects import tensor

from iree_bwdconv.compiler.iree_ir import DYNAMIC, indexing_maps, ops_where, sizes_of

_WINDOWED_NAMED = ("linalg.conv_", "linalg.depthwise_conv_", "linalg.pooling_")


def _linear(expr: ir.AffineExpr) -> Optional[tuple[dict[int, int], int]]:
    """`expr` as {dim: coefficient} and a constant, where it is a sum of
    dims times constants; None otherwise."""
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position: 1}, 0
    if isinstance(expr, ir.AffineConstantExpr):
        return {}, expr.value
    if isinstance(expr, ir.AffineMulExpr) and isinstance(expr.rhs, ir.AffineConstantExpr):
        inner = _linear(expr.lhs)
        if inner is None:
            return None
        return {dim: c * expr.rhs.value for dim, c in inner[0].items()}, inner[1] * expr.rhs.value
    if isinstance(expr, ir.AffineAddExpr):
        left, right = _linear(expr.lhs), _linear(expr.rhs)
        if left is None or right is None:
            return None
        terms = dict(left[0])
        for dim, c in right[0].items():
            terms[dim] = terms.get(dim, 0) + c
        return terms, left[1] + right[1]
    return None


def span_after_folding(terms: dict[int, int], constant: int, extents: Sequence[Optional[int]]) -> Optional[int]:
    """The positions an operand dim read at `sum(c * d) + constant` spans,
    where IREE's folding of the unit loops leaves one loop alone with
    coefficient 1 (the case where it takes that loop's extent from the
    operand); None where it does not, or where an extent is unknown."""
    kept = {dim: c for dim, c in terms.items() if extents[dim] != 1}
    if len(kept) != 1 or next(iter(kept.values())) != 1 or constant < 0:
        return None
    if any(extents[dim] is None or c < 0 for dim, c in terms.items()):
        return None
    return constant + sum(c * (extents[dim] - 1) for dim, c in terms.items()) + 1


def _generic_crops(op: ir.Operation) -> list[tuple[int, list[int]]]:
    """(input operand, its cropped sizes) of a generic's inputs read past
    what their windows reach."""
    maps = indexing_maps(op)
    # A scalar operand (an f32 `ins`) has a map of no results and no shape.
    shapes = [list(operand.type.shape) if isinstance(operand.type, ir.RankedTensorType) else []
              for operand in op.operands]
    extents: list[Optional[int]] = [None] * maps[0].n_dims
    for affine_map, shape in zip(maps, shapes):
        for expr, size in zip(affine_map.results, shape):
            if isinstance(expr, ir.AffineDimExpr) and size != DYNAMIC and extents[expr.position] is None:
                extents[expr.position] = size
    inputs = len(op.operands) - len(op.results)
    crops = []
    for index in range(inputs):
        sizes = shapes[index]
        cropped = list(sizes)
        for axis, expr in enumerate(maps[index].results):
            linear = _linear(expr)
            span = span_after_folding(*linear, extents) if linear and not isinstance(expr, ir.AffineDimExpr) else None
            if span is not None and sizes[axis] != DYNAMIC and span < sizes[axis]:
                cropped[axis] = span
        if cropped != sizes:
            crops.append((index, cropped))
    return crops


def _layout(name: str) -> Optional[str]:
    """The input layout of a named convolution or pooling ("nchw",
    "ngchw", ...), where its channels come first."""
    for token in name.removeprefix("linalg.").split("_"):
        if token.startswith("nc") or token.startswith("ngc"):
            return token
    return None


def _named_crops(op: ir.Operation) -> list[tuple[int, list[int]]]:
    """The same for a named convolution or pooling with channels first:
    input, window and output with their spatial dims last."""
    if _layout(op.name) is None or "strides" not in op.attributes or "dilations" not in op.attributes:
        return []
    strides = list(ir.DenseIntElementsAttr(op.attributes["strides"]))
    dilations = list(ir.DenseIntElementsAttr(op.attributes["dilations"]))
    rank = len(strides)
    source, window, output = (list(operand.type.shape) for operand in op.operands[:3])
    cropped = list(source)
    for i, (s, d) in enumerate(zip(strides, dilations)):
        axis = len(source) - rank + i
        extents = [output[len(output) - rank + i], window[len(window) - rank + i]]
        if DYNAMIC in extents:
            continue
        span = span_after_folding({0: s, 1: d}, 0, extents)
        if span is not None and source[axis] != DYNAMIC and span < source[axis]:
            cropped[axis] = span
    return [(0, cropped)] if cropped != source else []


def _crops(op: ir.Operation) -> list[tuple[int, list[int]]]:
    if op.name == "linalg.generic":
        return _generic_crops(op)
    if op.name.startswith(_WINDOWED_NAMED):
        return _named_crops(op)
    return []


def _cropped(value: ir.Value, sizes: list[int]) -> ir.Value:
    """The leading `sizes` of `value` (a dynamic size kept as it is)."""
    kept = [size if size != DYNAMIC else whole for size, whole in zip(sizes, sizes_of(value))]
    dynamic = [size for size in kept if not isinstance(size, int)]
    static = [size if isinstance(size, int) else DYNAMIC for size in kept]
    result_type = ir.RankedTensorType.get(static, value.type.element_type)
    rank = len(static)
    return tensor.ExtractSliceOp(result_type, value, [], dynamic, [], [0] * rank, static, [1] * rank).result


def crop(text: str) -> str:
    """`text` with every input that IREE would refuse cropped to its
    windows' span; `text` itself where there is none."""
    if "linalg." not in text:
        return text
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        edits = [(op, found) for op in ops_where(module, lambda op: bool(_crops(op))) for found in [_crops(op)]]
        for op, found in edits:
            with ir.InsertionPoint(op):
                for index, sizes in found:
                    op.operands[index] = _cropped(op.operands[index], sizes)
        return str(module) if edits else text
