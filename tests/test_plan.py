"""The plan's table: for each rule of docs/forms.md, a layer it decides and
what it decides there, on the target it is for. Every rule is the reason
of at least one row, so a rule that stops firing where it was measured (or
a new rule without a row) fails here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import ForwardSpec, plan, plan_forward, plan_transposed_forward
from iree_bwdconv.plan.rules import RULES
from iree_bwdconv.spec import layer_spec

FORMS_DOC = Path(__file__).resolve().parents[1] / "docs" / "forms.md"
F16, F32 = "f16", "f32"


def _layer(c: int, f: int, sizes: tuple[int, ...], kernel: tuple[int, ...], stride: int = 1, padding: int = 0,
           batch: Any = 2, **keywords: Any):
    rank = len(sizes)
    return layer_spec(batch, c, f, sizes, kernel, (stride,) * rank if isinstance(stride, int) else stride,
                      (padding,) * rank if isinstance(padding, int) else padding, **keywords)


# (row, target, the layer, options beyond the target, {field path: value}, rules that must decide)
BACKWARD = [
    ("cpu_3x3_s2", "cpu", _layer(64, 64, (28, 28), (3, 3), 2, 1), {},
     {"grad_input.form": "col2im", "grad_weight.form": "im2col", "grad_weight.named_matmul": True,
      "grad_bias.split": None}, {"cpu_col2im", "cpu_weight_im2col", "cpu_named_matmul"}),
    ("cpu_1x1_s2", "cpu", _layer(64, 128, (28, 28), (1, 1), 2), {},
     {"grad_input.form": "per-phase", "grad_input.one_matmul": True}, {"cpu_one_tap_per_phase", "phase_one_matmul"}),
    ("cpu_3x3_s2_g4", "cpu", _layer(32, 32, (16, 16), (3, 3), 2, 1, groups=4), {},
     {"grad_input.form": "direct", "group_split": True, "built.groups": 1}, {"cpu_grouped_direct", "cpu_group_split"}),
    ("cpu_depthwise_3x3_s2", "cpu", _layer(32, 32, (16, 16), (3, 3), 2, 1, groups=32), {},
     {"grad_input.form": "direct", "group_split": False}, {"cpu_grouped_direct"}),
    ("cpu_3x3_s1_c128", "cpu", _layer(128, 128, (14, 14), (3, 3), 1, 1), {},
     {"grad_input.form": "direct", "grad_input.im2col_matmul": True}, {"unit_stride_direct", "direct_im2col_matmul"}),
    ("cpu_3x3_s1_c64", "cpu", _layer(64, 64, (14, 14), (3, 3), 1, 1), {},
     {"grad_input.form": "direct", "grad_input.im2col_matmul": False}, {"unit_stride_direct"}),
    ("cpu_forced_col2im", "cpu", _layer(64, 64, (16, 16), (3, 3), 2, 1, groups=4), {"grad_input_form": "col2im"},
     {"grad_input.form": "col2im"}, {"forced"}),
    ("cpu_forced_subpixel_unaligned", "cpu", _layer(8, 8, (16, 16), (3, 3), 2, 3, dilation=(3, 3)),
     {"grad_input_form": "sub-pixel"}, {"grad_input.form": "per-phase"}, {"subpixel_unaligned"}),
    ("cpu_stem_n1", "cpu", _layer(3, 64, (32, 32), (7, 7), 2, 3, batch=1), {},
     {"grad_weight.columns_first": False, "grad_weight.taps": (8, 8)}, {"cpu_padded_taps"}),
    ("cpu_3x3_s1_deep", "cpu", _layer(64, 64, (28, 28), (3, 3), 1, 1, batch=8), {},
     {"grad_weight.columns_first": True, "grad_weight.taps": (3, 3)}, {"cpu_columns_first"}),
    ("cpu_transposed_3x3_s2", "cpu", _layer(32, 16, (8, 8), (3, 3), 2, 1, transposed=True), {},
     {"grad_input.form": "transposed", "grad_input.transposed_form": "conv"}, {"transposed_strided_conv"}),
    ("cuda_3x3_s2_f16", "cuda", _layer(64, 64, (28, 28), (3, 3), 2, 1, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.one_table": True, "grad_input.stored_in_place": True,
      "grad_input.gather_weave": False, "grad_input.in_f32": False},
     {"gpu_per_phase", "phase_one_table", "phase_stored_in_place"}),
    ("cuda_3x3_s2_f16_woven", "cuda", _layer(64, 64, (28, 28), (3, 3), 2, 1, dtype=F16), {"phases_in_place": False},
     {"grad_input.stored_in_place": False, "grad_input.gather_weave": True}, {"gpu_gather_weave"}),
    ("gfx942_3x3_s2_f16", "gfx942", _layer(64, 64, (28, 28), (3, 3), 2, 1, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.stored_in_place": False, "grad_input.gather_weave": True},
     {"gpu_gather_weave"}),
    # grouped, 16 to 32 channels a group: our phase kernel; more: in place, its phase of one tap a GEMM
    # (IREE fault cuda_grouped_phase_store); 8 channels (a group) without the kernel: woven
    # (cuda_mma_padding_overread)
    ("cuda_4x4_s2_g4_c64_f16", "cuda", _layer(64, 64, (28, 28), (4, 4), 2, 1, groups=4, dtype=F16), {},
     {"grad_input.form": "phase-kernel"}, {"cuda_phase_kernel"}),
    ("cuda_3x3_s2_g4_c256_f16", "cuda", _layer(256, 256, (28, 28), (3, 3), 2, 1, groups=4, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.stored_in_place": True, "grad_input.one_tap_gemm": True},
     {"gpu_grouped_per_phase", "phase_stored_in_place", "phase_grouped_one_tap_gemm"}),
    ("cuda_4x4_s2_g4_c256_f16", "cuda", _layer(256, 256, (28, 28), (4, 4), 2, 1, groups=4, dtype=F16), {},
     {"grad_input.stored_in_place": True}, {"phase_stored_in_place"}),
    ("cuda_3x3_s2_g4_c256_f16_woven", "cuda", _layer(256, 256, (28, 28), (3, 3), 2, 1, groups=4, dtype=F16),
     {"phases_in_place": False},
     {"grad_input.stored_in_place": False, "grad_input.gather_weave": True, "grad_input.one_tap_gemm": False},
     {"gpu_grouped_per_phase", "gpu_gather_weave"}),
    ("cuda_3x3_s2_g8_c64_f16_woven", "cuda", _layer(64, 64, (28, 28), (3, 3), 2, 1, groups=8, dtype=F16),
     {"extern_kernels": False},
     {"grad_input.stored_in_place": False, "grad_input.gather_weave": True}, {"gpu_gather_weave"}),
    ("cuda_3x3_s2_c8_f16_woven", "cuda", _layer(8, 32, (28, 28), (3, 3), 2, 1, dtype=F16), {},
     {"grad_input.stored_in_place": False}, set()),
    # one row along a dim: its phase would take no step there (IREE fault cuda_strided_insert_mma_fusion)
    ("cuda_3x3_s2_one_row_f16", "cuda", _layer(64, 64, (2, 28), (3, 3), 2, 1, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.stored_in_place": False}, {"gpu_per_phase"}),
    ("cuda_3x3_s1x2_f16", "cuda", _layer(64, 64, (28, 28), (3, 3), (1, 2), 1, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.one_table": False, "grad_input.stored_in_place": False},
     {"gpu_per_phase", "phase_tables_each"}),
    ("cuda_5x5_s2_f16", "cuda", _layer(64, 64, (28, 28), (5, 5), 2, 2, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.one_table": False}, {"gpu_per_phase"}),
    ("cuda_stem_f16", "cuda", _layer(3, 64, (64, 64), (7, 7), 2, 3, dtype=F16), {},
     {"grad_input.form": "phase-kernel"}, {"cuda_phase_kernel"}),
    ("cuda_stem_f16_no_kernels", "cuda", _layer(3, 64, (64, 64), (7, 7), 2, 3, dtype=F16), {"extern_kernels": False},
     {"grad_input.form": "col2im", "grad_input.images_first": True}, {"gpu_narrow_col2im", "col2im_images_first"}),
    ("cuda_3x3_s2_f32", "cuda", _layer(64, 64, (28, 28), (3, 3), 2, 1), {},
     {"grad_input.form": "col2im"}, {"gpu_f32_col2im"}),
    ("cuda_3x3_s2_g32_f16", "cuda", _layer(256, 256, (28, 28), (3, 3), 2, 1, groups=32, dtype=F16, batch=32), {},
     {"grad_input.form": "phase-kernel", "grad_weight.form": "contraction", "grad_weight.widened": True},
     {"cuda_phase_kernel", "grouped_weight_contraction", "grouped_weight_widened"}),
    ("cuda_3x3_s2_g32_f16_no_kernels", "cuda", _layer(256, 256, (28, 28), (3, 3), 2, 1, groups=32, dtype=F16,
                                                      batch=32), {"extern_kernels": False},
     # even positions (i + 1 - k even: k = 1) are the phase of one tap, the one widened
     {"grad_input.form": "per-phase", "grad_input.widened_phases": frozenset({(0, 0)}),
      "grad_weight.form": "contraction", "grad_weight.widened": True},
     {"gpu_grouped_per_phase", "phase_widened", "grouped_weight_contraction", "grouped_weight_widened"}),
    ("gfx942_3x3_s2_g32_f16", "gfx942", _layer(256, 256, (28, 28), (3, 3), 2, 1, groups=32, dtype=F16, batch=32),
     {}, {"grad_weight.form": "im2col"}, {"grouped_weight_im2col"}),
    ("cuda_1x1_s2_f16", "cuda", _layer(64, 128, (28, 28), (1, 1), 2, dtype=F16), {},
     {"grad_input.form": "kernel"}, {"cuda_kernel"}),
    ("cuda_1x1_s2_c60_f16", "cuda", _layer(60, 128, (28, 28), (1, 1), 2, dtype=F16), {},
     {"grad_input.form": "kernel"}, {"cuda_kernel", "kernel_padded_channels"}),
    ("cuda_dw5x5_s2_f16", "cuda", _layer(144, 144, (28, 28), (5, 5), 2, 2, groups=144, dtype=F16), {},
     {"grad_input.form": "direct"}, {"gpu_depthwise_direct"}),
    ("cuda_dw7x7_s2_f16", "cuda", _layer(144, 144, (28, 28), (7, 7), 2, 3, groups=144, dtype=F16), {},
     {"grad_input.form": "per-phase"}, {"gpu_grouped_per_phase"}),
    ("gfx942_1x1_s2_f16", "gfx942", _layer(64, 128, (28, 28), (1, 1), 2, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.weight_first": True},
     {"gpu_one_tap_per_phase", "phase_weight_first"}),
    ("gfx942_1x1_s1_f16", "gfx942", _layer(64, 128, (28, 28), (1, 1), 1, dtype=F16), {},
     {"grad_input.form": "per-phase"}, {"gpu_one_tap_per_phase"}),
    ("cuda_1x1_s2_f32", "cuda", _layer(64, 128, (28, 28), (1, 1), 2), {},
     {"grad_input.form": "per-phase", "grad_input.one_matmul": True}, {"phase_one_matmul"}),
    ("cuda_plain_3x3_s2_f16", "cuda", _layer(64, 64, (28, 28), (3, 3), 2, 1, dtype=F16), {"plain_forms": True},
     {"grad_input.form": "direct", "grad_weight.im2col_split": 1}, {"gpu_plain_direct"}),
    ("cuda_forced_subpixel_f16", "cuda", _layer(64, 64, (28, 28), (3, 3), 2, 1, dtype=F16),
     {"grad_input_form": "sub-pixel"}, {"grad_input.form": "sub-pixel", "grad_input.in_f32": True}, {"half_in_f32"}),
    ("gfx942_narrow_groups_f16", "gfx942", _layer(32, 256, (16, 16), (3, 3), 2, 1, groups=4, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.in_f32": True}, {"half_in_f32", "phase_narrow_widened"}),
    ("cuda_narrow_groups_f16", "cuda", _layer(32, 256, (16, 16), (3, 3), 2, 1, groups=4, dtype=F16),
     {"extern_kernels": False},
     {"grad_input.form": "per-phase", "grad_input.in_f32": False}, {"gpu_grouped_per_phase"}),
    ("gfx942_narrow_inputs_f16", "gfx942", _layer(8, 32, (16, 16), (3, 3), 2, 1, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.in_f32": True}, {"half_in_f32", "phase_narrow_widened"}),
    ("cuda_narrow_inputs_f16", "cuda", _layer(8, 32, (16, 16), (3, 3), 2, 1, dtype=F16), {"extern_kernels": False},
     {"grad_input.form": "per-phase", "grad_input.in_f32": False}, {"gpu_per_phase"}),
    ("cuda_1x1_s2_g32_f16", "cuda", _layer(256, 256, (28, 28), (1, 1), 2, groups=32, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.in_f32": True}, {"half_in_f32"}),
    ("cuda_3x3_s1_c128_f32", "cuda", _layer(128, 128, (14, 14), (3, 3), 1, 1), {},
     {"grad_input.form": "direct", "grad_input.weight_as_is": True, "grad_input.im2col_matmul": False},
     {"direct_weight_as_is"}),
    ("cuda_3x3_s1_c64_f32", "cuda", _layer(64, 64, (14, 14), (3, 3), 1, 1), {},
     {"grad_input.form": "direct", "grad_input.im2col_matmul": True}, {"direct_im2col_matmul"}),
    ("gfx942_windowless_3x1_c8_f16", "gfx942", _layer(8, 8, (1, 8), (3, 1), 1, (1, 0), dtype=F16), {},
     {"grad_input.form": "direct", "grad_input.widened_windowless": True}, {"windowless_widened"}),
    ("cuda_transposed_1x1_s2_f32", "cuda", _layer(64, 32, (14, 14), (1, 1), 2, transposed=True), {},
     {"grad_input.transposed_form": "im2col-matmul"}, {"one_tap_strided_f32_im2col"}),
    ("cuda_transposed_1x1_s2_f16", "cuda", _layer(64, 32, (14, 14), (1, 1), 2, transposed=True, dtype=F16), {},
     {"grad_input.transposed_form": "weight-first-gemm"}, {"transposed_one_tap_gemm"}),
    ("gfx942_transposed_windowless_f16", "gfx942", _layer(8, 8, (1, 8), (3, 1), transposed=True, dtype=F16), {},
     {"grad_input.transposed_form": "windowless-conv", "grad_input.widened_windowless": True},
     {"windowless_half_conv", "windowless_widened"}),
    ("cuda_1d_1x1_s2_g4_f16", "cuda", _layer(64, 64, (16,), (1,), 2, groups=4, dtype=F16), {},
     {"grad_input.form": "per-phase", "grad_input.woven_axes": (0,), "grad_input.in_f32": False}, {"phase_woven"}),
    ("cuda_3x3_s2_c64_n32_f16", "cuda", _layer(64, 64, (56, 56), (3, 3), 2, 1, batch=32, dtype=F16), {},
     {"grad_weight.form": "contraction"}, {"half_weight_contraction", "split_k"}),
    ("cuda_3x3_s2_c64_n32_f32", "cuda", _layer(64, 64, (56, 56), (3, 3), 2, 1, batch=32), {},
     {"grad_weight.form": "im2col", "grad_weight.gather_unpadded": True, "grad_weight.named_matmul": False},
     {"f32_weight_im2col", "gpu_unpadded_gather"}),
    ("cuda_1x3_f16", "cuda", _layer(64, 64, (28, 28), (1, 3), 1, (0, 1), batch=8, dtype=F16), {},
     {"grad_weight.form": "im2col"}, {"half_one_wide_weight_im2col"}),
    ("cuda_stem_n1_f16", "cuda", _layer(3, 32, (64, 64), (3, 3), 2, 1, batch=1, dtype=F16), {},
     {"grad_weight.form": "im2col"}, {"few_partials_weight_im2col"}),
    ("cuda_3x3_s1_c256_f16", "cuda", _layer(256, 256, (14, 14), (3, 3), 1, 1, batch=32, dtype=F16), {},
     {"grad_weight.form": "im2col"}, {"wide_weight_im2col"}),
    ("cuda_1x1_s1_c256_f16", "cuda", _layer(256, 256, (28, 28), (1, 1), 1, batch=8, dtype=F16), {},
     {"grad_weight.form": "rows", "grad_weight.rows_padding": (0, 0)}, {"weight_rows"}),
    ("gfx942_dynamic_batch_f16", "gfx942", _layer(8, 8, (5, 5), (3, 3), 1, 1, batch=None, dtype=F16), {},
     {"grad_bias.batch_first": True}, {"bias_batch_first"}),
    ("cuda_bias_f32", "cuda", _layer(3, 32, (470, 725), (3, 3), 1, 1, batch=3), {},
     {"grad_bias.batch_first": False}, {"bias_split"}),
]

FORWARD = [
    ("cpu_fw_3x3_c64", "cpu", ForwardSpec(64, 64, (3, 3), (1, 1), 1, F32, (28, 28)), None, "cpu_forward_named_conv"),
    ("cpu_fw_3x3_c128", "cpu", ForwardSpec(128, 128, (3, 3), (1, 1), 1, F32, (28, 28)), "per-group",
     "cpu_forward_im2col"),
    ("cpu_fw_g4", "cpu", ForwardSpec(32, 32, (3, 3), (1, 1), 4, F32, (28, 28)), "per-group", "cpu_group_split"),
    ("cpu_fw_depthwise", "cpu", ForwardSpec(32, 32, (3, 3), (1, 1), 32, F32, (28, 28)), None,
     "depthwise_forward_torch_mlir"),
    ("gfx942_fw_depthwise_3d", "gfx942", ForwardSpec(8, 8, (3, 3, 3), (1, 1, 1), 8, F16, (4, 4, 4)), "grouped",
     "depthwise_3d_forward"),
    ("cuda_fw_1x1_f16", "cuda", ForwardSpec(64, 64, (1, 1), (1, 1), 1, F16, (28, 28)), "per-group",
     "windowless_half_forward"),
    ("cuda_fw_1x1_s2_f32", "cuda", ForwardSpec(64, 64, (1, 1), (2, 2), 1, F32, (14, 14)), "per-group",
     "one_tap_f32_forward"),
    ("cuda_fw_3x3_f16", "cuda", ForwardSpec(64, 64, (3, 3), (1, 1), 1, F16, (28, 28)), None, "gpu_forward_torch_mlir"),
    ("cuda_fw_1x1_g4_f16", "cuda", ForwardSpec(32, 32, (1, 1), (1, 1), 4, F16, (28, 28)), "windowless-grouped",
     "windowless_half_forward"),
]


def _field(value: Any, path: str) -> Any:
    for name in path.split("."):
        value = getattr(value, name)
    return value


@pytest.mark.parametrize("row, target, spec, extra, expected, rules", BACKWARD, ids=[row[0] for row in BACKWARD])
def test_backward_plan(row, target, spec, extra, expected, rules):
    decided = plan(spec, LoweringOptions(target=target, **extra))
    for path, value in expected.items():
        assert _field(decided, path) == value, path
    assert rules <= set(decided.rules), decided.rules


@pytest.mark.parametrize("row, target, spec, form, rule", FORWARD, ids=[row[0] for row in FORWARD])
def test_forward_plan(row, target, spec, form, rule):
    decided = plan_forward(spec, LoweringOptions(target=target))
    assert (decided.form, decided.rule) == (form, rule)
    assert (decided.form is None) == bool(decided.why_not)


def test_every_rule_decides_a_row_of_the_table():
    fired = {rule for _, target, spec, extra, _, _ in BACKWARD
             for rule in plan(spec, LoweringOptions(target=target, **extra)).rules}
    fired |= {plan_forward(spec, LoweringOptions(target=target)).rule for _, target, spec, _, _ in FORWARD}
    fired |= {plan_transposed_forward(_layer(8, 8, (8, 8), (3, 3), stride, 1, groups=groups), LoweringOptions())[1]
              for stride in (1, 2) for groups in (1, 8)}
    assert fired <= set(RULES), fired - set(RULES)
    assert set(RULES) <= fired, f"rules no row of the table decides by: {sorted(set(RULES) - fired)}"


def test_docs_forms_lists_every_rule_and_no_other():
    listed = set(re.findall(r"^\| `([a-z0-9_]+)` \|", FORMS_DOC.read_text(), flags=re.MULTILINE))
    assert listed == set(RULES), (sorted(set(RULES) - listed), sorted(listed - set(RULES)))


def test_the_plan_imports_neither_mlir_nor_torch():
    probe = ("import sys, iree_bwdconv.plan, iree_bwdconv.plan.rules; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torch_mlir', 'iree')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_pattern_follows_the_form():
    decided = plan(_layer(64, 64, (28, 28), (3, 3), 2, 1), LoweringOptions(target="cpu"))
    assert decided.pattern == "convolution_backward_phases"
    asks_no_input = _layer(64, 64, (28, 28), (3, 3), 2, 1, output_mask=(False, True, True))
    assert plan(asks_no_input, LoweringOptions(target="cpu")).pattern == "convolution_backward"
    assert plan(asks_no_input, LoweringOptions(target="cpu")).grad_input is None


def test_an_edited_rule_or_threshold_changes_the_compile_cache_key():
    from iree_bwdconv.compiler import compile_cache

    names = {path.relative_to(path.parents[1]).as_posix() for path in compile_cache.digested_files()}
    assert {"plan/tuning.py", "plan/grad_input.py", "plan/rules.py"} <= names, sorted(names)


@pytest.mark.parametrize("channels, stride, groups, rule, form", [
    (32, 2, 1, "transposed_forward_phases", "per-phase"),
    (32, 1, 1, "transposed_forward_torch_mlir", None),
    (32, 1, 2, "transposed_forward_torch_mlir", None),  # 32 input channels a group: torch-mlir lowers it
    (64, 1, 64, "transposed_forward_depthwise_stride_1", "direct"),
])
def test_transposed_forward_plan(channels, stride, groups, rule, form):
    """A transposed convolution's forward is the grad_input of the
    convolution it transposes (here of `channels` inputs and 64 outputs, so
    64 input channels of the transposed one): planned as that where
    strided, and at stride 1 where torch-mlir's lowering fails, with one
    input channel a group."""
    transposes = _layer(channels, 64, (32, 32), (4, 4), stride, 1, dtype=F16, groups=groups,
                        output_mask=(True, False, False))
    decided, why = plan_transposed_forward(transposes, LoweringOptions(target="gfx942"))
    assert why == rule and (decided is not None) == (form is not None)
    if form is not None:
        assert decided.rules[0] == rule and decided.grad_input.form == form
