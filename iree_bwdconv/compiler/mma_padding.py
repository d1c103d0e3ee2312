"""The f16/bf16 contractions whose CUDA code from IREE 3.13 reads past the
end of an operand, and the same contractions widened to f32 instead.

Where a contraction's dims are not multiples of the MMA intrinsic's, IREE
pads each workgroup's tiles (`padding = [...]` in its lowering config).
Its loads of a padded tile clamp an index of a padded dim to the dim's
size, one past its last element, and mask only the innermost dim of the
load: where the padded dim is an outer dim of the operand, the padded rows
read a row past the operand's end. The values are discarded, but where the
operand ends a mapping the kernel dies with CUDA_ERROR_ILLEGAL_ADDRESS and
takes the process's CUDA context with it (an H200, 2026-11-28: a 1x1
stride-2 f16 layer of 60 channels, ours and upstream alike; the same
layer with 64 ran). Innermost dims are masked and safe.

`overreads` finds such contractions in what IREE wrote: its configured
executables (`--iree-hal-dump-executable-configurations-to`), where its
choice of padding is, and its PTX (`--iree-hal-dump-executable-binaries-to`),
where the clamp is. `widened` gives the same contractions an f32 operand
in the module handed to iree-compile, which IREE computes without MMA
intrinsics and so without padding (`pipeline` compiles once more with
them, and refuses a module whose overreads remain). One f32 operand is
enough: no MMA intrinsic takes f16 with f32, and the other operands keep
their f16 reads, widened in the contraction's own body. Widening every
operand copied each into f32 in a dispatch of its own; on the H200 the
copies of a g32 3x3 s2 layer's phase windows took 4.8 of its 11.9 ms.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from iree.compiler import ir
from iree.compiler.dialects import arith, flow, linalg, tensor
from iree.compiler.passmanager import PassManager

from iree_bwdconv.compiler import iree_ir

_PADDING = re.compile(r"padding = \[([0-9, ]+)\]")


@dataclass(frozen=True)
class Overread:
    """A dispatch's contraction that pads dims which an operand holds outside its innermost."""

    dispatch: str
    extents: tuple[int, ...]  # the contraction's loop extents in the dispatch
    tiles: tuple[int, ...]  # IREE's padding: each loop's tile (0: not padded)
    dims: tuple[int, ...]  # the padded dims read as an operand's outer dims
    reduction: int = 0  # the product of the reduction loops' extents

    @property
    def key(self) -> tuple[int, int]:
        """What finds the source's contraction: IREE folds unit dims and
        collapses contiguous ones before it forms dispatches, which keeps
        the products of all the extents and of the reduction's alone."""
        return math.prod(self.extents), self.reduction

    def __str__(self) -> str:
        return (f"{self.dispatch}: loops {list(self.extents)} padded to tiles {list(self.tiles)}; "
                f"padded loop dims {list(self.dims)} are outer dims of an operand")


def loop_extents(op: ir.Operation) -> Optional[list[int]]:
    """A linalg op's static loop extents, read off its operands' shapes; None where one is unknown."""
    maps = iree_ir.indexing_maps(op)
    extents: list[Optional[int]] = [None] * maps[0].n_dims
    for operand, affine_map in zip(op.operands, maps):
        if not isinstance(operand.type, ir.ShapedType) or not ir.ShapedType(operand.type).has_static_shape:
            continue
        for size, expr in zip(ir.ShapedType(operand.type).shape, affine_map.results):
            if isinstance(expr, ir.AffineDimExpr):
                extents[expr.position] = size
    return None if None in extents else extents  # type: ignore[return-value]


def reduction_size(op: ir.Operation, extents: Sequence[int]) -> int:
    """The product of a linalg op's reduction loops' extents (0 where the
    op names no iterator types: a named op, which matches nothing)."""
    if "iterator_types" not in op.attributes:
        return 0
    kinds = [str(kind) for kind in ir.ArrayAttr(op.attributes["iterator_types"])]
    return math.prod(extent for extent, kind in zip(extents, kinds) if "reduction" in kind)


def outer_dims(op: ir.Operation) -> set[int]:
    """The loop dims that index an input anywhere but its innermost dim."""
    inputs = len(op.operands) - len(op.results)
    return {expr.position for affine_map in iree_ir.indexing_maps(op)[:inputs] for expr in affine_map.results[:-1]
            if isinstance(expr, ir.AffineDimExpr)}


def _function_name(op: ir.Operation) -> str:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return ir.StringAttr(parent.attributes["sym_name"]).value if parent is not None else "?"


def _padded(op: ir.Operation) -> bool:
    return (op.name.startswith("linalg.") and "indexing_maps" in op.attributes
            and "lowering_config" in op.attributes and "padding = [" in str(op.attributes["lowering_config"]))


_ENTRY = re.compile(r"^\.visible \.entry (\w+)\(", re.MULTILINE)
_CLAMP = re.compile(r"\bmin\.[us](?:32|64)\s+%\w+, %\w+, (\d+);")


def clamp_bounds(ptx: str) -> dict[str, set[int]]:
    """Each kernel of IREE's PTX: the constants its indices are clamped to
    (`min.u32 %r6, %r35, 60;`)."""
    starts = [(match.start(), match.group(1)) for match in _ENTRY.finditer(ptx)]
    bounds = {}
    for (begin, name), (end, _) in zip(starts, [*starts[1:], (len(ptx), "")]):
        bounds[name] = {int(c) for c in _CLAMP.findall(ptx, begin, end)}
    return bounds


def _suspects(extents: Sequence[int], tiles: Sequence[int], outer: set[int]) -> tuple[tuple[int, ...], set[int]]:
    """The padded loop dims that an operand holds outside its innermost,
    and the bounds a read past its end clamps to: the dim's extent where
    one tile holds it, the tile where several do. Where IREE pads a
    convolution's implicit GEMM, whose loops are not the op's, every outer
    dim is a suspect."""
    if len(tiles) != len(extents):
        dims = tuple(sorted(outer))
        return dims, {extents[d] for d in dims}
    dims = tuple(d for d in sorted(outer) if tiles[d] and extents[d] % tiles[d])
    return dims, {extents[d] for d in dims} | {tiles[d] for d in dims if extents[d] > tiles[d]}


def overreads(configured: str, bounds: dict[str, set[int]]) -> list[Overread]:
    """The contractions of one configured executable that IREE pads along
    an operand's outer dim and whose kernel (`bounds`, from its PTX)
    clamps an index to that dim's bound, as the code that reads past the
    end does. Padding alone is not enough: where one tile holds the whole
    dim and the reduction needs none, IREE loads it whole, and memcheck
    found nothing (`benchmarks/overread_repro.py`)."""
    found = []
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(configured)
        for op in iree_ir.ops_where(module, _padded):
            match = _PADDING.search(str(op.attributes["lowering_config"]))
            extents = loop_extents(op)
            if match is None or extents is None:
                continue
            tiles = [int(t) for t in match.group(1).split(",")]
            dims, suspect_bounds = _suspects(extents, tiles, outer_dims(op))
            name = _function_name(op)
            if dims and suspect_bounds & bounds.get(name, set()):
                found.append(Overread(name, tuple(extents), tuple(tiles), dims, reduction_size(op, extents)))
    return found


def overreads_in(configured: Path, binaries: Path, since: float = 0.0) -> list[Overread]:
    """Every such contraction of one compile: its configured executables
    (`--iree-hal-dump-executable-configurations-to`) and PTX
    (`--iree-hal-dump-executable-binaries-to`) written at `since` or later."""
    bounds: dict[str, set[int]] = {}
    for path in sorted(binaries.glob("*.ptx")):
        if path.stat().st_mtime >= since:
            bounds.update(clamp_bounds(path.read_text()))
    paths = sorted(path for path in configured.glob("*.mlir") if path.stat().st_mtime >= since)
    return [found for path in paths for found in overreads(path.read_text(), bounds)]


_HALF = ("f16", "bf16")


def _is_half(value: ir.Value) -> bool:
    return isinstance(value.type, ir.ShapedType) and str(ir.ShapedType(value.type).element_type) in _HALF


def _widening_producer(value: ir.Value) -> Optional[ir.Operation]:
    """The op that makes `value` an f32 copy of f16/bf16 data and nothing
    else (torch-mlir's f32 matmul of f16 tensors reads such copies), which
    IREE fuses into the contraction's dispatch: there it reads f16 again."""
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)) or owner.name != "linalg.generic":
        return None
    owner = owner.operation
    inputs = owner.operands[:len(owner.operands) - len(owner.results)]
    body = [op.name for op in owner.regions[0].blocks[0].operations]
    if len(owner.results) == 1 and inputs and all(_is_half(v) for v in inputs) and body == ["arith.extf", "linalg.yield"]:
        return owner
    return None


def _widenable(op: ir.Operation, keys: set[tuple[int, int]]) -> bool:
    if op.name != "linalg.generic" or len(op.operands) - len(op.results) < 2:
        return False
    if any(len(body_op.regions) for body_op in op.regions[0].blocks[0].operations):
        return False
    inputs = op.operands[:len(op.operands) - len(op.results)]
    if not any(_is_half(v) or _widening_producer(v) is not None for v in inputs):
        return False
    extents = loop_extents(op)
    return extents is not None and (math.prod(extents), reduction_size(op, extents)) in keys


def _apart(producer: ir.Operation) -> ir.Value:
    """`producer`'s result made again in a dispatch of its own, where IREE
    cannot fuse it into its consumer."""
    region = flow.DispatchRegionOp([producer.results[0].type], [], [], ip=ir.InsertionPoint(producer))
    with ir.InsertionPoint(region.regions[0].blocks.append()):
        clone = producer.clone()
        flow.ReturnOp([clone.results[0]])
    return region.results[0]


def _extended(value: ir.Value) -> ir.Value:
    """`value` (a static f16/bf16 tensor) as f32, by an elementwise generic
    in a dispatch of its own: fused into a convolution's dispatch, IREE
    3.13's f32 code for the window failed to bufferize."""
    shaped = ir.RankedTensorType(value.type)
    f32 = ir.F32Type.get()
    wide = ir.RankedTensorType.get(shaped.shape, f32)
    region = flow.DispatchRegionOp([wide], [], [])
    with ir.InsertionPoint(region.regions[0].blocks.append()):
        identity = ir.AffineMap.get_identity(shaped.rank)
        init = tensor.EmptyOp(shaped.shape, f32).result
        op = linalg.GenericOp([wide], [value], [init], ir.ArrayAttr.get([ir.AffineMapAttr.get(identity)] * 2),
                              ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * shaped.rank))
        block = op.regions[0].blocks.append(shaped.element_type, f32)
        with ir.InsertionPoint(block):
            linalg.YieldOp([arith.extf(f32, block.arguments[0])])
        flow.ReturnOp([op.result])
    return region.results[0]


def _to_widen(inputs: Sequence[ir.Value], every: bool) -> list[bool]:
    """Which of a contraction's inputs are read as f32: every f16/bf16 one
    (`every`), or the f16/bf16 one of fewest elements (a convolution's
    weight), which alone keeps IREE from its MMA code."""
    half = [_is_half(v) for v in inputs]
    if every or not any(half):
        return half
    smallest = min((math.prod(ir.ShapedType(v.type).shape), i) for i, v in enumerate(inputs) if half[i])[1]
    return [i == smallest for i in range(len(inputs))]


def _widen(op: ir.Operation, every: bool) -> None:
    """`op` anew with its f16/bf16 inputs read as f32 (`_to_widen`): where
    its body widened them to f32 it reads the f32 operand, elsewhere it
    rounds it back to its own type (exactly), so it computes the same
    values. An f32 input that is only a copy of f16 data is made in a
    dispatch of its own."""
    count = len(op.operands) - len(op.results)
    inputs, outputs = list(op.operands[:count]), list(op.operands[count:])
    for position, value in enumerate(inputs):
        producer = _widening_producer(value)
        if producer is not None:
            op.operands[position] = inputs[position] = _apart(producer)
    old_block = op.regions[0].blocks[0]
    with ir.InsertionPoint(op):
        wide = _to_widen(inputs, every)
        new_inputs = [_extended(v) if w else v for v, w in zip(inputs, wide)]
        new = linalg.GenericOp([r.type for r in op.results], new_inputs, outputs,
                               op.attributes["indexing_maps"], op.attributes["iterator_types"])
        types = [ir.F32Type.get() if w else arg.type for arg, w in zip(old_block.arguments, wide)]
        block = new.regions[0].blocks.append(*types, *(arg.type for arg in list(old_block.arguments)[count:]))
        with ir.InsertionPoint(block):
            mapping = {}
            widened_args = {}
            for index, (old, arg) in enumerate(zip(old_block.arguments, block.arguments)):
                if index < count and wide[index]:
                    widened_args[old] = arg
                else:
                    mapping[old] = arg
            for body_op in old_block.operations:
                # The body's own widening of an operand reads the f32 operand
                # itself: the body is then a plain f32 contraction's.
                if (body_op.name == "arith.extf" and body_op.operands[0] in widened_args
                        and body_op.results[0].type == ir.F32Type.get()):
                    mapping[body_op.results[0]] = widened_args[body_op.operands[0]]
                    continue
                for operand in body_op.operands:
                    if operand in widened_args and operand not in mapping:
                        mapping[operand] = arith.truncf(operand.type, widened_args[operand])
                clone = body_op.clone()
                for position, operand in enumerate(clone.operands):
                    if operand in mapping:
                        clone.operands[position] = mapping[operand]
                for old_result, new_result in zip(body_op.results, clone.results):
                    mapping[old_result] = new_result
    for old_result, new_result in zip(op.results, new.results):
        old_result.replace_all_uses_with(new_result)
    op.erase()


def linalg_ops(module: ir.Module) -> list[ir.Operation]:
    """The linalg ops of a module's functions, in order (not those of a body)."""
    return iree_ir.ops_where(module, lambda op: op.name.startswith("linalg.") and op.parent is not None
                             and op.parent.name in ("func.func", "util.func"))


def as_generic(op: ir.Operation, generic: ir.Operation) -> ir.Operation:
    """A named op replaced by its generic form (`generic`, from a copy of
    its module), reading the named op's operands."""
    clone = generic.clone(ip=ir.InsertionPoint(op))
    for position, operand in enumerate(op.operands):
        clone.operands[position] = operand
    for old_result, new_result in zip(op.results, clone.results):
        old_result.replace_all_uses_with(new_result)
    op.erase()
    return clone


def generalized_ops(module: ir.Module) -> tuple[ir.Module, list[tuple[ir.Operation, ir.Operation]]]:
    """Each linalg op of `module` beside its generic form, which lives in
    the copy of the module returned first (keep it while the generics are
    read; `as_generic` puts one in its op's place). Only the ops that a
    rewrite takes become generics: generalized, IREE 3.13 failed to compile
    a depthwise convolution."""
    generalized = ir.Module.parse(str(module))
    # util.func too: IREE's input phase (iree-bwdconv-compile) turns functions into them.
    generalize = "linalg-generalize-named-ops"
    PassManager.parse(f"builtin.module(func.func({generalize}), util.func({generalize}))").run(generalized.operation)
    # The pass erases ops whose results nobody reads: they are left out of the pairs.
    ops = [op for op in linalg_ops(module) if any(True for result in op.results for _ in result.uses)]
    generics = linalg_ops(generalized)
    if len(ops) != len(generics):
        return generalized, [(op, op) for op in ops if op.name == "linalg.generic"]
    return generalized, list(zip(ops, generics))


def widened(text: str, found: Sequence[Overread], every: bool = False) -> str:
    """`text` with every f16/bf16 contraction whose loops run as many
    iterations, and as many in their reduction, as one of `found` given
    one f32 operand (`_to_widen`), or every f16/bf16 one read as f32 where
    `every` (a named op made a generic first; another of the same counts
    too, which costs time, not numbers). `text` itself where none is
    widened, or where it is not IR these bindings read (a torch-dialect
    module, for IREE's own input)."""
    keys = {overread.key for overread in found}
    if not keys:
        return text
    with ir.Context(), ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError:
            return text
        _copy, pairs = generalized_ops(module)
        chosen = [(op, generic) for op, generic in pairs if _widenable(generic, keys)]
        for op, generic in chosen:
            _widen(op if op.name == "linalg.generic" else as_generic(op, generic), every)
        return str(module) if chosen else text
