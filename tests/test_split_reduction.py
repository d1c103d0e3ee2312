"""The weight gradient's split-K forms (GPU targets), compiled for and run
on the CPU against eager float64 over every registered case that asks for
grad_weight, with the split forced down to chunks of a few terms so that the
small cases split too: the im2col matmul split into runs of its reduction,
the one contraction split by images, and `weight_rows` (per image, split by
images; any ungrouped kernel here, 1x1 ones in the lowering). The CUDA
kernel of 1x1 grad_inputs is kept out: its PTX cannot run on the
CPU, and these tests are about the other gradients."""

from __future__ import annotations

import dataclasses
import math

import pytest

from e2e_tests import cases, tiers  # noqa: F401 - cases registers the cases
from e2e_tests.harness import run_and_compare, some_tap_reads_data, spec_of
from e2e_tests.registry import CASES
from iree_bwdconv import functional, geometry
from iree_bwdconv.plan import grad_input as gi
from iree_bwdconv.plan import grad_weight as gw
from iree_bwdconv.plan import tuning

# `weight_rows` is for ungrouped kernels; grouped ones take the contraction on
# GPU targets where `plan.grad_weight.grouped_contraction_applies`, forced here on
# every grouped case. Cases whose every read is padding have a zero weight
# gradient and nothing to split.
# `./dev test` forces one of a case's forms, in turn, on every other case;
# `--full` every one.


def _forms(name: str) -> list[str]:
    case = CASES[name]
    return [form for form in ("im2col", "contraction", "rows")
            if form != "rows" or not (case.groups > 1 or case.transposed or case.dynamic_batch)]


FORMS_OF_CASES = list(tiers.each_in_turn(
    [name for name, case in CASES.items() if case.output_mask[1] and some_tap_reads_data(spec_of(case))],
    _forms, every=2))
MIN_CHUNK, TARGET = 3, 1 << 30


@pytest.fixture
def gpu_forms_split_small(monkeypatch):
    original = functional.lowered
    monkeypatch.setattr(functional, "lowered",
                        lambda spec, bias_sizes=None, target="cpu": original(spec, bias_sizes, "cuda"))
    monkeypatch.setattr(gi, "kernel_why_not", lambda spec, options: "run on the CPU here")
    monkeypatch.setattr(gi, "phase_kernel_why_not", lambda spec, options, tuning: "run on the CPU here")
    monkeypatch.setitem(tuning.TUNING, "cuda", dataclasses.replace(tuning.TUNING["cuda"], split_min_chunk=MIN_CHUNK,
                                                                    split_target_partials=TARGET))
    functional.clear_cache()
    yield original
    functional.clear_cache()


def expected_split(case, form: str) -> int:
    windows = case.input_shape[2:] if case.transposed else case.grad_output_shape[2:]
    images, positions = case.input_shape[0], math.prod(windows)
    outputs = math.prod(case.weight_shape)
    if form == "im2col":
        return geometry.reduction_split(images * positions, outputs, TARGET, MIN_CHUNK)
    min_images = -(-MIN_CHUNK // positions)
    if case.dtype in ("f16", "bf16") and any(s > 1 for s in case.stride):
        min_images = max(min_images, tuning.for_target("cuda").half_strided_min_images)
    return geometry.reduction_split(images, outputs, TARGET, min_images)


@pytest.mark.parametrize("name, form", FORMS_OF_CASES)
def test_split_weight_gradient_matches_eager_float64(name: str, form: str, gpu_forms_split_small,
                                                     monkeypatch) -> None:
    case = CASES[name]
    monkeypatch.setattr(gw, "by_im2col", lambda spec, options, tuning: (form == "im2col", "forced"))
    monkeypatch.setattr(gw, "rows_apply", lambda spec, options, tuning: form == "rows")
    text = gpu_forms_split_small(spec_of(case), case.bias_sizes, "cuda")
    split = expected_split(case, form)
    if case.dynamic_batch:  # the length must be known to split it
        assert "tensor<?x" in text
    elif split > 1:  # a reduction too short for 2 chunks stays whole
        assert f"tensor<{split}x" in text, (split, text)
    run_and_compare(case)


HALF_GROUPED_CASES = [name for name, form in (param.values for param in FORMS_OF_CASES)
                      if form == "contraction" and CASES[name].groups > 1 and CASES[name].dtype in ("f16", "bf16")]


@pytest.mark.parametrize("name", HALF_GROUPED_CASES)
def test_widened_grouped_contraction_matches_eager_float64(name: str, gpu_forms_split_small, monkeypatch) -> None:
    """The grouped contraction with its smaller f16/bf16 operand read as
    f32, the other widened in its body (`plan.grad_weight.grouped_contraction_widened`),
    forced on every such case."""
    case = CASES[name]
    monkeypatch.setattr(gw, "by_im2col", lambda spec, options, tuning: (False, "forced"))
    monkeypatch.setattr(gw, "grouped_contraction_widened", lambda spec, options, tuning: True)
    weight_only = dataclasses.replace(spec_of(case), output_mask=(False, True, False))
    text = gpu_forms_split_small(weight_only, None, "cuda")
    operand_types = [line.split(" ins(")[1].split(") outs(")[0].split(" : ")[1] for line in text.splitlines()
                     if "linalg.generic" in line and "reduction" in line and " ins(" in line]
    contractions = [types for types in operand_types if types.count("tensor<") == 2]
    assert contractions and all(types.count("xf32>") == 1 and types.count(f"x{case.dtype}>") == 1
                                for types in contractions), operand_types
    run_and_compare(case)


def _one_bias_case_per_kind() -> list[str]:
    """grad_bias depends only on dy's rank, batch and dtype: one case each."""
    kinds: dict[tuple, str] = {}
    for name, case in CASES.items():
        if case.output_mask[2]:
            kinds.setdefault((len(case.grad_output_shape), case.dynamic_batch, case.dtype, case.transposed), name)
    return list(kinds.values())


@pytest.mark.parametrize("name", _one_bias_case_per_kind())
def test_split_bias_gradient_matches_eager_float64(name: str, gpu_forms_split_small) -> None:
    """grad_bias in two steps: rows over runs of each image's positions, then
    their sum."""
    case = CASES[name]
    text = gpu_forms_split_small(spec_of(case), case.bias_sizes, "cuda")
    n, f, *spatial = case.grad_output_shape
    images = 1 if case.dynamic_batch else n  # a dynamic batch splits as if of one image
    target_rows = tuning.for_target("cuda").bias_target_rows
    split = geometry.reduction_split(math.prod(spatial), images * f, target_rows, MIN_CHUNK)
    rows = f"tensor<{'?' if case.dynamic_batch else n}x{f}x{split}xf32>"
    assert rows in text, (rows, text)
    run_and_compare(case)
