"""The evidence for the GPU's strided grad_input rule: each form the
lowering can emit (per-phase, col2im, the direct form over zero-inserted
grad_output) against upstream, torch eager and, for 1x1 kernels, IREE's
own matmul of the same GEMM; grad_input only, every strided shape of
issues 3 and 5 (STRIDED) or more strided layers (RULE_SHAPES).

    ./dev python -m benchmarks.strided_gpu prepare .bench-strided [rule|line|taps|weave|in-place|grouped-in-place|one-tap|wide|tables|all-gradients|barriers|f32|f32-1x1|f32-s1|f16-s1|grouped]   # here
    python3 benchmarks/run_on_gpu.py .bench-strided results.json                # there
    ./dev python -m benchmarks.strided_gpu report results.json [rule|line|taps|weave|in-place|grouped-in-place|one-tap|wide|tables|all-gradients|barriers|f32|f32-1x1|f32-s1|f16-s1|grouped]      # here

`taps` times per-phase with its taps gathered as built and the same
gathers behind IREE's optimization barrier (`barriers.behind_barriers`,
as the lowering emitted them until 2026-11-24), beside col2im and
upstream, on the ungrouped layers wider than 4 channels; `barriers` does
the same for grad_input alone and for all three gradients in one module
(`BARRIER_SHAPES`: per-phase layers, and the 1x1 layers' GEMM beside
IREE's own matmul).
`in-place` times per-phase with its phases stored into grad_input by
dispatches of their own and woven by a gather, beside the rule's pick and
upstream (`IN_PLACE_SHAPES`); `grouped-in-place` the same on grouped layers
of 16+ channels a group (`GROUPED_IN_PLACE_SHAPES`).
`weave` times per-phase and col2im with the phases woven as built and the
other way (`GradInputPlan.gather_weave`: a stack and a gather, or the grid weave that
reads every phase for each element; `modules.weave`), on every ungrouped strided layer
with a kernel larger than 1x1, and the sub-pixel and direct forms of the
stride-3 layer. `one-tap` times the forms on layers whose phases all
have one tap (stride >= kernel); `wide` times per-phase and col2im on
held-out layers with kernels 5 or more wide (`WIDE_SHAPES`); `tables`
times per-phase with its tap tables gathered by one op and by one op per
phase, beside col2im and upstream (`TABLE_SHAPES`); `all-gradients`
times all three gradients in one module, grad_input as the rule picks it
and forced to per-phase and col2im. `f32` times the rule's pick and every
form on the same layers in f32 (`F32_SHAPES`); `f32-1x1` the strided 1x1
layers of those alone, `f32-s1` the stride-1 layers (and the CPU's
im2col + named matmul form of their grad_input, and the direct form with
the weight transposed or as it is); `f16-s1` the same forms of the
stride-1 layers with kernels larger than 1x1 in f16 and bf16.

(Until commit 828b4bc it also timed a gather placement of the phases,
since removed: `h100_placement_2026-11-23.json`.)
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Iterator, Sequence
from unittest import mock

from iree_bwdconv import lowering
from iree_bwdconv import options as lowering_options
from iree_bwdconv.plan import grad_input as gi

from . import barriers, modules
from .forms import RESNET50_H100, GradInputAsTransposedConv
from .gemm_1x1 import ONE_BY_ONE
from .gpu import iree_matmul_entry, print_variant_table
from .shapes import SHAPES, Shape

STRIDED = [s for s in (*SHAPES, *RESNET50_H100) if s.stride > 1]

# More strided layers, to place the line between the GPU's forms: ResNet-50's
# own strided 3x3 layers (torchvision's v1.5), and narrow first layers.
RULE_SHAPES = (
    Shape("R50 3x3 s2 n32 c128 k128 56x56", 32, 128, 128, (56, 56), 3, 2, 1),
    Shape("R50 3x3 s2 n32 c256 k256 28x28", 32, 256, 256, (28, 28), 3, 2, 1),
    Shape("R50 3x3 s2 n32 c512 k512 14x14", 32, 512, 512, (14, 14), 3, 2, 1),
    Shape("3x3 s2 n32 c3 k32 224x224 (MobileNet stem)", 32, 3, 32, (224, 224), 3, 2, 1),
    Shape("3x3 s2 n32 c8 k32 112x112", 32, 8, 32, (112, 112), 3, 2, 1),
    Shape("3x3 s2 n32 c32 k64 112x112", 32, 32, 64, (112, 112), 3, 2, 1),
    Shape("7x7 s2 n32 c16 k64 224x224", 32, 16, 64, (224, 224), 7, 2, 3),
    Shape("7x7 s2 n8 c3 k64 224x224", 8, 3, 64, (224, 224), 7, 2, 3),
    Shape("5x5 s2 n32 c3 k64 224x224", 32, 3, 64, (224, 224), 5, 2, 2),
    Shape("5x5 s2 n32 c64 k64 56x56", 32, 64, 64, (56, 56), 5, 2, 2),
)

# Layers chosen to test a line drawn through RULE_SHAPES after the fact:
# col2im ahead of per-phase where taps x grad_output channels >= 4096
# (the first five), per-phase ahead below it (the last three).
LINE_SHAPES = (
    Shape("3x3 s2 n32 c256 k512 28x28", 32, 256, 512, (28, 28), 3, 2, 1),
    Shape("3x3 s2 n32 c128 k512 56x56", 32, 128, 512, (56, 56), 3, 2, 1),
    Shape("5x5 s2 n32 c64 k256 56x56", 32, 64, 256, (56, 56), 5, 2, 2),
    Shape("7x7 s2 n32 c32 k128 112x112", 32, 32, 128, (112, 112), 7, 2, 3),
    Shape("3x3 s2 n32 c1024 k1024 14x14", 32, 1024, 1024, (14, 14), 3, 2, 1),
    Shape("3x3 s2 n32 c512 k256 14x14", 32, 512, 256, (14, 14), 3, 2, 1),
    Shape("5x5 s2 n32 c128 k128 56x56", 32, 128, 128, (56, 56), 5, 2, 2),
    Shape("3x3 s2 n32 c384 k384 28x28", 32, 384, 384, (28, 28), 3, 2, 1),
)

# Ungrouped strided layers wider than 4 channels with kernels larger than
# 1x1 (where the GPU rule picks between per-phase and col2im), and a
# stride-3 layer whose phases all have one tap.
TAP_SHAPES = (
    *(s for s in (*STRIDED, *RULE_SHAPES) if s.kernel > 1 and s.groups == 1 and s.c > 4),
    Shape("3x3 s3 n32 c64 k64 90x90", 32, 64, 64, (90, 90), 3, 3, 1),
)

WEAVE_SHAPES = (
    *(s for s in (*STRIDED, *RULE_SHAPES) if s.kernel > 1 and s.groups == 1),
    TAP_SHAPES[-1],
)

# Layers whose phases all have one tap (stride >= kernel): patchify stems
# and downsampling layers (ConvNeXt's), and a 3x3 stride-3 layer.
ONE_TAP_SHAPES = (
    TAP_SHAPES[-1],
    Shape("3x3 s3 n32 c256 k256 42x42", 32, 256, 256, (42, 42), 3, 3, 0),
    Shape("2x2 s2 n32 c96 k192 56x56 (ConvNeXt downsample)", 32, 96, 192, (56, 56), 2, 2, 0),
    Shape("2x2 s2 n32 c384 k768 14x14 (ConvNeXt downsample)", 32, 384, 768, (14, 14), 2, 2, 0),
    Shape("4x4 s4 n32 c3 k96 224x224 (ConvNeXt stem)", 32, 3, 96, (224, 224), 4, 4, 0),
)


def _forms(shape: Shape) -> tuple[str, ...]:
    if shape.kernel == 1:
        return ("per-phase",)
    return ("per-phase", "col2im") if shape.groups == 1 else ("per-phase",)


def variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """(name, MLIR text, extra iree-compile flags) of every variant."""
    yield "upstream", modules.raw_torch(shape, modules.GRAD_INPUT_ONLY), modules.UPSTREAM_FLAGS
    for form in (*_forms(shape), *(("direct",) if shape.kernel > 1 else ())):
        yield form, modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", form), ()


def tap_variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """upstream, per-phase with its tap gathers as built and behind barriers, and col2im."""
    yield "upstream", modules.raw_torch(shape, modules.GRAD_INPUT_ONLY), modules.UPSTREAM_FLAGS
    built = modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", "per-phase")
    yield "per-phase", built, ()
    yield "per-phase-barrier", barriers.behind_barriers(built), ()
    yield "col2im", modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", "col2im"), ()


def barrier_variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """per-phase with its tap gathers as built and behind barriers; for
    kernels larger than 1x1 also all three gradients in one module (the
    "all-" names), with col2im beside them."""
    masks = {"": modules.GRAD_INPUT_ONLY, "all-": modules.ALL_GRADS}
    for prefix, gradients in masks.items() if shape.kernel > 1 else [("", modules.GRAD_INPUT_ONLY)]:
        built = modules.ours(shape, gradients, "cuda", "per-phase")
        yield prefix + "per-phase", built, ()
        yield prefix + "per-phase-barrier", barriers.behind_barriers(built), ()
        if prefix:
            yield "all-col2im", modules.ours(shape, gradients, "cuda", "col2im"), ()


def weave_variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """upstream, and per-phase and col2im with each weave."""
    yield "upstream", modules.raw_torch(shape, modules.GRAD_INPUT_ONLY), modules.UPSTREAM_FLAGS
    for form in ("per-phase", "col2im"):
        yield form, modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", form), ()
        other = "grid" if modules.gpu_weave(shape, form) == "gather" else "gather"
        with modules.weave(form, other):
            yield f"{form}-{other}", modules.lowered_uncached(shape, modules.GRAD_INPUT_ONLY, "cuda", form), ()
    if shape.stride == shape.kernel:
        for form in ("sub-pixel", "direct"):
            yield form, modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", form), ()


def in_place_variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """upstream, the rule's pick, and per-phase with its phases stored in
    place and woven by a gather."""
    yield "upstream", modules.raw_torch(shape, modules.GRAD_INPUT_ONLY), modules.UPSTREAM_FLAGS
    yield "auto", modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda"), ()
    for name in ("in-place", "gather"):
        with modules.weave("per-phase", name):
            yield f"per-phase-{name}", modules.lowered_uncached(shape, modules.GRAD_INPUT_ONLY, "cuda", "per-phase"), ()


def one_tap_variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """upstream, the rule's pick, per-phase, col2im (with each weave) and the direct form."""
    yield "upstream", modules.raw_torch(shape, modules.GRAD_INPUT_ONLY), modules.UPSTREAM_FLAGS
    for form in ("auto", "per-phase", "col2im", "direct"):
        yield form, modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", form), ()
    other = "grid" if modules.gpu_weave(shape, "col2im") == "gather" else "gather"
    with modules.weave("col2im", other):
        yield f"col2im-{other}", modules.lowered_uncached(shape, modules.GRAD_INPUT_ONLY, "cuda", "col2im"), ()


def form_pair_variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """per-phase and col2im."""
    for form in ("per-phase", "col2im"):
        yield form, modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", form), ()


# The LINE_SHAPES layers with kernels 5 or more wide: kept out of the data
# that drew the GPU rule's line for wide kernels, to test it.
WIDE_SHAPES = tuple(s for s in LINE_SHAPES if s.kernel >= 5)

def table_variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """upstream, per-phase with its tap tables in one op (as built) and one
    op per phase, and col2im."""
    yield "upstream", modules.raw_torch(shape, modules.GRAD_INPUT_ONLY), modules.UPSTREAM_FLAGS
    yield "per-phase", modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", "per-phase"), ()
    with modules.tap_table_per_phase():
        yield "per-phase-own-tables", modules.lowered_uncached(shape, modules.GRAD_INPUT_ONLY, "cuda", "per-phase"), ()
    yield "col2im", modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", "col2im"), ()


# Ungrouped layers wider than 4 channels with kernels larger than 1x1, and
# (after them) the held-out LINE_SHAPES.
TABLE_SHAPES = (
    *(s for s in (*STRIDED, *RULE_SHAPES, *ONE_TAP_SHAPES[1:4]) if s.kernel > 1 and s.groups == 1 and s.c > 4),
    TAP_SHAPES[-1],
    *LINE_SHAPES,
)

def all_gradient_variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """All three gradients in one module, grad_input as the rule picks it
    with the weight gradient beside it ("auto") and forced to per-phase
    and col2im."""
    for form in ("auto", "per-phase", "col2im"):
        yield form, modules.ours(shape, modules.ALL_GRADS, "cuda", form), ()


# The issue-3 layers wider than 4 channels with kernels larger than 1x1.
ALL_GRADIENT_SHAPES = tuple(s for s in STRIDED if s.kernel > 1 and s.groups == 1 and s.c > 4)

# Every ungrouped strided layer wider than 4 channels of these benchmarks,
# and the 1x1 layers of the forms benchmark.
BARRIER_SHAPES = tuple({s.name: s for s in (*ALL_GRADIENT_SHAPES, *TABLE_SHAPES, *ONE_BY_ONE)}.values())

# Every strided shape and two of ResNet-50's stride-1 layers in f32: every
# H100 figure that the GPU's grad_input rule was drawn from is of f16/bf16
# layers, and in f32 IREE's weight-gradient contraction ran up to 16x
# slower than im2col (docs/performance-journal.md, "Weight gradients on GPUs by
# dtype").
F32_SHAPES = tuple(dataclasses.replace(s, name=f"{s.name} f32", dtype="f32") for s in (
    *STRIDED, *(s for s in RESNET50_H100 if s.stride == 1 and s.name.startswith(("R50 3x3 s1 n32 c64", "R50 1x1 s1"))),
))


def f32_variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """The rule's pick, every form that applies, and upstream; for 1x1
    kernels also col2im and the CPU's form of their one phase (a matmul
    of grad_output's rows, `plan.grad_input.phase_one_matmul`)."""
    yield "upstream", modules.raw_torch(shape, modules.GRAD_INPUT_ONLY), modules.UPSTREAM_FLAGS
    yield "auto", modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda"), ()
    one_phase_gemm = shape.kernel == 1 and shape.groups == 1
    extra = ("direct",) if shape.kernel > 1 else ("col2im",) if one_phase_gemm else ()
    forms = (*_forms(shape), *extra) if shape.stride > 1 else ()
    if shape.stride > 1 and one_phase_gemm:
        with mock.patch.object(gi, "phase_one_matmul", lambda spec, options: True):
            yield "one-matmul", modules.lowered_uncached(shape, modules.GRAD_INPUT_ONLY, "cuda", "per-phase"), ()
    for form in forms:
        yield form, modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", form), ()
    if shape.stride == 1 and shape.groups == 1:
        # The CPU's stride-1 form (im2col + the named matmul), and the direct
        # form with the flipped weight transposed to [c, f, k] or read as it is.
        stride_1_forms = {"im2col-matmul": (True, False), "direct-transposed": (False, False),
                          "direct-weight-as-is": (False, True)}
        for name, (by_im2col, as_is) in stride_1_forms.items():
            with mock.patch.object(gi, "direct_im2col_matmul", lambda spec, options, tuning: by_im2col), \
                    mock.patch.object(gi, "direct_weight_as_is", lambda spec, options, tuning: as_is):
                yield name, modules.lowered_uncached(shape, modules.GRAD_INPUT_ONLY, "cuda"), ()


# The stride-1 layers with kernels larger than 1x1 in f16 (and bf16), and
# two more of ResNet-50's (its last stage, a 5x5): whether f16 gains from
# the weight read as it is as f32 did (`plan.grad_input.direct_weight_as_is`).
HALF_STRIDE_1_SHAPES = (
    *(s for s in (*SHAPES, *RESNET50_H100) if s.stride == 1 and s.kernel > 1),
    Shape("R50 3x3 s1 n32 c512 k512 7x7", 32, 512, 512, (7, 7), 3, 1, 1),
    Shape("3x3 s1 n32 c128 k128 56x56 bf16", 32, 128, 128, (56, 56), 3, 1, 1, dtype="bf16"),
    Shape("5x5 s1 n16 c64 k64 56x56", 16, 64, 64, (56, 56), 5, 1, 2),
)

# The grouped strided layer in f16 and f32, a depthwise one (f16).
GROUPED_SHAPES = tuple(
    dataclasses.replace(s, name=f"{s.name} {dtype}", dtype=dtype)
    for s in (*SHAPES, Shape("dw3x3 s2 n32 c256 112x112", 32, 256, 256, (112, 112), 3, 2, 1, groups=256))
    for dtype in ("f16", "f32") if s.groups > 1 and (dtype == "f16" or s.groups == 32))


# The strided layers per-phase could take with its phases in place: every
# dim strided, a kernel larger than 1x1.
IN_PLACE_SHAPES = tuple(s for s in (*STRIDED, *RULE_SHAPES, *GROUPED_SHAPES[1:])
                        if s.kernel > 1 and s.stride > 1)  # GROUPED_SHAPES[0] is STRIDED's g32 layer

# Grouped layers of 16 or more channels a group (ResNeXt- and RegNet-like
# stage transitions), which the plan stores in place.
GROUPED_IN_PLACE_SHAPES = (
    Shape("3x3 s2 g2 n32 c64 k64 56x56", 32, 64, 64, (56, 56), 3, 2, 1, groups=2),
    Shape("3x3 s2 g4 n32 c128 k128 28x28", 32, 128, 128, (28, 28), 3, 2, 1, groups=4),
    Shape("3x3 s2 g8 n32 c256 k256 28x28", 32, 256, 256, (28, 28), 3, 2, 1, groups=8),
    Shape("4x4 s2 g4 n32 c64 k64 28x28", 32, 64, 64, (28, 28), 4, 2, 1, groups=4),
)


def grouped_variants(shape: Shape) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """The direct form with the weight transposed (as the rule had it) and
    read as it is, per-phase, col2im, the sub-pixel form (widened to f32 as
    the lowering would, and in the layer's own dtype), the rule's pick,
    upstream and the named convolution (torch-mlir's conv_transpose2d)."""
    yield "upstream", modules.raw_torch(shape, modules.GRAD_INPUT_ONLY), modules.UPSTREAM_FLAGS
    yield "auto", modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda"), ()
    yield "per-phase", modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", "per-phase"), ()
    for name, as_is in (("direct-transposed", False), ("direct-weight-as-is", True)):
        with mock.patch.object(gi, "direct_weight_as_is", lambda spec, options, tuning: as_is):
            yield name, modules.lowered_uncached(shape, modules.GRAD_INPUT_ONLY, "cuda", "direct"), ()
    yield "col2im", modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", "col2im"), ()
    yield "sub-pixel", modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", "sub-pixel"), ()
    if shape.dtype != "f32":  # the sub-pixel form in the layer's own dtype, not widened
        with mock.patch.object(gi, "computes_in_f32", lambda spec, form, options, tuning: False):
            yield "sub-pixel-native", modules.lowered_uncached(shape, modules.GRAD_INPUT_ONLY, "cuda", "sub-pixel"), ()
    if shape.groups < shape.c:  # torch-mlir's lowering of a depthwise conv_transpose2d fails to verify
        named = GradInputAsTransposedConv(shape)
        yield "named-conv", lowering.lower(named, *modules.example_tensors(shape),
                                           target=lowering_options.from_environment("cuda")), ()


# ResNet-50's stride-1 layers and the stride-1 controls, in f32.
F32_STRIDE_1_SHAPES = tuple(dataclasses.replace(s, name=f"{s.name} f32", dtype="f32")
                            for s in (*SHAPES, *RESNET50_H100) if s.stride == 1)

_VARIANTS = {"grouped": grouped_variants, "f32-s1": f32_variants, "f16-s1": f32_variants, "f32": f32_variants, "f32-1x1": f32_variants, "barriers": barrier_variants, "all-gradients": all_gradient_variants, "tables": table_variants, "taps": tap_variants, "weave": weave_variants, "in-place": in_place_variants, "grouped-in-place": in_place_variants, "one-tap": one_tap_variants, "wide": form_pair_variants}


def prepare(folder: Path, shapes: Sequence[Shape], mode: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    mask = "all" if mode == "all-gradients" else "grad_input"
    for index, shape in enumerate(shapes):
        for name, text, flags in _VARIANTS.get(mode, variants)(shape):
            manifest.append(modules.compiled_entry(
                folder, text, "cuda", flags, shape=shape.name, mask="all" if name.startswith("all-") else mask,
                variant=name, vmfb=f"p{index}-{name}.vmfb", inputs=modules.input_specs(shape)))
        if shape.kernel == 1:
            manifest.append(iree_matmul_entry(folder, shape, f"p{index}-iree-matmul.vmfb"))
        if mode not in ("barriers", "in-place", "grouped-in-place"):
            manifest.append(modules.eager_entry(shape, mask))
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    command, path = sys.argv[1], Path(sys.argv[2])
    mode = sys.argv[3] if sys.argv[3:] else ""
    shapes = {"rule": RULE_SHAPES, "line": LINE_SHAPES, "taps": TAP_SHAPES, "weave": WEAVE_SHAPES,
              "one-tap": ONE_TAP_SHAPES, "wide": WIDE_SHAPES,
              "tables": TABLE_SHAPES, "in-place": IN_PLACE_SHAPES, "grouped-in-place": GROUPED_IN_PLACE_SHAPES, "all-gradients": ALL_GRADIENT_SHAPES, "barriers": BARRIER_SHAPES,
              "f32": F32_SHAPES, "f32-1x1": tuple(s for s in F32_SHAPES if s.kernel == 1 and s.stride > 1),
              "f32-s1": F32_STRIDE_1_SHAPES, "f16-s1": HALF_STRIDE_1_SHAPES,
              "grouped": GROUPED_SHAPES}.get(mode, STRIDED)
    prepare(path, shapes, mode) if command == "prepare" else print_variant_table(path, shapes)
