"""The GPU's weight-gradient forms, each forced, grad_weight only: the
lowering's own pick (`auto`), one contraction split by images (with one or
at least two images per partial sum), im2col + a split matmul, a stride-1
contraction per stride phase (`weight_phases`), 1x1 kernels as one flat
contraction and as `weight_rows` (positions padded to 16, unpadded, to
128), and for grouped layers one ungrouped gradient per group
(`group-split`); beside upstream (timed, not checked). Right (against float64, with
`check_on_gpu.py`) and how fast (with `run_on_gpu.py`), on the layers of
issues 3 and 5, ResNet-50's and layers no rule was drawn from, in their
own dtypes or all in one (`--dtype f32`). The evidence for
`plan.grad_weight.by_im2col`, `half_contraction_wrong`,
`Tuning.half_strided_min_images` and `plan.grad_weight.rows_apply`.

    ./dev python -m benchmarks.gpu_weight_forms prepare .bench-weight \
        [--forms auto,im2col] [--only 1x1_s2 --only 7x7] [--dtype f32] [--no-upstream]   # here
    python3 benchmarks/check_on_gpu.py .bench-weight                                     # there
    python3 benchmarks/run_on_gpu.py .bench-weight results.json                          # there
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import sys
from pathlib import Path
from typing import Iterator, Optional
from unittest import mock

import torch
from torch_mlir import ir

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv import functional, lowering
from iree_bwdconv.builders import gradients, weight_rows
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.builders.linalg_builders import PARALLEL, REDUCTION
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import Plan
from iree_bwdconv.plan import forward as plan_forward
from iree_bwdconv.plan import grad_weight as gw
from iree_bwdconv.plan import tuning as plan_tuning
from iree_bwdconv.spec import ConvBackwardSpec

from . import gpu_check, modules, weight_phases

# name, n, c, k, hw, kernel, stride, padding(, dtype): ResNet-50's strided
# layers, a few smaller ones and the strided layers of issues 3 and 5; one
# stride-1 control.
LAYERS = (
    ("3x3_s2_c64_56_n32", 32, 64, 64, 56, 3, 2, 1),
    ("3x3_s2_c128_56_n32", 32, 128, 128, 56, 3, 2, 1),
    ("3x3_s2_c256_28_n32", 32, 256, 256, 28, 3, 2, 1),
    ("3x3_s2_c256_50_n32", 32, 256, 256, 50, 3, 2, 1),
    ("3x3_s2_c64_25_n8", 8, 64, 64, 25, 3, 2, 1),
    ("1x1_s2_c256_56_n32", 32, 256, 512, 56, 1, 2, 0),
    ("1x1_s2_c64_28_n8", 8, 64, 128, 28, 1, 2, 0),
    ("7x7_s2_c3_224_n32", 32, 3, 64, 224, 7, 2, 3),
    ("3x3_s1_c64_56_n32", 32, 64, 64, 56, 3, 1, 1),
    ("1x1_s2_c1024_50_n32", 32, 1024, 2048, 50, 1, 2, 0),
    ("1x1_s2_c512_100_n32", 32, 512, 1024, 100, 1, 2, 0),
    ("1x1_s2_c896_59x91_n12_bf16", 12, 896, 2016, (59, 91), 1, 2, 0, "bf16"),
    ("1x1_s2_c448_118x182_n10_bf16", 10, 448, 896, (118, 182), 1, 2, 0, "bf16"),
    ("5x5_s2_c128_40x175_n16", 16, 128, 256, (40, 175), 5, 2, 1),
    ("3x3_s2_c256_25_n32", 32, 256, 256, 25, 3, 2, 1),
    ("3x3_s2_c384_277x209_n1", 1, 384, 384, (277, 209), 3, 2, 1),
)
# The 1x1 layers at stride 1 that the lowering gave the contraction in f16
# until 2026-11-25 (`plan.grad_weight.half_contraction_wrong`).
LAYERS_1X1_S1 = (
    ("1x1_s1_c64_28_n8", 8, 64, 128, 28, 1, 1, 0),
    ("1x1_s1_c256_28_n32", 32, 256, 512, 28, 1, 1, 0),
    ("1x1_s1_c1024_25_n32", 32, 1024, 2048, 25, 1, 1, 0),
    ("1x1_s1_c512_50_n32", 32, 512, 1024, 50, 1, 1, 0),
    ("1x1_s1_c256_k64_56_n32", 32, 256, 64, 56, 1, 1, 0),
    ("1x1_s1_c64_k256_56_n32", 32, 64, 256, 56, 1, 1, 0),
)
# Layers none of the rules were drawn from, to check them on: odd sizes, few
# partial outputs, bf16, positions that need padding (1x1 c512 at 14x14 and
# c384 at 13x13) and that do not (1x1 c128 at 16x16).
LAYERS_UNSEEN = (
    ("3x3_s2_c32_k64_56_n16", 16, 32, 64, 56, 3, 2, 1),
    ("3x3_s2_c64_k128_29_n8", 8, 64, 128, 29, 3, 2, 1),
    ("3x3_s2_c128_28_n32", 32, 128, 128, 28, 3, 2, 1),
    ("5x5_s2_c64_28_n8", 8, 64, 64, 28, 5, 2, 2),
    ("3x3_s2_c96_33_n12_bf16", 12, 96, 96, 33, 3, 2, 1, "bf16"),
    ("1x1_s2_c128_k256_31_n16", 16, 128, 256, 31, 1, 2, 0),
    ("1x1_s2_c512_k1024_27_n8", 8, 512, 1024, 27, 1, 2, 0),
    ("1x1_s1_c384_k768_13_n6_bf16", 6, 384, 768, 13, 1, 1, 0, "bf16"),
    ("3x3_s2_c16_k32_56_n8", 8, 16, 32, 56, 3, 2, 1),    # few partial outputs
    ("3x3_s2_c3_k32_224_n2", 2, 3, 32, 224, 3, 2, 1),
    ("1x1_s2_c1024_k1344_50_n8", 8, 1024, 1344, 50, 1, 2, 0),  # 1344 channels copied as 1408 (`weight_rows`)
)
# Grouped layers (dtype, groups last): seed 003's g32 layer (8 channels per
# group), and smaller ones with 16.
LAYERS_GROUPED = (
    ("3x3_s2_g32_c256_200_n32", 32, 256, 256, 200, 3, 2, 1, "f16", 32),
    ("3x3_s2_g32_c256_200_n32_f32", 32, 256, 256, 200, 3, 2, 1, "f32", 32),
    ("3x3_s1_g32_c256_56_n32", 32, 256, 256, 56, 3, 1, 1, "f16", 32),
    ("3x3_s2_g8_c128_56_n16", 16, 128, 128, 56, 3, 2, 1, "f16", 8),
    ("3x3_s2_g4_c64_29_n8_bf16", 8, 64, 64, 29, 3, 2, 1, "bf16", 4),
    # fewer than 8 channels a group: ResNeXt-50 32x4d's first stage (4), depthwise (1)
    ("3x3_s1_g32_c128_56_n32", 32, 128, 128, 56, 3, 1, 1, "f16", 32),
    ("3x3_s2_g32_c128_56_n32", 32, 128, 128, 56, 3, 2, 1, "f16", 32),
    ("3x3_s2_dw_c256_112_n32", 32, 256, 256, 112, 3, 2, 1, "f16", 256),
    ("3x3_s1_dw_c64_56_n32", 32, 64, 64, 56, 3, 1, 1, "f16", 64),
    ("3x3_s1_dw_c64_56_n32_f32", 32, 64, 64, 56, 3, 1, 1, "f32", 64),
)
# Grouped kernels with a dim of 1, which `grouped_contraction_applies` left
# to im2col until 2026-11-26: ShuffleNet's grouped 1x1 layers (g8, 30
# channels a group), grouped 1x1 with 4 to 64 channels a group, 1x3 and
# 3x1, strided ones. (A 1x3 s2 g32 c256 56x56 layer's contraction did not
# compile for CUDA.)
LAYERS_GROUPED_ONE_WIDE = (
    ("1x1_s1_g8_c240_28_n32", 32, 240, 240, 28, 1, 1, 0, "f16", 8),
    ("1x1_s1_g4_c256_56_n32", 32, 256, 256, 56, 1, 1, 0, "f16", 4),
    ("1x1_s1_g4_c256_56_n32_f32", 32, 256, 256, 56, 1, 1, 0, "f32", 4),
    ("1x1_s1_g32_c256_56_n32", 32, 256, 256, 56, 1, 1, 0, "f16", 32),
    ("1x1_s2_g4_c64_k128_56_n32_bf16", 32, 64, 128, 56, 1, 2, 0, "bf16", 4),
    ("1x3_s1_g4_c64_28_n32", 32, 64, 64, 28, (1, 3), 1, 0, "f16", 4),
    # more channels a group between them, strided ones, dtypes
    ("1x1_s1_g16_c256_56_n32", 32, 256, 256, 56, 1, 1, 0, "f16", 16),
    ("1x1_s1_g64_c256_56_n32", 32, 256, 256, 56, 1, 1, 0, "f16", 64),
    ("1x1_s1_g32_c512_28_n32", 32, 512, 512, 28, 1, 1, 0, "f16", 32),
    ("1x3_s1_g8_c240_28_n32", 32, 240, 240, 28, (1, 3), 1, 0, "f16", 8),
    ("3x1_s1_g32_c256_28_n32", 32, 256, 256, 28, (3, 1), 1, 0, "f16", 32),
    ("1x1_s2_g4_c64_k128_56_n32", 32, 64, 128, 56, 1, 2, 0, "f16", 4),
    ("1x1_s2_g4_c64_k128_56_n32_f32", 32, 64, 128, 56, 1, 2, 0, "f32", 4),
    ("1x1_s2_g32_c256_56_n32", 32, 256, 256, 56, 1, 2, 0, "f16", 32),
    ("1x1_s1_g32_c256_56_n32_f32", 32, 256, 256, 56, 1, 1, 0, "f32", 32),
    ("1x1_s1_g16_c256_56_n32_bf16", 32, 256, 256, 56, 1, 1, 0, "bf16", 16),
    ("3x1_s1_g32_c256_28_n32_f32", 32, 256, 256, 28, (3, 1), 1, 0, "f32", 32),
    # 1x1 past `Tuning.grouped_one_wide_max_channels` in multiples of 16 (f16 kept since stop 39)
    ("1x1_s1_g8_c256_56_n32", 32, 256, 256, 56, 1, 1, 0, "f16", 8),
    ("1x1_s1_g2_c256_56_n32", 32, 256, 256, 56, 1, 1, 0, "f16", 2),
    ("1x1_s1_g8_c256_56_n32_bf16", 32, 256, 256, 56, 1, 1, 0, "bf16", 8),
)


def _grouped_any_kernel(spec: ConvBackwardSpec, options: LoweringOptions, tuning: plan_tuning.Tuning) -> bool:
    """`grouped_contraction_applies` without its condition on the kernel."""
    return (spec.groups > 1 and not spec.transposed and gw.image_split(spec, options, tuning) > 1)


def flat_contraction(spec: ConvBackwardSpec, plain: ir.Value, windowed: ir.Value, rows: int, columns: int,
                     split: int, images_per_partial: Optional[int] = None) -> ir.Value:
    """A 1x1 stride-1 weight gradient with each image's positions as one
    reduction dim: dw[g, row, col] = sum_{n, p} windowed[n, g, col, p] *
    plain[n, g, row, p], in `split` partial sums of whole images (the plan's
    `image_split`), or of `images_per_partial` images each; with one image per partial the
    reduction is p alone, a batch matmul with its right operand transposed."""
    r = spec.spatial_rank
    plain, windowed = (forms.collapse_range(v, 3, 3 + r) for v in (plain, windowed))
    batch = ir.RankedTensorType(windowed.type).shape[0]
    split = batch // images_per_partial if images_per_partial else split
    windowed = lb.expand_dim(windowed, 0, (split, batch // split))
    plain = lb.expand_dim(plain, 0, (split, batch // split))
    s, g, row, col, n, p = lb.dims(6)
    maps = [lb.affine_map(6, [s, n, g, col, p]), lb.affine_map(6, [s, n, g, row, p]),
            lb.affine_map(6, [s, g, row, col])]
    out_sizes = [spec.groups, rows, columns]
    init = lb.zeros([split, *out_sizes], lb.element_type(gradients.ACCUMULATOR))
    acc = lb.contraction(windowed, plain, init, maps, [PARALLEL] * 4 + [REDUCTION] * 2)
    acc = forms.sum_partials(acc, out_sizes)
    acc = forms.expand_trailing(lb.collapse_dims(acc, 0), [columns, *([1] * r)])
    return lb.convert(acc, lb.element_type(spec.dtype))


def _by_stride_phase(spec, grad_output, input_, *, plan: Plan):
    return weight_phases.grad_weight(spec, grad_output, input_, gradients.grad_weight_contraction, plan=plan)


def _flat(images_per_partial: Optional[int]):
    contraction = functools.partial(flat_contraction, images_per_partial=images_per_partial)

    def build(spec, grad_output, input_, *, plan: Plan):
        """The input's class at the stride gathered (`weight_phases`), then
        the flat contraction; at stride 1 straight from the input."""
        if all(s == 1 for s in spec.stride):
            x, dy = (lb.expand_dim(v, 1, (1, v_c)) for v, v_c in
                     ((input_, spec.in_channels), (grad_output, spec.out_channels)))
            return contraction(spec, dy, x, spec.out_channels, spec.in_channels, plan.grad_weight.image_split)
        return weight_phases.grad_weight(spec, grad_output, input_, contraction, plan=plan)

    return build


def _rows_per_image(spec, grad_output, input_, *, plan: Plan):
    """`weight_rows` on any layer, whether or not the lowering takes it."""
    acc = weight_rows.grad_weight(spec, grad_output, input_, plan.grad_weight.image_split,
                                  gw.rows_padding(spec, plan.tuning))
    return lb.convert(acc, lb.element_type(spec.dtype))


_GRAD_WEIGHT = gradients.grad_weight


def _padded_source(spec, grad_output, input_, *, plan: Plan):
    """The lowering's grad_weight with its im2col gather over a padded copy
    of its source (`GradWeightPlan.gather_unpadded` off)."""
    unpadded = dataclasses.replace(plan.grad_weight, gather_unpadded=False)
    return _GRAD_WEIGHT(spec, grad_output, input_, plan=dataclasses.replace(plan, grad_weight=unpadded))


# form -> what it patches: `plan.grad_weight.by_im2col` forced, a grad_weight
# builder of this module, module attributes (those of `plan_tuning`: fields of
# every target's `Tuning` record).
FORMS = {
    "auto": None,  # the lowering's own pick
    # the contraction with one image per partial sum where the split gives one
    "contraction": (False, None, {(plan_tuning, "half_strided_min_images"): 1}),
    "contraction-2img": (False, None, {(plan_tuning, "half_strided_min_images"): 2}),
    # grouped: the contraction in its own dtype, never read as f32 (`grouped_contraction_widened`)
    "contraction-unwidened": (False, None, {(gw, "grouped_contraction_widened"): lambda spec, options, tuning: False}),
    "im2col": (True, None, {}),
    "stride-phase": (False, _by_stride_phase, {}),
    "flat": (False, _flat(None), {}),
    "flat-1img": (False, _flat(1), {}),
    # `weight_rows`: positions padded to 16 (the lowering's), unpadded, to 128
    "rows-per-image": (False, _rows_per_image, {}),
    "rows-per-image-unpadded": (False, _rows_per_image, {(plan_tuning, "rows_position_multiple"): 1}),
    "rows-per-image-p128": (False, _rows_per_image, {(plan_tuning, "rows_position_multiple"): 128}),
    # im2col over a padded copy of its source (the GPU's gather until 2026-11-25)
    "im2col-padded-source": (True, _padded_source, {}),
    # grouped kernels with a dim of 1 by the contraction, f16/bf16 read as f32
    "contraction-grouped-widened": (None, None, {
        (gw, "grouped_contraction_applies"): _grouped_any_kernel,
        (gw, "grouped_contraction_widened"):
            lambda spec, options, tuning: _grouped_any_kernel(spec, options, tuning) and spec.dtype != "f32"}),
    # grouped kernels with a dim of 1 by the contraction at any channels a group, read
    # as f32 where `grouped_contraction_widened` says
    "contraction-grouped": (None, None, {(gw, "grouped_contraction_applies"): _grouped_any_kernel}),
    # grouped: one ungrouped weight gradient per group, each in the form the lowering picks for it
    "group-split": (None, None, {(plan_forward, "group_split_applies"): lambda groups, channels, options, tuning:
                                 groups > 1}),
}


@contextlib.contextmanager
def _weight_form(form: str) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        if FORMS[form] is not None:
            by_im2col, builder, attributes = FORMS[form]
            if by_im2col is not None:
                stack.enter_context(mock.patch.object(gw, "by_im2col",
                                                      lambda spec, options, tuning: (by_im2col, "forced")))
            stack.enter_context(mock.patch.object(gw, "rows_apply", lambda spec, options, tuning: False))
            stack.enter_context(mock.patch.object(gradients, "grad_weight", builder or gradients.grad_weight))
            fields = {name: value for (module, name), value in attributes.items() if module is plan_tuning}
            if fields:
                stack.enter_context(mock.patch.dict(plan_tuning.TUNING, {
                    target: dataclasses.replace(record, **fields) for target, record in plan_tuning.TUNING.items()}))
            for (module, name), value in attributes.items():
                if module is not plan_tuning:
                    stack.enter_context(mock.patch.object(module, name, value))
        functional.clear_cache()
        try:
            yield
        finally:
            functional.clear_cache()


ONE_TAP_FORMS = ("flat", "flat-1img", "rows-per-image", "rows-per-image-unpadded", "rows-per-image-p128")
WIDE_FORMS = ("contraction-2img",)  # wider kernels only: every 1x1 contraction was wrong, whatever the split


def prepare(folder: Path, form_names: tuple[str, ...] = tuple(FORMS), only: tuple[str, ...] = ("",),
            upstream: bool = True, dtype_override: Optional[str] = None) -> None:
    """Compiles each form of each layer whose name contains one of `only`
    (and upstream's), in the layer's dtype or `dtype_override`, with the
    cases for `check_on_gpu.py` and the manifest for `run_on_gpu.py`."""
    folder.mkdir(parents=True, exist_ok=True)
    cases, manifest = [], []
    layers = (*LAYERS, *LAYERS_1X1_S1, *LAYERS_UNSEEN, *LAYERS_GROUPED, *LAYERS_GROUPED_ONE_WIDE)
    for name, n, c, k, hw, kernel, stride, padding, *rest in layers:
        if not any(part in name for part in only):
            continue
        dtype = dtype_override or (rest[0] if rest else "f16")
        groups = rest[1] if len(rest) > 1 else 1
        name = f"{name}_{dtype_override}" if dtype_override else name
        sizes = (hw, hw) if isinstance(hw, int) else hw
        kernel = (kernel, kernel) if isinstance(kernel, int) else kernel
        layer = gpu_check.Case(name, n, c, k, sizes, kernel, stride, padding, groups, "auto", dtype)
        shapes, arguments = gpu_check.shapes(layer), gpu_check.arguments(layer)
        arguments[-1] = [False, True, False]  # grad_weight only
        tensors = {key: torch.zeros(size, dtype=gpu_check._DTYPES[dtype]) for key, size in shapes.items()}
        spec = functional.spec_of(tensors["dy"], tensors["x"], tensors["w"], *arguments)
        inputs = ["x".join(map(str, shapes[key])) + f"x{dtype}" for key in ("dy", "x", "w")]
        compiled: dict[str, bytes] = {}
        for form in form_names:
            one_tap = kernel == (1, 1)
            if (form in ONE_TAP_FORMS and not one_tap) or (form in WIDE_FORMS and one_tap):
                continue
            case = layer._replace(name=f"{name}_{form}", form=form)
            with _weight_form(form):
                mlir = functional.lowered(spec, target="cuda")
            if mlir not in compiled:  # forms that come to the same IR on this layer compile once
                compiled[mlir] = modules.compiled(mlir, "cuda")[0]  # forced forms: wrong code too
            (folder / f"{case.name}.vmfb").write_bytes(compiled[mlir])
            cases.append(dict(case._asdict(), shapes=shapes, arguments=arguments, known_wrong=None,
                              results=["grad_weight"]))
            manifest.append(dict(shape=name, mask="grad_weight", variant=form, vmfb=f"{case.name}.vmfb",
                                 inputs=inputs))
            print(case.name, flush=True)
        if upstream:
            text = str(lowering.import_module(functional.ConvolutionBackward(spec, None), *tensors.values()))
            (folder / f"{name}_upstream.vmfb").write_bytes(modules.compiled(text, "cuda", modules.UPSTREAM_FLAGS)[0])
            manifest.append(dict(shape=name, mask="grad_weight", variant="upstream", vmfb=f"{name}_upstream.vmfb",
                                 inputs=inputs))
    (folder / "cases.json").write_text(json.dumps(cases, indent=1))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="gpu_weight_forms")
    parser.add_argument("command", choices=["prepare"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--forms", default=",".join(FORMS), help="comma-separated names of FORMS")
    parser.add_argument("--only", action="append", default=[], help="a part of the layer names to compile")
    parser.add_argument("--dtype", choices=sorted(gpu_check._DTYPES), help="instead of each layer's")
    parser.add_argument("--no-upstream", action="store_true")
    args = parser.parse_args(argv)
    prepare(args.folder, tuple(args.forms.split(",")), tuple(args.only) or ("",), not args.no_upstream, args.dtype)


if __name__ == "__main__":
    main(sys.argv[1:])
