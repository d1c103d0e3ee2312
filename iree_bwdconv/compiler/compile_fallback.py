"""Compiling a lowering for a GPU target, with a second try in the plain forms.

IREE 3.13's GPU code generation refuses some of the forms the rules pick
at sizes no rule foresaw: on gfx942 a grouped 1-D phase convolution asked
for more shared memory than the chip has at 64 positions and compiled at
75, and a grouped weight gradient failed bufferization when split
(docs/performance-journal.md, "Compile failures on gfx942, and the plain
forms"). Where the usual forms fail to compile, the same op is lowered
again in the plain forms (`LoweringOptions.plain_forms`: the direct grad_input,
weight gradients in one sum) and compiled; a warning says so and where the
failure's IR and command are. The same holds where the usual forms
compile to code that `pipeline` refuses as wrong (`WrongCodeError`). If
the plain forms fail too, the first failure is raised: it is the one a
fix of the rules starts from. Before the plain forms, a module whose
stride phases sit in dispatch regions of ours is lowered once more with
them woven (`LoweringOptions.phases_in_place`): IREE's CUDA code for some
phases in their regions (8 or 16 channels a group) reads past an operand,
and the overread workaround (`whole_tiles`, widening) does not rewrite
contractions inside regions of ours, where the woven phases compile
clean. That try is the plan's own forms and warns of nothing.
"""

from __future__ import annotations

import warnings
from typing import Callable, Optional

from iree_bwdconv.compiler import dispatch_regions, pipeline
from iree_bwdconv.errors import PipelineError, PlainFormsWarning, WrongCodeError
from iree_bwdconv.options import LoweringOptions


def woven_retry(mlir: str, options: LoweringOptions) -> Optional[LoweringOptions]:
    """The options to lower `mlir`'s op again with where IREE failed on it
    or refused its code: its phases woven, where some of them sat in
    dispatch regions of ours (IREE's code for some reads past an operand,
    which no rewrite mends there); None where none did. `iree-bwdconv-compile`
    takes the same second try (`plugin.driver`)."""
    return options.phases_woven() if options.phases_in_place and dispatch_regions.marked(mlir) else None


def compile_lowering(lower: Callable[[LoweringOptions], str], options: LoweringOptions,
                     timeout_s: Optional[float] = None) -> bytes:
    """`lower(options)`'s IR compiled for their target (each iree-compile
    given `timeout_s` seconds); on a GPU target whose compile fails,
    `lower(options.in_plain_forms())`, compiled."""
    target = options.target
    mlir = lower(options)
    try:
        return pipeline.iree_compile(mlir, target, timeout_s=timeout_s, repro_dir=options.repro_dir)
    except PipelineError as error:
        if target == "cpu":
            raise
        first = error
    woven = woven_retry(mlir, options)
    if woven is not None:
        try:
            return pipeline.iree_compile(lower(woven), target, timeout_s=timeout_s, repro_dir=options.repro_dir)
        except PipelineError:
            pass
    plain = lower(options.in_plain_forms())
    if plain == mlir:
        raise first
    try:
        vmfb = pipeline.iree_compile(plain, target, timeout_s=timeout_s, repro_dir=options.repro_dir)
    except PipelineError as second:
        raise first from second
    what = "would compute the lowering's usual forms wrongly" if isinstance(first, WrongCodeError) else "failed on the lowering's usual forms"
    warnings.warn(
        f"iree-compile for {target} {what} and compiled in its plain forms, "
        f"which may run slower. The failing IR was saved to {first.repro_path}\n"
        f"Reproduce with:\n  {first.command}",
        PlainFormsWarning,
        stacklevel=2,
    )
    return vmfb
