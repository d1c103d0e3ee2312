"""The zero-insertion form of a strided data gradient or transposed
convolution in linalg, found and replaced in IREE's bindings.

torch-mlir's TorchToLinalg, IREE's StableHLO input conversion and others
lower a strided transposed convolution (and a strided convolution's data
gradient, which is one) by inserting its data `s` apart into a tensor of
zeros (`tensor.insert_slice` with strides into a zero `linalg.fill` or
constant) and convolving that at stride 1 with the reversed kernel: `s^r`
times the multiply-adds it needs. A convolution of that form is, whatever
made its filter, the grad_input of a strided convolution
(`geometry.transposed_from_insertion` finds which), so it is replaced by a
call of the function our plan builds for that grad_input
(`replacement_function`), inlined. Anything else is left as it is, with
the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from iree.compiler import ir
from iree.compiler.dialects import func, linalg

from iree_bwdconv import geometry
from iree_bwdconv.compiler import iree_ir
from iree_bwdconv.errors import InvalidArgumentError
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import plan_transposed_forward
from iree_bwdconv.spec import make_spec

from iree_bwdconv.plugin.rewritten import Rewritten
from iree_bwdconv.plugin.convolution_layouts import BATCH, CHANNEL, FILTER, GROUP, convolution_layouts
from iree_bwdconv.plugin.replacement_function import InsertedConvolution, functions_text

DTYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16"}
SYMBOL = "iree_bwdconv_transposed"


@dataclass(frozen=True)
class Found:
    """A convolution to replace, what its replacement computes, and the
    values it reads (data, filter, and the init where it accumulates)."""

    op: ir.Operation
    call: InsertedConvolution
    operands: tuple[ir.Value, ...]


def _owner(value: ir.Value) -> Optional[ir.Operation]:
    owner = value.owner
    return owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None


def _ints(op: ir.Operation, name: str, count: int) -> list[int]:
    if name not in op.attributes:
        return [1] * count
    attr = op.attributes[name]
    return list(attr) if isinstance(attr, ir.DenseI64ArrayAttr) else \
        [int(v) for v in ir.DenseIntElementsAttr(attr)]


def _is_zero_constant(op: Optional[ir.Operation]) -> bool:
    if op is None or op.name != "arith.constant":
        return False
    value = op.attributes["value"]
    if isinstance(value, ir.FloatAttr):
        return value.value == 0.0
    if isinstance(value, ir.DenseFPElementsAttr):
        return value.is_splat and ir.FloatAttr(value.get_splat_value()).value == 0.0
    return False


def is_zeros(value: ir.Value) -> bool:
    """Whether `value` is a tensor of zeros: a zero `linalg.fill` or constant."""
    op = _owner(value)
    if op is not None and op.name == "linalg.fill":
        return _is_zero_constant(_owner(op.operands[0]))
    return _is_zero_constant(op)


def _inserted(value: ir.Value, layout: str) -> Union[tuple[ir.Operation, str], str]:
    """The strided insert_slice behind the convolution's input, and the
    layout of the data it inserts: a group's channels may have been merged
    with the group dim before the insertion and split after it (torch-mlir)."""
    op = _owner(value)
    if op is not None and op.name == "tensor.expand_shape" and GROUP in layout:
        groups = [list(ir.ArrayAttr(g)) for g in ir.ArrayAttr(op.attributes["reassociation"])]
        split = [[ir.IntegerAttr(i).value for i in g] for g in groups]
        wanted = [[i] for i in range(len(layout))]
        at = layout.index(GROUP)
        wanted[at:at + 2] = [[at, at + 1]]
        if layout[at + 1:at + 2] != CHANNEL or split != wanted:
            return "the input's groups are split from its channels in a way we do not read"
        layout = layout.replace(GROUP, "")
        op = _owner(op.operands[0])
    if op is None or op.name != "tensor.insert_slice":
        return "its input is not a tensor.insert_slice"
    return op, layout


def _same_size(insert: ir.Operation, layout: str) -> Optional[str]:
    """Why the insertion is not of the whole data into a buffer whose every
    dim but the spatial ones it fills, or None."""
    source, dest = insert.operands[0].type, insert.operands[1].type
    offsets, strides = _ints(insert, "static_offsets", 0), _ints(insert, "static_strides", 0)
    for axis, letter in enumerate(layout):
        if letter in "dhw":
            continue
        if offsets[axis] != 0 or strides[axis] != 1:
            return f"it inserts along dim {letter} at offset {offsets[axis]}, stride {strides[axis]}"
        if source.shape[axis] != dest.shape[axis] or ir.ShapedType.is_dynamic_size(source.shape[axis]):
            if not (ir.ShapedType.is_dynamic_size(source.shape[axis]) and axis == layout.index(BATCH)):
                return f"dim {letter} of the buffer ({dest.shape[axis]}) is not the data's ({source.shape[axis]})"
    if any(ir.ShapedType.is_dynamic_size(o) for o in offsets):
        return "dynamic offsets"
    if ir.ShapedType.is_dynamic_size(dest.shape[layout.index(BATCH)]) and not _batch_of_data(insert):
        return "a dynamic batch in the buffer that is not the data's"
    return None


def _batch_of_data(insert: ir.Operation) -> bool:
    """Whether the buffer's dynamic batch is the one the insertion gives
    the data: a fill of a `tensor.empty` of that same size value."""
    sizes = list(insert.operands)[2:]  # the offsets are static here: the dynamic sizes follow source and buffer
    fill = _owner(insert.operands[1])
    empty = _owner(fill.operands[1]) if fill is not None and fill.name == "linalg.fill" else None
    return (empty is not None and empty.name == "tensor.empty" and len(empty.operands) == 1 and len(sizes) >= 1
            and empty.operands[0] == sizes[0])


def find(op: ir.Operation, options: LoweringOptions) -> Union[Found, str]:
    """The replacement of a convolution of the zero-insertion form, or why it is not one we replace."""
    layouts = convolution_layouts(op)
    if isinstance(layouts, str):
        return layouts
    input_layout, filter_layout, output_layout = layouts.input, layouts.filter, layouts.output
    z, filter_, init = op.operands
    spatial = layouts.spatial
    if any(s != 1 for s in layouts.strides):
        return "a strided convolution: it inserts no zeros"
    dilation = list(layouts.dilations)
    inserted = _inserted(z, input_layout)
    if isinstance(inserted, str):
        return inserted
    insert, data_layout = inserted
    if not is_zeros(insert.operands[1]):
        return "it inserts into a tensor that is not zeros"
    why_not = _same_size(insert, data_layout)
    if why_not:
        return why_not
    source, buffer = insert.operands[0].type, insert.operands[1].type
    offsets, strides = _ints(insert, "static_offsets", 0), _ints(insert, "static_strides", 0)
    shapes = {"data": source.shape, "buffer": buffer.shape, "filter": filter_.type.shape}
    if any(ir.ShapedType.is_dynamic_size(size) for name, shape in shapes.items() for axis, size in enumerate(shape)
           if not (name != "filter" and axis == data_layout.index(BATCH))):
        return "dynamic sizes other than the batch"
    at = {letter: data_layout.index(letter) for letter in spatial}
    kernel = [filter_.type.shape[filter_layout.index(letter)] for letter in spatial]
    stride = [strides[at[letter]] for letter in spatial]
    if all(s == 1 for s in stride):
        return "it inserts at stride 1: no zeros between the data"
    padding = []
    for letter, k, s, d in zip(spatial, kernel, stride, dilation):
        found = geometry.transposed_from_insertion(offsets[at[letter]], source.shape[at[letter]],
                                                   buffer.shape[at[letter]], k, s, d)
        if found is None:
            return (f"along {letter}, offset {offsets[at[letter]]} in {buffer.shape[at[letter]]} rows is not the "
                    f"zero insertion of a transposed convolution with kernel {k}, stride {s}, dilation {d}")
        padding.append(found[0])
    dtypes = {str(t.element_type) for t in (source, filter_.type)}
    result_dtype = str(op.results[0].type.element_type)
    if len(dtypes) != 1 or not dtypes <= set(DTYPES) or result_dtype not in (*dtypes, "f32"):
        return f"element types {sorted(dtypes)} -> {result_dtype} are not ones we lower"
    dtype = dtypes.pop()
    groups = filter_.type.shape[filter_layout.index(GROUP)] if GROUP in filter_layout else 1
    # A depthwise filter has neither: one channel a group each way (a multiplier is its FILTER).
    per_group = {letter: filter_.type.shape[filter_layout.index(letter)] if letter in filter_layout else 1
                 for letter in (FILTER, CHANNEL)}
    batch = source.shape[data_layout.index(BATCH)]
    batch = None if ir.ShapedType.is_dynamic_size(batch) else batch
    outputs = [op.results[0].type.shape[output_layout.index(letter)] for letter in spatial]
    reach = [buffer.shape[at[letter]] - d * (k - 1) for letter, k, d in zip(spatial, kernel, dilation)]
    if outputs != reach:
        return f"output sizes {outputs} are not the buffer's windows {reach}"
    try:
        spec = make_spec(
            # As long as the convolution it transposes makes: past the data, zeros (the replacement pads).
            grad_output_shape=(batch, groups * per_group[CHANNEL],
                               *geometry.conv_output_size_nd(outputs, kernel, stride, padding, dilation)),
            input_shape=(batch, groups * per_group[FILTER], *outputs),
            weight_shape=(groups * per_group[CHANNEL], per_group[FILTER], *kernel),
            dtypes={"grad_output": dtype, "input": dtype, "weight": dtype}, bias_sizes=None, stride=stride,
            padding=padding, dilation=dilation, transposed=False, output_padding=[0] * len(spatial),
            groups=groups, output_mask=[True, False, False])
    except InvalidArgumentError as err:
        return f"not a convolution we lower: {err}"
    plan, _ = plan_transposed_forward(spec, options)
    accumulates = not is_zeros(init)
    call = InsertedConvolution(plan=plan, data_layout=data_layout, filter_layout=filter_layout,
                               output_layout=output_layout, data_type=str(source), filter_type=str(filter_.type),
                               result_type=str(op.results[0].type), accumulates=accumulates)
    return Found(op, call, (insert.operands[0], filter_, *((init,) if accumulates else ())))


def replace(module: ir.Module, found: list[Found], functions: str, symbols: list[str]) -> None:
    """Put the functions (`replacement_function.functions_text`) into
    `module` and call each in place of its convolution; the caller inlines."""
    parsed = ir.Module.parse(functions)
    for op in list(parsed.body.operations):
        op.operation.detach_from_parent()
        module.body.append(op.operation)
    for one, symbol in zip(found, symbols):
        with ir.InsertionPoint(one.op), one.op.location:
            call = func.CallOp([one.op.results[0].type], ir.FlatSymbolRefAttr.get(symbol), list(one.operands))
        one.op.results[0].replace_all_uses_with(call.results[0])
        producers = [_owner(value) for value in one.op.operands]
        one.op.erase()
        for producer in producers:
            _erase_unused(producer)


# Ops with no effect but their results: erased, once unused, with the
# zero-filled buffer they built.
_PURE = ("tensor.insert_slice", "tensor.expand_shape", "tensor.empty", "linalg.fill", "arith.constant")


def _erase_unused(op: Optional[ir.Operation]) -> None:
    if op is None or op.name not in _PURE or any(len(list(result.uses)) for result in op.results):
        return
    producers = [_owner(value) for value in op.operands]
    op.erase()
    for producer in producers:
        _erase_unused(producer)



def _is_convolution(op: ir.Operation) -> bool:
    """A linalg op that linalg reads as a convolution: named, depthwise or generic."""
    return op.name.startswith("linalg.") and linalg.infer_convolution_dimensions(op) is not None


INLINE = "builtin.module(inline{default-pipeline=}, symbol-dce)"


def rewrite_text(text: str, options: LoweringOptions) -> Rewritten:
    """IR after IREE's input phase with every zero-insertion convolution
    replaced, and the log of each convolution seen."""
    from iree_bwdconv import explain  # torch-mlir's side, built once something matched
    from iree_bwdconv.compiler import pipeline  # torch-mlir's side, built once something matched

    log: list[str] = []
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        found: list[Found] = []
        for op in iree_ir.ops_where(module, _is_convolution):
            one = find(op, options)
            if isinstance(one, str):
                log.append(f"kept {op.name} at {op.location}: {one}")
                continue
            found.append(one)
            log += [f"rewrote {op.name} at {op.location}: the zero-insertion form of a transposed convolution",
                    f"  transposed: the grad_input of {explain.describe_layer(one.call.plan.spec)}",
                    *explain.plan_lines(one.call.plan, options)]
        if not found:
            return Rewritten(log=log)
        symbols = [f"{SYMBOL}_{index}" for index in range(len(found))]
        replace(module, found, functions_text(list(zip((one.call for one in found), symbols))), symbols)
        text = str(module)
    return Rewritten(text=pipeline.run_iree_pipeline(text, INLINE, "inline iree-bwdconv's replacements",
                                                     repro_dir=options.repro_dir),
                     count=len(found), log=log)
