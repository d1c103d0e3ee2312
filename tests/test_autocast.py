"""Mixed precision on the CPU: torch.autocast's graphs (f16/bf16
convolutions from f32 master weights, batch norm in f32, the casts
between) through the backend, every graph lowered (fallback="raise").

The oracle is eager PyTorch in float64, as everywhere; autocast's own
rounding makes eager autocast far from it (10-60% on single gradients of a
small batch), so ours must be no farther from it than eager autocast is,
over all gradients together."""

from __future__ import annotations

import copy

import pytest
import torch

import iree_bwdconv
from iree_bwdconv.models import DemoCNN

# Ours over eager autocast's error against float64; rounding at other
# places gives a few percent either way, a wrong gradient O(1).
ERROR_RATIO = 1.5


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def _gradients(model: torch.nn.Module, images, labels, dtype) -> torch.Tensor:
    with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
        loss = torch.nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    return torch.cat([p.grad.double().flatten() for p in model.parameters()])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_autocast_gradients_as_close_to_float64_as_eager_autocast(dtype, tmp_path):
    torch.manual_seed(0)
    net = DemoCNN()
    images, labels = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))
    exact = _gradients(copy.deepcopy(net).double(), images.double(), labels, None)
    eager = _gradients(copy.deepcopy(net), images, labels, dtype)
    backend = iree_bwdconv.backend(fallback="raise", cache_dir=str(tmp_path / "cache"))
    ours = _gradients(torch.compile(copy.deepcopy(net), backend=backend), images, labels, dtype)
    eager_error = float((eager - exact).norm() / exact.norm())
    ours_error = float((ours - exact).norm() / exact.norm())
    assert ours_error <= ERROR_RATIO * eager_error, (ours_error, eager_error)
