"""`iree-bwdconv explain`: why each convolution is lowered the way it is.

For each convolution of a raw torch-dialect file (or one layer given by its
arguments): the plan of each gradient, the rules that decided it with the
figure behind each (docs/forms.md), the IREE faults worked around on the
target, the multiply-adds its lowering executes against those it needs,
its dispatch count, and the compile cache key of its module.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

from iree_bwdconv.compiler import compile_cache, iree_faults, pipeline
from iree_bwdconv import lowering, multiply_adds
from iree_bwdconv.builders import replacement, torch_ir
from iree_bwdconv.errors import InvalidArgumentError
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import (ForwardPlan, GradBiasPlan, GradInputPlan, GradWeightPlan, Plan, plan, plan_forward,
                               plan_transposed_forward)
from iree_bwdconv.plan.rules import RULES
from iree_bwdconv.spec import ConvBackwardSpec

FORWARD = "torch.aten.convolution"


def describe_layer(spec: ConvBackwardSpec) -> str:
    """The layer in one line: rank, batch, channels, sizes and arguments."""
    def sizes(values) -> str:
        return "x".join(str(v) for v in values)
    kind = "transposed " if spec.transposed else ""
    asked = "".join("1" if wanted else "0" for wanted in spec.output_mask)
    return (f"{kind}{spec.spatial_rank}-D n{spec.batch or '?'} c{spec.in_channels} f{spec.out_channels} "
            f"{sizes(spec.input_spatial)} k{sizes(spec.kernel)} s{sizes(spec.stride)} p{sizes(spec.padding)} "
            f"d{sizes(spec.dilation)} g{spec.groups} {spec.dtype}, gradients {asked}")


def _grad_input(p: GradInputPlan) -> str:
    if p.form == "transposed":
        return f"a strided convolution of grad_output ({p.transposed_form})" + (", in f32" if p.widened_windowless
                                                                               else "")
    notes = [note for note, on in (
        ("in f32", p.in_f32), ("im2col + matmul", p.im2col_matmul), ("the weight read as it is", p.weight_as_is),
        ("in f32 (windowless, off the MMA tile)", p.widened_windowless), ("one matmul", p.one_matmul),
        ("weight-first GEMM", p.weight_first), (f"woven along dims {list(p.woven_axes)}", bool(p.woven_axes)),
        ("one tap table", p.one_table), (f"{len(p.widened_phases)} phase(s) in f32", bool(p.widened_phases)),
        ("woven by a gather", p.gather_weave), ("each phase stored in place by a dispatch of its own", p.stored_in_place),
        ("a matmul per image", p.images_first)) if on]
    return p.form + (f" ({', '.join(notes)})" if notes else "")


def _grad_weight(p: GradWeightPlan) -> str:
    notes = [note for note, on in (
        (f"split {p.image_split} ways by images", p.image_split > 1),
        (f"split-K {p.im2col_split} ways", p.im2col_split > 1), ("columns-first", p.columns_first),
        (f"window {'x'.join(map(str, p.taps))}", p.form == "im2col"), ("read unpadded", p.gather_unpadded),
        ("read as f32", p.widened), ("linalg.matmul", p.named_matmul),
        (f"{p.rows_padding[0]} positions and {p.rows_padding[1]} channels of zeros appended", any(p.rows_padding)))
        if on]
    return p.form + (f" ({', '.join(notes)})" if notes else "")


def _grad_bias(p: GradBiasPlan) -> str:
    if p.batch_first:
        return "over the images first, then the positions"
    if p.split:
        return f"two steps: each image and channel's positions in {p.split} run(s), then those sums"
    return "one reduction"


def _rule_lines(names: tuple[str, ...]) -> list[str]:
    width = max(len(name) for name in names)
    return [f"    {name:<{width}}  {RULES[name].says} [{RULES[name].evidence}]" for name in dict.fromkeys(names)]


def _ratio(executed: int, useful: int) -> str:
    return f"{executed / 1e6:,.1f} M executed / {useful / 1e6:,.1f} M useful ({executed / useful:.2f}x)"


def _executed(spec: ConvBackwardSpec, gradient: int, options: LoweringOptions, decided: Plan) -> int:
    """Multiply-adds of one gradient's lowering alone (0 for a gradient
    with no products); our 1x1 CUDA kernel computes each product of its
    GEMM once, and the phase kernel the products of the per-phase form's
    phases (their windows' edges masked where the phases pad them)."""
    from iree_bwdconv import functional  # traces with torch, which explaining a file needs not

    alone = dataclasses.replace(spec, output_mask=tuple(i == gradient for i in range(3)))
    if gradient == 0 and decided.grad_input and decided.grad_input.form == "kernel":
        return (spec.batch or 1) * spec.in_channels * spec.out_channels * math.prod(spec.output_spatial)
    if gradient == 0 and decided.grad_input and decided.grad_input.form == "phase-kernel":
        options = dataclasses.replace(options, grad_input_form="per-phase")
    return multiply_adds.executed(functional.lowered(alone, None, options), repro_dir=options.repro_dir)


def plan_lines(decided: Plan, options: LoweringOptions) -> list[str]:
    """A plan as `explain` prints it: each gradient's form, the rules with
    their figures, and the IREE faults worked around."""
    lines = [f"  plan for {options.target} (pattern {decided.pattern}"
             + (", group by group" if decided.group_split else "") + "):"]
    for name, part, describe in (("grad_input", decided.grad_input, _grad_input),
                                 ("grad_weight", decided.grad_weight, _grad_weight),
                                 ("grad_bias", decided.grad_bias, _grad_bias)):
        if part is not None:
            lines.append(f"    {name:<12} {describe(part)}")
    lines += ["  rules:", *_rule_lines(decided.rules)]
    faults = [fault.name for fault in iree_faults.FAULTS.values() if iree_faults.seen_on(fault, options.target)
              and (not fault.rule or fault.rule in decided.rules)]  # a rule's fault where the rule fired
    lines.append(f"  IREE faults worked around on {options.target}: {', '.join(faults) or 'none'}")
    return lines


def explain_spec(spec: ConvBackwardSpec, options: LoweringOptions, *, dispatches: bool = True,
                 module_ir: Optional[str] = None) -> list[str]:
    """The lines `explain` prints for one convolution_backward; `module_ir`:
    the torch IR its compile cache key is of (default: the layer's own)."""
    from iree_bwdconv import functional  # traces with torch, which explaining a file needs not

    decided = plan(spec, options)
    lines = plan_lines(decided, options)
    useful = multiply_adds.useful(spec)
    work = [f"{name} {_ratio(_executed(spec, index, options, decided), useful)}"
            for index, name in ((0, "grad_input"), (1, "grad_weight")) if spec.output_mask[index]]
    per = " (one image: the batch is dynamic)" if spec.dynamic_batch else ""
    lines.extend(f"  multiply-adds{per}: {line}" for line in work)
    bias = (spec.out_channels,) if spec.output_mask[2] else None
    if dispatches:
        flow = pipeline.iree_compile_to(functional.lowered(spec, bias, options), options.target, "flow",
                                        repro_dir=options.repro_dir)
        work = multiply_adds.in_flow(flow, options.repro_dir)
        lines.append(f"  dispatches: {work.dispatches} ({work.executables} executables)")
    if module_ir is None:
        module_ir = str(lowering.import_module(functional.ConvolutionBackward(spec, bias),
                                               *functional.zero_examples(spec)))
    flags = pipeline.keyed_flags(pipeline.compile_flags(options.target))
    lines.append(f"  compile cache key: {compile_cache.cache_key(module_ir, flags, options.cache_key())}")
    return lines


def _forward_lines(decided: ForwardPlan, options: LoweringOptions) -> list[str]:
    form = decided.form or "torch-mlir's own lowering"
    extra = ", in f32" if decided.widened else ", im2col + matmul" if decided.gather else ""
    return [f"  plan for {options.target}: {form}{extra}", "  rules:", *_rule_lines((decided.rule,))]


def _convolution_lines(op, options: LoweringOptions, dispatches: bool, text: str) -> list[str]:
    """A forward convolution's plan; a strided transposed one's is the plan
    of the grad_input it is (`plan.plan_transposed_forward`)."""
    forward, why_not = lowering.patterns.convolution_forward.forward_spec(op)
    if forward is not None:
        return _forward_lines(plan_forward(forward, options), options)
    try:
        transposes = torch_ir.read_transposed_convolution(op)
    except (torch_ir.PatternMismatch, InvalidArgumentError):
        return [f"  not ours: {why_not}"]
    decided, rule = plan_transposed_forward(transposes, options)
    if decided is None:
        return [f"  not ours: {RULES[rule].says} ({rule})"]
    return [f"  transposed: the grad_input of {describe_layer(transposes)} ({rule})",
            *explain_spec(transposes, options, dispatches=dispatches, module_ir=text)]


def explain_file(text: str, options: LoweringOptions, *, dispatches: bool = True) -> str:
    """`explain_spec` for every convolution_backward of a raw torch-dialect
    module, and the forward plan of every convolution; the cache key is the
    whole module's, as the torch.compile backend keys it."""
    module = lowering.parse_torch_mlir(text)
    with module.context:
        lowering.to_torch_backend(module, "linalg", options.repro_dir)
        out: list[str] = []
        for index, op in enumerate(lowering.ops_named(module, lowering.patterns.convolution_backward.ROOT), 1):
            spec, why_not = replacement.check_convolution_backward(op)
            out.append(f"convolution_backward #{index} at {op.location}")
            if spec is None:
                out.append(f"  not ours: {why_not}")
                continue
            out.append(f"  {describe_layer(spec)}")
            out.extend(explain_spec(spec, options, dispatches=dispatches, module_ir=text))
        for index, op in enumerate(lowering.ops_named(module, FORWARD), 1):
            out.append(f"convolution #{index} at {op.location}")
            out.extend(_convolution_lines(op, options, dispatches, text))
    return "\n".join(out) if out else "no convolution in this module"

