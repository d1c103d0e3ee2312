"""torchvision's layouts of RegNet-X-400MF, MobileNetV2 and V3, ShuffleNetV2
and EfficientNet-B0 (`iree_bwdconv.models.model_zoo`, random weights) through
torch.compile with our backend: one training step's forward and backward
pass, graph by graph against eager in float64 (`graphs`), batch 4 at
64x64: the last stage keeps 2x2 positions, so that its train-mode batch
norms average 16 values (at 32x32 they average 2, and their gradients are
all rounding, eager's as much as ours).

Each model spends 30-80 s in iree-compile on a 2-core machine: CI runs
the cheapest, IREE_BWDCONV_MODELS=all (or a comma-separated list of
names) runs more."""

from __future__ import annotations

import os

import pytest
import torch

import iree_bwdconv
from iree_bwdconv.models.model_zoo import ZOO

from .graphs import assert_as_accurate_as_eager


@pytest.fixture
def backend():
    torch._dynamo.reset()
    yield iree_bwdconv.backend(fallback="raise", cache=False)
    torch._dynamo.reset()


CI_MODELS = "shufflenet_v2_x1_0"
_CHOSEN = os.environ.get("IREE_BWDCONV_MODELS", CI_MODELS)
MODELS = sorted(ZOO) if _CHOSEN == "all" else [name.strip() for name in _CHOSEN.split(",") if name.strip()]


def test_models_named_exist():
    assert set(MODELS) <= set(ZOO), f"IREE_BWDCONV_MODELS: not in {sorted(ZOO)}"


@pytest.mark.parametrize("name", MODELS)
def test_model_trains_a_step_like_eager(name, backend):
    torch.manual_seed(0)
    model = ZOO[name]()
    assert_as_accurate_as_eager(model, [torch.randn(4, 3, 64, 64)], backend, name, calls=1)
