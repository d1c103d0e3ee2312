"""What every convolution_backward pattern shares: its preconditions
(`check_convolution_backward`) and the op's replacement by the gradients
its output_mask asks for, the pattern building grad_input in its own form
(`replace_convolution_backward`).
"""

from __future__ import annotations

from typing import Callable, Optional

from torch_mlir import ir

from iree_bwdconv.builders import gradients, group_split, torch_ir, transposed
from iree_bwdconv.errors import InvalidArgumentError
from iree_bwdconv.plan import Plan
from iree_bwdconv.spec import ConvBackwardSpec

# (spec, grad_output, weight, *, plan) -> grad_input
GradInputBuilder = Callable[..., ir.Value]


def replace_convolution_backward(op: ir.Operation, rewriter, plan: Plan, grad_input: GradInputBuilder) -> None:
    """Replace the op by the gradients its output_mask asks for, building
    grad_input with the pattern's own form (`transposed`'s for a transposed
    convolution) and the others with `gradients`, each as `plan` says;
    group by group where it says so (`group_split`)."""
    spec = plan.spec
    input_form = transposed.grad_input_transposed if spec.transposed else grad_input
    builders = {
        "grad_input": lambda s, dy, x, w: input_form(s, dy, w, plan=plan),
        "grad_weight": lambda s, dy, x, w: gradients.grad_weight(s, dy, x, plan=plan),
    }
    split = plan.group_split
    with rewriter.ip, op.location:
        operands = [torch_ir.to_builtin(v) for v in list(op.operands)[:3]]
        results = []
        for index, name in enumerate(("grad_input", "grad_weight", "grad_bias")):
            type_ = torch_ir.result_type(op, index)
            if type_ is None:
                value = torch_ir.none_value()
            elif name == "grad_bias":  # the same sum with or without groups
                value = torch_ir.from_builtin(gradients.grad_bias(spec, operands[0], plan=plan), type_)
            elif split:
                value = torch_ir.from_builtin(group_split.per_group(spec, name, builders[name], *operands), type_)
            else:
                value = torch_ir.from_builtin(builders[name](spec, *operands), type_)
            results.append(value)
        rewriter.replace_op(op, results)


def grad_input_of(plan: Plan, build: GradInputBuilder, grad_output: ir.Value, weight: ir.Value) -> ir.Value:
    """grad_input built by `build` as `plan` says (group by group where it
    splits the groups), from builtin tensors: for a pattern whose op is not
    a convolution_backward (a transposed convolution's forward)."""
    if plan.group_split:
        return group_split.per_group(plan.spec, "grad_input", lambda s, dy, x, w: build(s, dy, w, plan=plan),
                                     grad_output, None, weight)
    return build(plan.spec, grad_output, weight, plan=plan)


def check_convolution_backward(op: ir.Operation) -> tuple[Optional[ConvBackwardSpec], Optional[str]]:
    """Preconditions every pattern shares, before any IR is built:
    (spec, None), or (None, why not)."""
    try:
        spec = torch_ir.read_convolution_backward(op)
    except (torch_ir.PatternMismatch, InvalidArgumentError) as err:
        return None, str(err)
    for index, wanted in enumerate(spec.output_mask):
        if wanted != (torch_ir.result_type(op, index) is not None):
            return None, f"result {index} is {op.results[index].type} but output_mask[{index}]={wanted}"
    return spec, None
