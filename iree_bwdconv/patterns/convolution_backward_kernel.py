"""aten.convolution_backward whose grad_input one of our own CUDA kernels
computes, the other gradients as everywhere else: an ungrouped 1x1
kernel's in f16/bf16 (`iree_bwdconv.kernels.catalog`, the plan's form
"kernel"), and, form "phase-kernel", a strided one's by stride phases
(`iree_bwdconv.kernels.phase_catalog`; below, `_phase_call`).

IREE 3.13 tiles the GEMM of a strided one's grad_input by (oh, ow) and
stores it with a stride; no linalg form of it came nearer than 1.8x-2.4x
of IREE's own matmul on the H100 (docs/performance-journal.md, "The strided 1x1
GEMM"). At stride 1 its linalg GEMM, batched over images, ran 1.2x-1.5x
slower than the kernel ("The kernel at stride 1"), and with fewer than
128 input channels 1.3x-1.9x slower than the kernel's narrower tiles ("A
narrow tile for few channels", "Smaller tiles for the 1x1 kernel"). The
kernel tiles the GEMM by flat positions and stores each value at
`o*s - p`, or, at stride 2 without padding, whole 2x2 blocks where
grad_input is exactly twice grad_output's size ("Whole 2x2 blocks with
wide stores") and pairs of a value and a zero elsewhere, where H*W is
even ("Pairs of a value and a zero").

The rewrite emits the buffer grad_input is written into (zeros where a
stride leaves input positions that no output reaches, uninitialized where
the kernel writes every position: at stride 1, and in blocks or pairs at
stride 2) and a call of a private
declaration `@iree_bwdconv.kernel.strided_1x1_grad_input(weight,
grad_output, init) -> grad_input`, its stride and padding as attributes
of the call; the kernel writes the GEMM's values into `init` in place.
Input channels off a multiple of 8 are padded to one for the call and
grad_input cropped back after it.
Which of the kernel's variants runs follows from the types, stride and
padding at the link, by the rule that chose `init` here.
torch-mlir's bindings have no HAL dialect, so `extern_kernels.link` turns
each call into a `hal.dispatch.extern` once the linalg pipeline has run,
in IREE's.
"""

from __future__ import annotations

from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import func, tensor
from torch_mlir.rewrite import PatternRewriter

from iree_bwdconv.compiler import extern_kernels
from iree_bwdconv.builders import replacement
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.kernels import catalog, phase_catalog
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import plan as plan_of
from iree_bwdconv.plan.grad_input import kernel_why_not, phase_kernel_why_not
from iree_bwdconv.spec import ConvBackwardSpec


ROOT = "torch.aten.convolution_backward"
NAME = "convolution_backward_kernel"
BENEFIT = 3  # the plan decides which pattern matches; the benefit only orders the tries


def rewrite(op: ir.Operation, rewriter: PatternRewriter, *, options: LoweringOptions) -> Optional[str]:
    """Replace the op; return None when rewritten, else the reason it was not."""
    spec, reason = replacement.check_convolution_backward(op)
    if spec is None:
        return reason
    plan = plan_of(spec, options)
    if plan.pattern != NAME:
        if not spec.output_mask[0]:
            return "grad_input is not asked for"
        return (f"the 1x1 kernel: {kernel_why_not(spec, options) or 'the plan picks another form'}; the phase "
                f"kernel: {phase_kernel_why_not(spec, options, plan.tuning) or 'the plan picks another form'}")
    replacement.replace_convolution_backward(op, rewriter, plan, builder(op))
    return None


def builder(op: ir.Operation) -> replacement.GradInputBuilder:
    """grad_input by a call of the plan's kernel, declared in the module that holds `op`."""
    module = op
    while module.name != "builtin.module":
        module = module.parent

    def build(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, *, plan) -> ir.Value:
        if plan.grad_input.form == "phase-kernel":
            return _phase_call(module, spec, grad_output, weight)
        return _call(module, spec, grad_output, weight)

    return build


def _declared(module: ir.Operation, kernel: str, function_type: ir.FunctionType) -> ir.FlatSymbolRefAttr:
    """The kernel's declaration, the module's first of this function type
    (`_1`, `_2`... after the first: one name, one type)."""
    symbols = ir.SymbolTable(module)
    callee, count = extern_kernels.symbol(kernel), 0
    while callee in symbols and ir.TypeAttr(symbols[callee].attributes["function_type"]).value != function_type:
        count += 1
        callee = extern_kernels.symbol(f"{kernel}_{count}")
    if callee not in symbols:
        with ir.InsertionPoint(module.regions[0].blocks[0]):
            symbols.insert(func.FuncOp(callee, function_type, visibility="private").operation)
    return ir.FlatSymbolRefAttr.get(callee)


def _phase_call(module: ir.Operation, spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value) -> ir.Value:
    """The phase kernel's call: it writes every position of grad_input
    (a phase without taps its zeros), so grad_input starts unfilled, and
    it reads the weight as it is, [G*KG, CG, *kernel]."""
    element = ir.RankedTensorType(grad_output.type).element_type
    init = tensor.EmptyOp([spec.batch, spec.in_channels, *spec.input_spatial], element).result
    function_type = ir.FunctionType.get([weight.type, grad_output.type, init.type], [init.type])
    call = func.CallOp([init.type], _declared(module, phase_catalog.KERNEL, function_type),
                       [weight, grad_output, init])
    call.attributes[extern_kernels.STRIDE] = ir.DenseI64ArrayAttr.get(list(spec.stride))
    call.attributes[extern_kernels.PADDING] = ir.DenseI64ArrayAttr.get(list(spec.padding))
    call.attributes[extern_kernels.GROUPS] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), spec.groups)
    return call.result


def _call(module: ir.Operation, spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value) -> ir.Value:
    """The 1x1 kernel's call. Input channels off the kernel's multiple of 8 are padded: the weight's
    rows with zeros, and grad_input is gathered back from the padded one the
    kernel writes (a copy of it, against IREE's f16 GEMM widened to f32)."""
    channels = catalog.padded_channels(spec.in_channels)
    extra = channels - spec.in_channels
    weight = lb.pad(weight, [0] * (spec.spatial_rank + 2), [0, extra] + [0] * spec.spatial_rank)
    init = _grad_input_init(spec, channels, grad_output)
    function_type = ir.FunctionType.get([weight.type, grad_output.type, init.type], [init.type])
    call = func.CallOp([init.type], _declared(module, catalog.KERNEL, function_type), [weight, grad_output, init])
    call.attributes[extern_kernels.STRIDE] = ir.DenseI64ArrayAttr.get(list(spec.stride))
    call.attributes[extern_kernels.PADDING] = ir.DenseI64ArrayAttr.get(list(spec.padding))
    return lb.leading_by_gather(call.result, 1, spec.in_channels) if extra else call.result


def _grad_input_init(spec: ConvBackwardSpec, channels: int, grad_output: ir.Value) -> ir.Value:
    """What the kernel writes grad_input of `channels` into: zeros where its variant
    (chosen at the link from the same sizes) stores only values into the
    gaps a stride leaves, else an unfilled buffer, as it writes every
    position (at stride 1, or blocks or pairs: `catalog.writes_every_position`),
    with no memset of all grad_input (15 us of the projection layer's 73
    on the H100)."""
    arguments = catalog.arguments(channels, spec.out_channels, spec.input_spatial, spec.output_spatial,
                                  spec.stride, spec.padding)
    sizes = [spec.batch, channels, *spec.input_spatial]
    element = ir.RankedTensorType(grad_output.type).element_type
    if not catalog.writes_every_position(arguments):
        return lb.zeros(sizes, element)
    return tensor.EmptyOp(sizes, element).result
