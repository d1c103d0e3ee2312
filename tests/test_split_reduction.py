"""The weight gradient's split-K form (GPU targets), compiled for and run on
the CPU against eager float64 over every registered case that asks for
grad_weight, with the split forced down to chunks of a few terms so that the
small cases split too."""

from __future__ import annotations

import math

import pytest

from e2e_tests import cases  # noqa: F401 - registers the cases
from e2e_tests.harness import run_and_compare, spec_of
from e2e_tests.registry import CASES
from iree_bwdconv import functional, geometry, gradients

WEIGHT_CASES = [name for name, case in CASES.items() if case.output_mask[1]]


@pytest.fixture
def gpu_forms_split_small(monkeypatch):
    original = functional.lowered
    monkeypatch.setattr(functional, "lowered",
                        lambda spec, bias_sizes=None, target="cpu": original(spec, bias_sizes, "cuda"))
    monkeypatch.setattr(gradients, "SPLIT_MIN_CHUNK", 3)
    monkeypatch.setattr(gradients, "SPLIT_TARGET_PARTIALS", 1 << 30)
    functional.clear_cache()
    yield original
    functional.clear_cache()


@pytest.mark.parametrize("name", WEIGHT_CASES)
def test_split_weight_gradient_matches_eager_float64(name: str, gpu_forms_split_small) -> None:
    case = CASES[name]
    text = gpu_forms_split_small(spec_of(case), case.bias_sizes, "cuda")
    windows = case.input_shape[2:] if case.transposed else case.grad_output_shape[2:]
    length = case.input_shape[0] * math.prod(windows)
    split = geometry.reduction_split(length, math.prod(case.weight_shape), 1 << 30, 3)
    partials = f"tensor<{split}x"
    if case.dynamic_batch:  # the length must be known to split it
        assert "tensor<?x" in text
    elif split > 1:  # a reduction of fewer than 2 * 3 terms stays whole
        assert partials in text, (split, text)
    run_and_compare(case)
