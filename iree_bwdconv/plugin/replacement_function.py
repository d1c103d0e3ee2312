"""The function that replaces a zero-insertion convolution found in linalg
(`zero_insertion`), built in torch-mlir's bindings by the same plan and
grad_input forms as a transposed convolution's forward, and printed.

It reads the convolution's operands in their own layouts (NCHW or NHWC,
grouped or not), rearranges them into the [N, C, *spatial] data and
[F, C/G, *K] weight that the forms take, and puts the result back in the
convolution's layout, added to the convolution's init where that is not
zeros. The two bindings' objects do not mix, so it crosses as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from torch_mlir import ir
from torch_mlir.dialects import arith, func, linalg

from iree_bwdconv.builders import gradients, replacement
from iree_bwdconv import lowering
from iree_bwdconv.builders.contraction_forms import transpose
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.patterns import convolution_backward, convolution_backward_kernel, convolution_backward_phases
from iree_bwdconv.plan import Plan

from iree_bwdconv.plugin.convolution_layouts import BATCH, CHANNEL, FILTER, GROUP


@dataclass(frozen=True)
class InsertedConvolution:
    """A zero-insertion convolution as its replacement needs it: the plan
    of the grad_input it computes, the layouts (opdsl's letters: `nchw`,
    `fchw`, `ngchw`...), and the types of the function's operands and result.
    `data_layout` is the layout of the data inserted among the zeros, in
    which a group's channels may be merged with the group dim (`nchw` for
    an `ngchw` convolution)."""

    plan: Plan
    data_layout: str
    filter_layout: str
    output_layout: str
    data_type: str
    filter_type: str
    result_type: str
    accumulates: bool  # into an init other than zeros: the init is an operand

    @property
    def spatial(self) -> str:
        return "dhw"[3 - self.plan.spec.spatial_rank:]


def _into(value: ir.Value, layout: str, wanted: str) -> ir.Value:
    """`value`, laid out as `layout`, laid out as `wanted`. A letter that
    only one of them has is a unit dim (a depthwise filter's channels):
    added last and moved, or moved last and dropped."""
    for letter in wanted:
        if letter not in layout:
            rank = ir.RankedTensorType(value.type).rank
            value = lb.expand_axis(value, rank - 1, [lb.sizes_of(value)[-1], 1])
            layout += letter
    dropped = "".join(letter for letter in layout if letter not in wanted)
    value = transpose(value, [layout.index(letter) for letter in wanted + dropped])
    for _ in dropped:
        value = lb.collapse_dims(value, ir.RankedTensorType(value.type).rank - 2)
    return value


def _data(call: InsertedConvolution, y: ir.Value) -> ir.Value:
    """The inserted data as [N, G*C, *spatial], padded with zero rows to the
    grad_output of the plan's convolution, where the buffer ended a stride
    or more past the data."""
    if GROUP not in call.data_layout:
        data = _into(y, call.data_layout, BATCH + CHANNEL + call.spatial)
    else:
        data = lb.collapse_dims(_into(y, call.data_layout, BATCH + GROUP + CHANNEL + call.spatial), 1)
    have = ir.RankedTensorType(data.type).shape[2:]
    rows = [want - size for want, size in zip(call.plan.spec.grad_output_shape[2:], have)]
    return lb.pad(data, [0] * (2 + len(rows)), [0, 0, *rows])


def _weight(call: InsertedConvolution, filter_: ir.Value) -> ir.Value:
    """The weight of the convolution whose grad_input this is,
    [G*C, F, *K] with w[g*C + c, f, k] = filter[g, f, c, K-1-k]: the
    convolution's filter swapped in its channels and reversed in its taps."""
    grouped = GROUP in call.filter_layout
    order = (GROUP if grouped else "") + CHANNEL + FILTER + call.spatial
    weight = _into(filter_, call.filter_layout, order)
    first_tap = len(order) - len(call.spatial)
    weight = lb.flip(weight, range(first_tap, len(order)))
    return lb.collapse_dims(weight, 0) if grouped else weight


def _output(call: InsertedConvolution, grad_input: ir.Value) -> ir.Value:
    """[N, G*F, *spatial] in the convolution's output layout."""
    if GROUP not in call.output_layout:
        return _into(grad_input, BATCH + FILTER + call.spatial, call.output_layout)
    groups = call.plan.spec.groups
    split = lb.expand_axis(grad_input, 1, [groups, ir.RankedTensorType(grad_input.type).shape[1] // groups])
    return _into(split, BATCH + GROUP + FILTER + call.spatial, call.output_layout)


def _accumulated(value: ir.Value, init: ir.Value) -> ir.Value:
    """init + value, summed in f32 and rounded once to init's type."""
    rank = ir.RankedTensorType(value.type).rank
    wide = lb.element_type(gradients.ACCUMULATOR)
    identity = ir.AffineMap.get_identity(rank)
    sum_ = lb.convert(init, wide)

    @linalg.generic([value], [sum_], [identity, identity], [lb.PARALLEL] * rank)
    def result(a, acc):
        return arith.addf(acc, lb.extend(a, wide))

    return lb.convert(result, ir.RankedTensorType(init.type).element_type)


def _grad_input_builder(plan: Plan, anchor: ir.Operation) -> replacement.GradInputBuilder:
    form = plan.grad_input.form
    if plan.pattern == convolution_backward_kernel.NAME:
        return convolution_backward_kernel.builder(anchor)
    if form == "direct":
        return convolution_backward.grad_input_direct
    return convolution_backward_phases.builder(plan)


def functions_text(calls: Sequence[tuple[InsertedConvolution, str]]) -> str:
    """A module holding, for each (convolution, symbol), the private function
    `symbol(data, filter[, init])` that computes it (and the declarations
    of our CUDA kernel where a plan calls it, one per type)."""
    context = lowering.new_context()
    with context, ir.Location.unknown():
        module = ir.Module.create()
        for call, symbol in calls:
            _function(module, call, symbol)
        return str(module)


def _function(module: ir.Module, call: InsertedConvolution, symbol: str) -> None:
    types = [ir.Type.parse(text) for text in (call.data_type, call.filter_type)]
    result_type = ir.Type.parse(call.result_type)
    if call.accumulates:
        types.append(result_type)
    with ir.InsertionPoint(module.body):
        function = func.FuncOp(symbol, ir.FunctionType.get(types, [result_type]), visibility="private")
    block = function.add_entry_block()
    with ir.InsertionPoint(block):
        y, filter_ = block.arguments[0], block.arguments[1]
        build = _grad_input_builder(call.plan, function.operation)
        grad_input = replacement.grad_input_of(call.plan, build, _data(call, y), _weight(call, filter_))
        out = _output(call, grad_input)
        elem = ir.RankedTensorType(result_type).element_type
        out = _accumulated(out, block.arguments[2]) if call.accumulates else lb.convert(out, elem)
        func.ReturnOp([out])
