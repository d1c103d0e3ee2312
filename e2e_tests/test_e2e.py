"""Every registered case: numerics on the CPU against eager float64 (with
the CPU's forms and with the GPU targets' forms), and a compile for gfx942
and CUDA so that no target breaks silently."""

from __future__ import annotations

import io
import zipfile

import pytest

from iree_bwdconv import functional

from . import cases  # noqa: F401 - registers the cases
from .harness import EXPECTED_FAILURES, run_and_compare, spec_of, with_batch
from .registry import CASES

# What iree-compile embeds in the .vmfb for each target's kernels.
EXECUTABLE_FORMATS = {"gfx942": "rocm_hsaco", "cuda": "cuda_nvptx"}


def _params():
    for name in CASES:
        marks = [pytest.mark.xfail(reason=EXPECTED_FAILURES[name], strict=True)] if name in EXPECTED_FAILURES else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(_params()))
def test_matches_eager_float64(name: str) -> None:
    case = CASES[name]
    run_and_compare(case)
    if case.dynamic_batch:
        compiled_before = len(functional._cache)
        run_and_compare(case, with_batch(case.tensors(), case.input_shape[0] + 3))
        assert len(functional._cache) == compiled_before, "a new batch size recompiled"


@pytest.mark.parametrize("name", list(_params()))
def test_gpu_forms_match_eager_float64(name: str, monkeypatch) -> None:
    """The forms the lowering picks for GPU targets (which this machine cannot
    run) compiled for and run on the CPU: a wrong GPU form shows here."""
    original = functional.lowered
    monkeypatch.setattr(functional, "lowered",
                        lambda spec, bias_sizes=None, target="cpu": original(spec, bias_sizes, "cuda"))
    functional.clear_cache()  # modules compiled with the CPU's forms must not answer
    try:
        run_and_compare(CASES[name])
    finally:
        functional.clear_cache()


@pytest.mark.parametrize("target", ["gfx942", "cuda"])
@pytest.mark.parametrize("name", list(_params()))
def test_compiles_for_target(name: str, target: str) -> None:
    case = CASES[name]
    vmfb = functional.compile(functional.lowered(spec_of(case), case.bias_sizes, target), target)
    embedded = zipfile.ZipFile(io.BytesIO(vmfb)).namelist()
    assert "module.fb" in embedded
    assert any(EXECUTABLE_FORMATS[target] in name for name in embedded), embedded


STRIDED = [name for name, c in CASES.items()
           if max(c.stride) > 1 and not c.transposed and c.output_mask[0] and name not in EXPECTED_FAILURES]


@pytest.mark.parametrize("form", ["per-phase", "sub-pixel", "col2im"])
@pytest.mark.parametrize("name", STRIDED)
def test_every_grad_input_form_matches_eager(name: str, form: str, monkeypatch) -> None:
    """The form rule picks one form per case and target; each must be right
    everywhere and compile for every target."""
    monkeypatch.setenv(functional.GRAD_INPUT_FORM_VARIABLE, form)
    case = CASES[name]
    run_and_compare(case)
    for target in EXECUTABLE_FORMATS:
        functional.compile(functional.lowered(spec_of(case), case.bias_sizes, target), target)
