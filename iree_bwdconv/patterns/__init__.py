"""The rewrite patterns of iree-bwdconv, one per module, and their registry.

Each convolution_backward pattern matches where the op's plan
(`iree_bwdconv.plan`) picks its form, so at most one of them matches an
op whatever their order; the benefits only order the tries.

A pattern's `rewrite(op, rewriter)` returns None when it rewrote the op and
a sentence saying why it did not match otherwise; the callback handed to
the rewrite API turns that into True, its "no match". `apply_patterns` keeps those
sentences, so a lowering that refuses an op can say why.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Optional

from torch_mlir import ir
from torch_mlir.rewrite import PatternRewriter, RewritePatternSet, apply_patterns_and_fold_greedily

from iree_bwdconv.options import LoweringOptions

from iree_bwdconv.patterns import (convolution_backward, convolution_backward_kernel, convolution_backward_phases,
                                   convolution_forward, convolution_transposed)

RewriteFn = Callable[..., Optional[str]]  # (op, rewriter, *, options) -> why it did not match, or None


@dataclass(frozen=True)
class Pattern:
    name: str
    root: str
    rewrite: RewriteFn
    benefit: int = 1


REGISTRY: tuple[Pattern, ...] = (
    Pattern(
        "convolution_backward_kernel",
        convolution_backward_kernel.ROOT,
        convolution_backward_kernel.rewrite,
        convolution_backward_kernel.BENEFIT,
    ),
    Pattern(
        "convolution_backward_phases",
        convolution_backward_phases.ROOT,
        convolution_backward_phases.rewrite,
        convolution_backward_phases.BENEFIT,
    ),
    Pattern("convolution_backward", convolution_backward.ROOT, convolution_backward.rewrite),
    Pattern("convolution_forward", convolution_forward.ROOT, convolution_forward.rewrite),
    Pattern("convolution_transposed", convolution_transposed.ROOT, convolution_transposed.rewrite),
)


@dataclass
class Mismatches:
    """Why each pattern declined each op it was offered, in order, once each."""

    reasons: list[str] = field(default_factory=list)

    def record(self, pattern: Pattern, op: ir.Operation, reason: str) -> None:
        line = f"{pattern.name} did not match {op.name} at {op.location}: {reason}"
        if line not in self.reasons:
            self.reasons.append(line)


def _recording(pattern: Pattern, mismatches: Mismatches, options: LoweringOptions) -> RewriteFn:
    def callback(op: ir.Operation, rewriter: PatternRewriter) -> bool:
        reason = pattern.rewrite(op, rewriter, options=options)
        if reason:
            mismatches.record(pattern, op, reason)
        return bool(reason)  # the binding casts the result to bool, not to a str

    return callback


def options_for_selection(patterns: tuple[Pattern, ...], options: LoweringOptions) -> LoweringOptions:
    """The options under which `patterns` alone lower what their forms can
    (`iree-bwdconv opt --pattern`): the plan picks one pattern per op, so
    the direct pattern without the strided ones is given the direct form
    of every grad_input, unless a form is forced already."""
    names = {pattern.name for pattern in patterns}
    strided = {convolution_backward_phases.NAME, convolution_backward_kernel.NAME}
    if convolution_backward.NAME in names and not names & strided and options.grad_input_form == "auto":
        return dataclasses.replace(options, grad_input_form="direct")
    return options


def apply_patterns(module: ir.Module, options: LoweringOptions,
                   patterns: Optional[tuple[Pattern, ...]] = None) -> Mismatches:
    """Run the patterns (default: the registry) greedily over `module`, each
    given `options`."""
    patterns = REGISTRY if patterns is None else patterns
    mismatches = Mismatches()
    with module.context:
        pattern_set = RewritePatternSet()
        for pattern in patterns:
            pattern_set.add(pattern.root, _recording(pattern, mismatches, options), pattern.benefit)
        apply_patterns_and_fold_greedily(module, pattern_set.freeze())
    return mismatches
