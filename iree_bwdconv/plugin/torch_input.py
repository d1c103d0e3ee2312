"""Torch-dialect input (torch-mlir and iree-turbine exports, and ONNX as
`iree-import-onnx` makes it): its convolution_backward ops and strided
transposed convolutions rewritten by our patterns, before IREE's input
phase lowers the rest as it would have.

ONNX's ConvTranspose reaches torch-mlir's `aten.convolution` only in IREE's
input phase; where a module holds one, torch-mlir's own ONNX conversion
(the pass IREE's input phase runs) is run here first, on its functions.
"""

from __future__ import annotations

from typing import Union

from torch_mlir import ir

from iree_bwdconv import explain, lowering, patterns
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.builders import replacement, torch_ir
from iree_bwdconv.errors import InvalidArgumentError
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import plan, plan_transposed_forward
from iree_bwdconv.plan.rules import RULES

from iree_bwdconv.plugin.rewritten import Rewritten

BACKWARD = patterns.convolution_backward.ROOT
CONVOLUTION = patterns.convolution_transposed.ROOT
ONNX_OPERATOR = "torch.operator"
ONNX_CONV_TRANSPOSE = "onnx.ConvTranspose"
ONNX_TO_TORCH = "builtin.module(func.func(convert-torch-onnx-to-torch))"
# Every pattern but the forward convolution's: a plain convolution is
# left to IREE, as the user's compiler would lower it.
PATTERNS = tuple(p for p in patterns.REGISTRY if p.name != "convolution_forward")


def _parse(source: Union[str, bytes]) -> Union[ir.Module, str]:
    context = lowering.new_context()
    context.allow_unregistered_dialects = True  # iree-turbine's util and hal ops, whatever else rides along
    try:
        with context:
            return ir.Module.parse(source)
    except ir.MLIRError as err:
        return str(err).splitlines()[0]


def _is_onnx_conv_transpose(op: ir.Operation) -> bool:
    return op.name == ONNX_OPERATOR and ir.StringAttr(op.attributes["name"]).value == ONNX_CONV_TRANSPOSE


def _verdict(op: ir.Operation, options: LoweringOptions) -> tuple[bool, list[str]]:
    """Whether our patterns take the op, and the lines that say how or why not."""
    if op.name == BACKWARD:
        spec, why_not = replacement.check_convolution_backward(op)
        if spec is None:
            return False, [f"  left to IREE: {why_not}"]
        return True, [f"  {explain.describe_layer(spec)}", *explain.plan_lines(plan(spec, options), options)]
    try:
        spec = torch_ir.read_transposed_convolution(op)
    except (torch_ir.PatternMismatch, InvalidArgumentError) as err:
        return False, [f"  left to IREE: {err}"]
    decided, rule = plan_transposed_forward(spec, options)
    if decided is None:
        return False, [f"  left to IREE: {RULES[rule].says} ({rule})"]
    return True, [f"  transposed: the grad_input of {explain.describe_layer(spec)}",
                  *explain.plan_lines(decided, options)]


def rewrite(source: Union[str, bytes], options: LoweringOptions) -> Rewritten:
    """The module with our patterns applied, where it is torch-dialect IR
    holding an op of ours; what was done, op by op, in the log."""
    module = _parse(source)
    if isinstance(module, str):
        return Rewritten(log=[f"torch input: not read as torch-dialect IR ({module})"])
    with module.context:
        if any(map(_is_onnx_conv_transpose, lowering.ops_named(module, ONNX_OPERATOR))):
            pipeline.run_pipeline(module, ONNX_TO_TORCH, "ONNX to torch", repro_dir=options.repro_dir)
        ops = lowering.ops_named(module, BACKWARD) + lowering.ops_named(module, CONVOLUTION)
        result = Rewritten()
        taken = 0
        for op in ops:
            ours, lines = _verdict(op, options)
            if op.name == CONVOLUTION and not ours and "transposed=False" in lines[0]:
                continue  # a plain convolution: not ours to speak of
            taken += ours
            result.judged += 1
            result.log += [f"{'rewrote' if ours else 'kept'} {op.name} at {op.location}", *lines]
        if not taken:
            return result
        patterns.apply_patterns(module, options, PATTERNS)
        left = len(lowering.ops_named(module, BACKWARD) + lowering.ops_named(module, CONVOLUTION))
        result.count = len(ops) - left
        if result.count != taken:
            result.log.append(f"torch input: {taken} op(s) planned, {result.count} rewritten")
        result.text = str(module)
        return result
