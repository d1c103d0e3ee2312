"""Calls of the package's own kernels (`kernels.catalog`,
`kernels.phase_catalog`), made into IREE `hal.dispatch.extern` ops.

The patterns build IR with torch-mlir's bindings, which have no HAL
dialect, so a pattern that hands a computation to a kernel emits a call of
a private declaration `@iree_bwdconv.kernel.*` on (weight, grad_output,
the grad_input it writes into) carrying the layer's stride and padding. `link`
runs on the finished linalg module in IREE's bindings: each such call
becomes one extern dispatch of the kernel's PTX (embedded, so the IR
compiles anywhere; the variant follows from the types and the call's
stride, padding and groups: `catalog.variant`, `phase_catalog.variant`)
whose result is its third operand written in place, and the declarations
go. The HAL attributes have no
Python builders; they are parsed from their short textual forms.
"""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import arith, hal

from iree_bwdconv.compiler.iree_ir import edited, ops_where
from iree_bwdconv.kernels import catalog, phase_catalog

PREFIX = "iree_bwdconv.kernel."
STRIDE = "iree_bwdconv.stride"
PADDING = "iree_bwdconv.padding"
GROUPS = "iree_bwdconv.groups"
# The executable target the PTX is keyed by: the CUDA target of
# `pipeline.TARGET_FLAGS`.
CUDA_TARGET = '#hal.executable.target<"cuda", "cuda-nvptx-fb", {target_arch = "sm_80"}>'


def symbol(name: str) -> str:
    return PREFIX + name


def _is_kernel(op, name_attribute: str) -> bool:
    """Whether `op` declares (`sym_name`) or calls (`callee`) a kernel."""
    name = op.attributes[name_attribute] if name_attribute in op.attributes else None
    return name is not None and str(name).strip('"@').startswith(PREFIX)


def declares_kernels(module) -> bool:
    """Whether `module` (in either binding's IR) declares a kernel."""
    return any(_is_kernel(op, "sym_name") for op in module.body.operations)


def calls_kernels(text: str) -> bool:
    """Whether a module's text has anything for `link` to do."""
    return PREFIX in text


def link(text: str) -> str:
    """`text` with every kernel call made an extern dispatch (unchanged
    where it has none)."""
    return edited(text, link_module) if calls_kernels(text) else text


def link_module(module: ir.Module) -> None:
    """`link`, on a module of IREE's bindings, in place."""
    declarations = [op for op in module.body.operations if _is_kernel(op, "sym_name")]
    for call in ops_where(module, lambda op: op.name == "func.call" and _is_kernel(op, "callee")):
        _replace(call)
    for declaration in declarations:
        declaration.operation.erase()


def _ints(attr: ir.Attribute) -> list[int]:
    return list(ir.DenseI64ArrayAttr(attr))


def _replace(call: ir.Operation) -> None:
    weight, grad_output, init = call.operands
    dx_type = ir.RankedTensorType(call.results[0].type)
    dy_shape = ir.RankedTensorType(grad_output.type).shape
    weight_shape = ir.RankedTensorType(weight.type).shape
    batch, in_channels, out_channels = dx_type.shape[0], dx_type.shape[1], weight_shape[0]
    input_size, output_size = dx_type.shape[2:], dy_shape[2:]
    stride, padding = _ints(call.attributes[STRIDE]), _ints(call.attributes[PADDING])
    dtype = str(dx_type.element_type)
    if str(call.attributes["callee"]).strip('"@').startswith(symbol(phase_catalog.KERNEL)):
        arguments = phase_catalog.arguments(ir.IntegerAttr(call.attributes[GROUPS]).value, in_channels,
                                            out_channels, input_size, output_size, weight_shape[2:], stride, padding)
        variant = phase_catalog.variant(dtype, arguments)
        # (positions, channels, images) as the count region takes them: a phase's, a group's, and every
        # image's groups and phases
        sizes = (phase_catalog.largest_phase(arguments), arguments[phase_catalog.ARGUMENTS.index("CG")],
                 phase_catalog.grid_z(batch, arguments))
    else:
        arguments = catalog.arguments(in_channels, out_channels, input_size, output_size, stride, padding)
        variant = catalog.variant(dtype, arguments)
        sizes = (arguments[catalog.ARGUMENTS.index("OHW")], in_channels, batch)
    index, i32 = ir.IndexType.get(), ir.IntegerType.get_signless(32)
    with ir.InsertionPoint(call), call.location:
        constants = [arith.ConstantOp(i32, value).result for value in arguments]
        workload = [arith.ConstantOp(index, value).result for value in sizes]
        dispatch = hal.DispatchExternOp(
            [dx_type], variant.name, workload, [*constants, weight, grad_output, init], [], [],
            _layout(len(arguments)), [ir.Attribute.parse(CUDA_TARGET)],
            ir.ArrayAttr.get([ir.IntegerAttr.get(index, 0)]), [ir.ArrayAttr.get([_object(variant)])], 1,
            workgroup_size=ir.ArrayAttr.get([ir.IntegerAttr.get(index, v) for v in variant.workgroup_size]),
            subgroup_size=ir.IntegerAttr.get(index, 32),
            workgroup_local_memory=ir.IntegerAttr.get(index, variant.shared_memory),
            tied_operands=ir.ArrayAttr.get([ir.IntegerAttr.get(index, len(constants) + 2)]),
        )
        _count_region(dispatch, variant)
    call.results[0].replace_all_uses_with(dispatch.results[0])
    call.erase()


def _layout(constants: int) -> ir.Attribute:
    """Bindings w and dy read-only, then dx (read and written: where the
    kernel writes only values, the zeros it comes in with stay in the
    gaps a stride leaves); `constants` i32 push constants."""
    read = "#hal.pipeline.binding<storage_buffer, ReadOnly>"
    return ir.Attribute.parse(
        f"#hal.pipeline.layout<constants = {constants}, bindings = [{read}, {read}, "
        "#hal.pipeline.binding<storage_buffer>]>")


def _object(variant: catalog.Variant) -> ir.Attribute:
    data = variant.ptx.read_bytes()
    return ir.Attribute.parse(
        f'#hal.executable.object<{{path = "{variant.ptx.name}", '
        f'data = dense<"0x{data.hex().upper()}"> : vector<{len(data)}xi8>}}>')


def _count_region(dispatch: hal.DispatchExternOp, variant: catalog.Variant) -> None:
    """Workgroups from the workload: (position tiles, channel tiles, images)."""
    index = ir.IndexType.get()
    block = dispatch.regions[0].blocks.append(ir.Type.parse("!hal.device"), index, index, index)
    with ir.InsertionPoint(block):
        positions, channels, images = block.arguments[1:]
        tiles = [_ceil_div(positions, variant.block_positions), _ceil_div(channels, variant.block_channels)]
        hal.ReturnOp([*tiles, images])


def _ceil_div(value: ir.Value, divisor: int) -> ir.Value:
    index = ir.IndexType.get()
    return arith.CeilDivUIOp(value, arith.ConstantOp(index, divisor).result).result
