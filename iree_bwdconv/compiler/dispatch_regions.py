"""Dispatches we form ourselves: a marked `tensor.insert_slice` and the ops
that compute what it inserts, wrapped in one `flow.dispatch.region`.

Left to itself, IREE 3.13 makes a strided insert of a contraction's result
into a fresh tensor a copy dispatch of its own (`slow_memcpy`), and a
`tensor.pad` that feeds the contraction another, unless a module-wide flag
fuses every pad into its consumer (which slowed forward convolutions
elsewhere: docs/performance-journal.md, "IREE's pad handling"). A region
formed in the input keeps them together: IREE ties the region's result to
the tensor inserted into, stores the contraction's tiles straight into it
with the stride, and reads the padded window with bounded loads. Stride
phases each in such a region write grad_input with no weave and no padded
copy of dy (`plan.grad_input.phase_stored_in_place`).

Builders mark the insert (`MARK`) in torch-mlir's bindings, which have no
flow dialect; `wrap_module` runs on the finished linalg module in IREE's,
as `extern_kernels.link` does. The marked IR is whole without its
regions: where they are not formed it computes the same numbers in
dispatches of IREE's making. The regions keep the mark, so that `unwrap`
can take them apart again for a target that cannot compile them.
"""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import flow, tensor

from iree_bwdconv.compiler.iree_ir import DYNAMIC, edited, index, ops_where

MARK = "iree_bwdconv.own_dispatch"
# Cheap to recompute: copied into each region that reads them rather than
# read from memory (an init of zeros that CSE shares between phases, say).
_COPIED = ("arith.constant", "tensor.empty", "linalg.fill")
# What a region takes besides: views and pads of its operands, and linalg
# ops that read them, but for gathers (a generic that reads through
# `tensor.extract`, a tap table say), which stay dispatches of their own
# as IREE makes them: inside, each tile would gather again, and IREE's CPU
# code failed to compile a phase's table gathered in its region.
_VIEWS = ("tensor.pad", "tensor.extract_slice", "tensor.expand_shape", "tensor.collapse_shape")


def marked(text: str) -> bool:
    """Whether a module's text has anything for `wrap_module` to do."""
    return MARK in text


def wrap(text: str) -> str:
    """`text` with every marked insert wrapped in a dispatch region of its
    own (unchanged where none is marked)."""
    return edited(text, wrap_module) if marked(text) else text


def wrap_module(module: ir.Module) -> None:
    """`wrap`, on a module of IREE's bindings, in place."""
    for insert in ops_where(module, lambda op: op.name == "tensor.insert_slice" and MARK in op.attributes):
        _wrap(insert)


def _wrap(insert: ir.Operation) -> None:
    members = _members(insert)
    result, dest = insert.results[0], insert.operands[1]
    with ir.InsertionPoint(insert), insert.location:
        sizes = [tensor.DimOp(dest, index(axis)).result
                 for axis, size in enumerate(ir.RankedTensorType(result.type).shape) if size == DYNAMIC]
        region = flow.DispatchRegionOp([result.type], sizes, [])
    result.replace_all_uses_with(region.results[0])
    body = region.regions[0].blocks.append()
    with ir.InsertionPoint(body), insert.location:
        returned = flow.ReturnOp([result])
    for op in members:
        op.move_before(returned)
    _copy_cheap_producers(members, region.operation)
    del insert.attributes[MARK]
    region.operation.attributes[MARK] = ir.UnitAttr.get()


def unwrap(text: str) -> str:
    """`text` with each region of ours dissolved, its ops back in the
    enclosing block: IREE's CPU code fails on some of them (IREE fault
    `cpu_pad_fused_grouped_conv`), and the CPU's forms never ask for them;
    only the GPU forms checked on the CPU carry them there."""
    return edited(text, unwrap_module) if marked(text) else text


def unwrap_module(module: ir.Module) -> None:
    """`unwrap`, on a module of IREE's bindings, in place."""
    for region in ops_where(module, lambda op: op.name == "flow.dispatch.region" and MARK in op.attributes):
        body = region.regions[0].blocks[0]
        returned = body.operations[len(body.operations) - 1]
        for op in list(body.operations)[:-1]:
            op.move_before(region)
        for result, value in zip(region.results, returned.operands):
            result.replace_all_uses_with(value)
        region.erase()


def _members(insert: ir.Operation) -> list[ir.Operation]:
    """The insert and every producer of what it inserts that nothing
    outside the region uses, in block order. The destination is left out:
    the region's result is tied to it."""
    block_ops = _positions(insert)
    taken = {insert}
    changed = True
    while changed:
        changed = False
        for op in list(taken):
            operands = list(op.operands)
            if op == insert:
                operands = operands[:1] + operands[2:]
            for producer in (_producer(value, block_ops) for value in operands):
                if producer is None or producer in taken or not _takes(producer):
                    continue
                users = (_ancestor(use.owner, block_ops) for result in producer.results for use in result.uses)
                if all(user in taken for user in users):
                    taken.add(producer)
                    changed = True
    return sorted(taken, key=block_ops.__getitem__)


def _takes(op: ir.Operation) -> bool:
    """Whether a region takes `op` where nothing outside it uses it."""
    if op.name in _VIEWS:
        return True
    if not op.name.startswith("linalg.") or op.name == "linalg.fill":
        return False
    body = [inner.operation.name for block in op.regions[0].blocks for inner in block.operations] if op.regions else []
    return "tensor.extract" not in body and len(op.operands) > 1


def _positions(insert: ir.Operation) -> dict[ir.Operation, int]:
    """The ops of the block that holds `insert`, by position."""
    return {op.operation: i for i, op in enumerate(insert.block.operations)}


def _producer(value: ir.Value, block_ops: dict[ir.Operation, int]):
    """The op of the block that defines `value`; None for a block argument
    or a value from further out."""
    owner = value.owner
    op = getattr(owner, "operation", None)
    return op if op in block_ops else None


def _ancestor(user, block_ops: dict[ir.Operation, int]):
    """The op of the block that holds `user` (the user itself, or the op
    whose region it is nested in)."""
    op = user.operation
    while op is not None and op not in block_ops:
        parent = op.parent
        op = parent.operation if parent is not None else None
    return op


def _copy_cheap_producers(members: list[ir.Operation], region: ir.Operation) -> None:
    """Give the region its own copy of each cheap producer, view or pad it
    reads from outside (`_outside_cheap`), with the ones that one reads in
    turn; the insert's destination is left as it is."""
    first = members[0]
    copies: dict[ir.Operation, ir.Operation] = {}

    def copy_of(op: ir.Operation) -> ir.Operation:
        if op not in copies:
            inner = [copy_of(v.owner.operation) if _outside_cheap(v, region) else None for v in op.operands]
            clone = op.clone(ip=ir.InsertionPoint(first))
            for position, found in enumerate(inner):
                if found is not None:
                    clone.operands[position] = found.results[0]
            copies[op] = clone.operation
        return copies[op]

    insert = members[-1]
    for op in members:
        for position, value in enumerate(op.operands):
            tied = op == insert and position == 1  # the destination stays what the result is tied to
            if _outside_cheap(value, region) and not tied:
                op.operands[position] = copy_of(value.owner.operation).results[0]


def _outside_cheap(value: ir.Value, region: ir.Operation) -> bool:
    """Whether `value` comes from an op outside `region` that the region
    copies: a cheap producer, or a view or pad that others read too (two
    phases whose windows are the same pad, merged by CSE)."""
    op = getattr(value.owner, "operation", None)
    return op is not None and op.name in _COPIED + _VIEWS and op.parent == region.parent
