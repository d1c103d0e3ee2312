"""Convolutions whose window slides along no dim, in f16/bf16 on the GPU:
widened to f32 (as every such form was until IREE's loop-order fault was
found: `iree_bwdconv.compiler.mma_order`) or kept in their dtype with their
positions' loops before their output channels' (`contraction_forms.conv`).
The forms that widen are the grouped 1x1 grad_input (its one stride phase),
a grouped layer's phases of one tap, the transposed grad_input and the
grouped forward of such a window, and the direct form forced on a 1x1
kernel, and the grouped 1x1 weight gradient's contraction (`WEIGHT_LAYERS`,
grad_weight alone). Right (with `check_on_gpu.py`) and how fast (with `run_on_gpu.py`),
on layers sized for timing and on `gpu_check`'s small ones, beside torch
eager. The evidence for `plan.targets.widens_windowless`.

    ./dev python -m benchmarks.windowless_gpu prepare .bench-windowless [NAME-PART]  # here
    CHECK_TIMEOUT_S=40 python3 benchmarks/check_on_gpu.py .bench-windowless     # there
    python3 benchmarks/run_on_gpu.py .bench-windowless results.json             # there

The f16 variants of UNFINISHED did not return within 40 s on the H100:
they are checked (and time out), not timed.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Iterator
from unittest import mock

import torch

from iree_bwdconv import functional
from iree_bwdconv.plan import targets

from . import gpu_check, modules

# name, n, c, k, hw, kernel, stride, padding, groups, form, kind: each a
# form that widened, at a size worth timing.
LAYERS = (
    ("1x1_s2_g4_n32_c256_k512_28", 32, 256, 512, 28, 1, 2, 0, 4, "auto", "backward"),
    ("1x1_s2_g8_n32_c240_k480_28", 32, 240, 480, 28, 1, 2, 0, 8, "auto", "backward"),  # ShuffleNet-like
    ("1x1_s2_g32_n32_c256_k256_56", 32, 256, 256, 56, 1, 2, 0, 32, "auto", "backward"),  # 8 a group
    ("1x1_s1_g4_n32_c256_k512_28", 32, 256, 512, 28, 1, 1, 0, 4, "auto", "backward"),
    ("3x3_s2_g32_n32_c256_k256_56", 32, 256, 256, 56, 3, 2, 1, 32, "auto", "backward"),  # a 1-tap phase
    ("3x3_s2_g4_n16_c128_k128_57", 16, 128, 128, 57, 3, 2, 1, 4, "auto", "backward"),
    ("1x1_s2_g4_n16_c256_k512_28_direct", 16, 256, 512, 28, 1, 2, 0, 4, "direct", "backward"),
    ("T1x1_s2_g8_n16_c512_k256_28", 16, 512, 256, 28, 1, 2, 0, 8, "auto", "transposed"),
    ("T1x1_s2_g32_n16_c256_k256_28", 16, 256, 256, 28, 1, 2, 0, 32, "auto", "transposed"),
    ("F1x1_s1_g4_n32_c256_k512_28", 32, 256, 512, 28, 1, 1, 0, 4, "auto", "forward"),
    ("F1x1_s2_g8_n32_c240_k480_28", 32, 240, 480, 28, 1, 2, 0, 8, "auto", "forward"),
    ("F1x1_s1_g32_n32_c256_k256_56", 32, 256, 256, 56, 1, 1, 0, 32, "auto", "forward"),
)
# name, n, c, k, hw, groups: grouped 1x1 kernels at stride 1 whose weight
# gradient is the contraction split by images (16 channels a group on one side).
WEIGHT_LAYERS = (
    ("W1x1_s1_g16_n32_c256_k256_56", 32, 256, 256, 56, 16),
    ("W1x1_s1_g4_n8_c64_k128_28", 8, 64, 128, 28, 4),
    ("W1x1_s1_g8_n32_c128_k256_28", 32, 128, 256, 28, 8),
)
# Layers whose f16 variant IREE's code did not finish (8 channels a group, or 30).
UNFINISHED = ("1x1_s2_g8_n32_c240_k480_28", "1x1_s2_g32_n32_c256_k256_56", "3x3_s2_g32_n32_c256_k256_56",
              "F1x1_s1_g32_n32_c256_k256_56")
# gpu_check's cases with such a form, checked in both variants.
SMALL = ("1x1_s2_g4", "1x1_s2_g4_direct", "1x1_s2_g32", "1x1_s3_p1_g2", "3x3_s2_g4_odd_per_phase", "3x3_s2_g2_odd",
         "3x3_s2_d3_g4", "1x1_s1_g4", "transposed_1x1_s2_g4", "transposed_3x1_s3_h1", "transposed_3x1_s2_h1_c64",
         "forward_3x1_h3_g4", "forward_1x1_s1_g4", "forward_1x1_s2_g4")
VARIANTS = ("widened", "half")


@contextlib.contextmanager
def _variant(name: str) -> Iterator[None]:
    """`widened`: the rule as it stood (every such window in f32); `half`: none widened."""
    with contextlib.ExitStack() as stack:
        every = targets.half_precision_on_gpu
        rule = ((lambda target, dtype, channels, tuning: False) if name == "half"
                else (lambda target, dtype, channels, tuning: every(target, dtype)))
        stack.enter_context(mock.patch.object(targets, "widens_windowless", rule))
        functional.clear_cache()
        try:
            yield
        finally:
            functional.clear_cache()


def _cases(match: str) -> list[tuple[gpu_check.Case, bool]]:
    """Each case and whether it is timed (LAYERS are; `gpu_check`'s are only checked)."""
    large = [gpu_check.Case(f"{name}_f16", n, c, k, hw, (kernel, kernel), stride, padding, groups, form, "f16",
                            kind=kind)
             for name, n, c, k, hw, kernel, stride, padding, groups, form, kind in LAYERS]
    large += [gpu_check.Case(f"{name}_f16", n, c, k, hw, (1, 1), 1, 0, groups, "auto", "f16")
              for name, n, c, k, hw, groups in WEIGHT_LAYERS]
    small = [case for case in gpu_check.CASES if case.dtype != "f32" and not case.dynamic_batch
             and case.name.rsplit("_", 1)[0] in SMALL]
    return [(case, case in large) for case in large + small if match in case.name]


def prepare(folder: Path, match: str = "") -> None:
    """Every case whose name contains `match`, in both variants."""
    folder.mkdir(parents=True, exist_ok=True)
    cases, manifest = [], []
    for case, timed in _cases(match):
        weight_only = case.name.removesuffix("_f16") in {name for name, *_ in WEIGHT_LAYERS}
        mask = "forward" if case.kind == "forward" else "grad_weight" if weight_only else "gradients"
        arguments = gpu_check.arguments(case)
        if weight_only:
            arguments[-1] = [False, True, False]
        for variant in VARIANTS:
            with _variant(variant):
                text = _weight_gradient(case, arguments) if weight_only else gpu_check._mlir(case)
            named = case._replace(name=f"{case.name}_{variant}")
            entry = modules.compiled_entry(folder, text, "cuda", shape=case.name, mask=mask, variant=variant,
                                           vmfb=f"{named.name}.vmfb", inputs=_inputs(case))
            if "compile_error" not in entry:
                cases.append(dict(named._asdict(), shapes=gpu_check.shapes(case), arguments=arguments, known_wrong=None,
                                  wrong_code=entry.get("wrong_code"), results=["grad_weight"] if weight_only else None))
            if timed and not (variant == "half" and case.name.removesuffix("_f16") in UNFINISHED):
                manifest.append(entry)
        if timed:
            manifest.append(dict(shape=case.name, mask=mask, variant="torch-eager", eager=_eager(case)))
    (folder / "cases.json").write_text(json.dumps(cases, indent=1))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def _weight_gradient(case: gpu_check.Case, arguments: list) -> str:
    tensors = [torch.zeros(size, dtype=torch.float16) for size in gpu_check.shapes(case).values()]
    return functional.lowered(functional.spec_of(*tensors, *arguments), target="cuda")


def _inputs(case: gpu_check.Case) -> list[str]:
    shapes = gpu_check.shapes(case)
    names = ("x", "w") if case.kind == "forward" else ("dy", "x", "w")
    return ["x".join(map(str, shapes[name])) + f"x{case.dtype}" for name in names]


def _eager(case: gpu_check.Case) -> dict:
    return dict(n=case.n, c=case.c, k=case.k, hw=[case.hw] * 2, kernel=case.kernel[0], stride=case.stride,
                padding=case.padding, groups=case.groups, dtype=case.dtype, transposed=case.kind == "transposed")


if __name__ == "__main__":
    prepare(Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
