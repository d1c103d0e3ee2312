"""Every registered case: numerics on the CPU against eager float64 (with
the CPU's forms and with the GPU targets' forms), and a compile for gfx942
and CUDA so that no target breaks silently. `./dev test` compiles every
other case for one GPU target and forces one grad_input form on each
strided case, in turn (`tiers`); `--full` does every pair."""

from __future__ import annotations

import pytest

from iree_bwdconv import functional

from . import cases  # noqa: F401 - registers the cases
from . import tiers
from .harness import (EXECUTABLE_FORMATS, EXPECTED_FAILURES, assert_compiles_for, run_and_compare, run_in_gpu_forms,
                      spec_of, with_batch)
from .registry import CASES


def _marks(name: str) -> list:
    return [pytest.mark.xfail(reason=EXPECTED_FAILURES[name], strict=True)] if name in EXPECTED_FAILURES else []


def _params():
    for name in CASES:
        yield pytest.param(name, marks=_marks(name), id=name)


def _in_turn(names, choices, every: int = 1):
    return tiers.each_in_turn(names, lambda name: choices, every, _marks)


@pytest.mark.parametrize("name", list(_params()))
def test_matches_eager_float64(name: str) -> None:
    case = CASES[name]
    run_and_compare(case)
    if case.dynamic_batch:
        compiled_before = len(functional._cache)
        run_and_compare(case, with_batch(case.tensors(), case.input_shape[0] + 3))
        assert len(functional._cache) == compiled_before, "a new batch size recompiled"


@pytest.mark.parametrize("name", list(_params()))
def test_gpu_forms_match_eager_float64(name: str) -> None:
    run_in_gpu_forms(CASES[name])


@pytest.mark.parametrize("name, target", list(_in_turn(CASES, list(EXECUTABLE_FORMATS), every=2)))
def test_compiles_for_target(name: str, target: str) -> None:
    assert_compiles_for(CASES[name], target)


STRIDED = [name for name, c in CASES.items()
           if max(c.stride) > 1 and not c.transposed and c.output_mask[0] and name not in EXPECTED_FAILURES]


FORMS = ["per-phase", "sub-pixel", "col2im"]


@pytest.mark.parametrize("name, form", list(_in_turn(STRIDED, FORMS)))
def test_every_grad_input_form_matches_eager(name: str, form: str, monkeypatch) -> None:
    """The form rule picks one form per case and target; each must be right
    everywhere."""
    monkeypatch.setenv(functional.GRAD_INPUT_FORM_VARIABLE, form)
    run_and_compare(CASES[name])


@pytest.mark.parametrize("name, form, target",
                         list(_in_turn(STRIDED, [(form, target) for form in FORMS for target in EXECUTABLE_FORMATS], every=2)))
def test_every_grad_input_form_compiles_for_target(name: str, form: str, target: str, monkeypatch) -> None:
    """... and compile for every target."""
    monkeypatch.setenv(functional.GRAD_INPUT_FORM_VARIABLE, form)
    case = CASES[name]
    functional.compile(functional.lowered(spec_of(case), case.bias_sizes, target), target)
