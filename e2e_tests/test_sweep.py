"""The randomized sweep. IREE_BWDCONV_SWEEP_CASES sets its size (300; `./dev
test` runs the first `tiers.SWEEP_CASES`, `--full` all) and
IREE_BWDCONV_SWEEP_SEED its seed (`sweep.SEED`); the first
IREE_BWDCONV_SWEEP_GPU_CASES of them (100; `./dev test`:
`tiers.SWEEP_GPU_CASES`) also run in the GPU targets' forms on the CPU and
compile for CUDA and gfx942, where random draws found forms IREE's GPU
code could not compile."""

from __future__ import annotations

import os

import pytest

from . import tiers
from .harness import EXECUTABLE_FORMATS, assert_compiles_for, run_and_compare, run_in_gpu_forms, with_batch
from .sweep import SEED, sweep

CASES = sweep(int(os.environ.get("IREE_BWDCONV_SWEEP_CASES", "300")), int(os.environ.get("IREE_BWDCONV_SWEEP_SEED", SEED)))
GPU_CASES = CASES[: int(os.environ.get("IREE_BWDCONV_SWEEP_GPU_CASES", "100"))]


@pytest.mark.parametrize("case", tiers.first(CASES, tiers.SWEEP_CASES, [c.name for c in CASES]))
def test_sweep_matches_eager_float64(case) -> None:
    run_and_compare(case)
    if case.dynamic_batch:
        run_and_compare(case, with_batch(case.tensors(), case.input_shape[0] + 2))


@pytest.mark.parametrize("case", tiers.first(GPU_CASES, tiers.SWEEP_GPU_CASES, [c.name for c in GPU_CASES]))
def test_sweep_gpu_forms(case) -> None:
    for target in EXECUTABLE_FORMATS:  # first: run_in_gpu_forms clears the lowered IR these reuse
        assert_compiles_for(case, target)
    run_in_gpu_forms(case)
