"""Room after the operands of CUDA's f16/bf16 contractions, on request.

IREE 3.13's CUDA code for an f16/bf16 contraction that it pads to its MMA
tiles reads up to one row past an operand whose last tile is partial (the
missing rows' threads read the row just past the end; docs/performance-journal.md,
"Reads past an operand's end"). The values read reach only dropped rows
of the result, so every number is right, but compute-sanitizer's memcheck
reports the read and then hangs, and a read past mapped memory faults.

Where the options ask for it (`LoweringOptions.operand_room`; at the edges
$IREE_BWDCONV_OPERAND_ROOM=1), `give` copies each operand of such a
contraction into a buffer one slice longer along its first dim of more
than one element (at least one row of every dim after it) and hands the
contraction a slice of that buffer. `util.optimization_barrier` keeps IREE
from folding the copy and the slice away; it also makes IREE wait on the
host for the copies before the rest of the call. So it is off by default:
it costs a copy of each operand and that wait (measured in
docs/performance-journal.md), to make the modules clean under memcheck. gfx942
needs none of it: its loads are bounded by each operand's size. A dynamic
dim (a dynamic batch) counts as one of more than one element: its room is
one slice more than the size it has at run time.

Runs on the finished linalg module in IREE's bindings (torch-mlir's have
no util dialect), as `extern_kernels.link` does.
"""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import arith, tensor

from iree_bwdconv.options import OPERAND_ROOM_VARIABLE, LoweringOptions
from iree_bwdconv.compiler.iree_ir import DYNAMIC, Size, edited, index, kept, ops_where, sizes_of

VARIABLE = OPERAND_ROOM_VARIABLE
_HALF = ("f16", "bf16")
# Named contractions the lowering may emit beside its generics.
_NAMED_PREFIXES = ("linalg.matmul", "linalg.batch_matmul", "linalg.conv")


def wanted(options: LoweringOptions) -> bool:
    """Whether a module lowered with `options` gets room."""
    return options.target == "cuda" and options.operand_room


def _is_contraction(op: ir.Operation) -> bool:
    if op.name == "linalg.generic":
        return "reduction" in str(op.attributes["iterator_types"])
    return op.name.startswith(_NAMED_PREFIXES)


def _input_count(op: ir.Operation) -> int:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[0]


def _needs_room(value: ir.Value) -> bool:
    if not isinstance(value.type, ir.RankedTensorType):
        return False
    kind = ir.RankedTensorType(value.type)
    return str(kind.element_type) in _HALF and any(size == DYNAMIC or size > 1 for size in kind.shape)


def roomy_axis(shape: list[int]) -> int:
    """The dim that gets room: the first one of more than one element or of
    a dynamic size. One slice more along it is room for a read one index
    past the end of that dim or of any dim after it."""
    return next(axis for axis, size in enumerate(shape) if size == DYNAMIC or size > 1)


def roomy_shape(shape: list[int]) -> list[int]:
    """`shape` one longer along `roomy_axis` (a dynamic size stays dynamic)."""
    axis = roomy_axis(shape)
    return [size + 1 if at == axis and size != DYNAMIC else size for at, size in enumerate(shape)]


def _with_room(value: ir.Value) -> ir.Value:
    """`value`, copied into a larger buffer that IREE keeps, sliced back."""
    kind = ir.RankedTensorType(value.type)
    shape, rank = list(kind.shape), kind.rank
    sizes = sizes_of(value)
    axis = roomy_axis(shape)
    larger_sizes: list[Size] = list(sizes)
    larger_sizes[axis] = (sizes[axis] + 1 if isinstance(sizes[axis], int)
                          else arith.AddIOp(sizes[axis], index(1)).result)
    dynamic_sizes = [size for size in sizes if not isinstance(size, int)]
    whole = ([0] * rank, shape, [1] * rank)
    larger = tensor.EmptyOp(larger_sizes, kind.element_type).result
    placed = tensor.InsertSliceOp(value, larger, [], dynamic_sizes, [], *whole).result
    return tensor.ExtractSliceOp(kind, kept(placed, larger_sizes), [], dynamic_sizes, [], *whole).result


def give(text: str) -> str:
    """`text` with every f16/bf16 operand of a contraction given room."""
    return edited(text, give_module)


def give_module(module: ir.Module) -> None:
    """`give`, on a module of IREE's bindings, in place: one copy per
    value, however many contractions read it."""
    given: list[tuple[ir.Value, ir.Value]] = []
    for op in ops_where(module, _is_contraction):
        for index in range(_input_count(op)):
            value = op.operands[index]
            if not _needs_room(value):
                continue
            roomy = next((later for earlier, later in given if earlier == value), None)
            if roomy is None:
                with ir.InsertionPoint(op):  # the first reader: every later one is dominated
                    roomy = _with_room(value)
                given.append((value, roomy))
            op.operands[index] = roomy
