"""The randomized sweep. IREE_BWDCONV_SWEEP_CASES sets its size (CI: 300)."""

from __future__ import annotations

import os

import pytest

from .harness import run_and_compare, with_batch
from .sweep import sweep

CASES = sweep(int(os.environ.get("IREE_BWDCONV_SWEEP_CASES", "300")))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_sweep_matches_eager_float64(case) -> None:
    run_and_compare(case)
    if case.dynamic_batch:
        run_and_compare(case, with_batch(case.tensors(), case.input_shape[0] + 2))
