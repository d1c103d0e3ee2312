"""aten.convolution with transposed=True, forward (strided, or depthwise):
the data gradient of the strided convolution it transposes, lowered by the
same plan and the same grad_input forms (`iree_bwdconv.plan`).

torch-mlir lowers a strided transposed convolution by inserting s-1 zeros
between its input's elements and convolving: `ConvTranspose2d(64, 32, 4,
stride=2, padding=1)` executes 4x the multiply-adds it needs. It is the
grad_input of a convolution from its output's shape to its input's, with
its weight as it is (`torch_ir.read_transposed_convolution`): the plan
picks its form as it would that gradient's (stride phases, col2im, a 1x1
kernel's GEMM, our CUDA kernels), so decoders and generators multiply no
zero where the strided data gradients multiply none. At stride 1 there
are no zeros to avoid, and torch-mlir's lowering keeps it, but for one
input channel a group, where that lowering emits invalid IR: such a layer
is ours too. An
output_padding of a stride or more (below the dilation) adds zero rows
after the input, as many as it holds strides. The bias is added in f32 to
the form's result, which is rounded once more.
"""

from __future__ import annotations

from typing import Optional

from torch_mlir import ir
from torch_mlir.rewrite import PatternRewriter

from iree_bwdconv.builders import gradients, replacement, torch_ir
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.errors import InvalidArgumentError
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import plan_transposed_forward

from iree_bwdconv.patterns import convolution_backward, convolution_backward_kernel, convolution_backward_phases
from iree_bwdconv.patterns.convolution_forward import add_bias

ROOT = "torch.aten.convolution"
NAME = "convolution_transposed"


def rewrite(op: ir.Operation, rewriter: PatternRewriter, *, options: LoweringOptions) -> Optional[str]:
    """Replace the op; return None when rewritten, else the reason it was not."""
    try:
        spec = torch_ir.read_transposed_convolution(op)
    except (torch_ir.PatternMismatch, InvalidArgumentError) as err:
        return str(err)
    plan, rule = plan_transposed_forward(spec, options)
    if plan is None:
        return f"stride 1 in every dim: no inserted zeros to avoid; torch-mlir's lowering keeps it ({rule})"
    form = plan.grad_input.form
    with rewriter.ip, op.location:
        input_, weight, bias = (list(op.operands)[i] for i in range(3))
        if plan.pattern == convolution_backward_kernel.NAME:
            build = convolution_backward_kernel.builder(op)
        elif form == "direct":
            build = convolution_backward.grad_input_direct
        else:
            build = convolution_backward_phases.builder(plan)
        extra = torch_ir.transposed_input_padding(spec, op)
        dy = lb.pad(torch_ir.to_builtin(input_), [0] * len(spec.grad_output_shape), [0, 0, *extra])
        out = replacement.grad_input_of(plan, build, dy, torch_ir.to_builtin(weight))
        if not torch_ir.is_none(bias):
            widened = lb.convert(out, lb.element_type(gradients.ACCUMULATOR))
            out = lb.convert(add_bias(widened, torch_ir.to_builtin(bias)), lb.element_type(spec.dtype))
        rewriter.replace_op(op, [torch_ir.from_builtin(out, op.results[0].type)])
    return None
