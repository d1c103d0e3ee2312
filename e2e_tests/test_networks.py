"""Whole graphs through torch.compile with our backend, compared with eager
PyTorch in float64 (`graphs`): the random networks of `networks` (their
count set by IREE_BWDCONV_NETWORKS, 128, of which `./dev test` runs the
first `tiers.NETWORK_ENSEMBLES` ensembles and `--full` all; their seed by
IREE_BWDCONV_NETWORK_SEED, `networks.SEED`), and the graphs that once came
out wrong.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import iree_bwdconv
from iree_bwdconv.compiler import iree_faults, pipeline
from iree_bwdconv import lowering
from iree_bwdconv.torch_compile.graph_compiler import import_graph, split_outputs

from . import networks, tiers
from .graphs import assert_as_accurate_as_eager, recorded_graphs

COUNT = int(os.environ.get("IREE_BWDCONV_NETWORKS", "128"))
SEED = int(os.environ.get("IREE_BWDCONV_NETWORK_SEED", networks.SEED))
NETWORKS = networks.networks(COUNT, SEED)
# Networks compiled together: each test's forward and backward graphs hold
# this many of them side by side (38% less time a network than singly).
ENSEMBLE = 4
CALLS = 3


@pytest.fixture
def backend():
    torch._dynamo.reset()  # dynamo would stop compiling a forward it has seen too many times
    yield iree_bwdconv.backend(fallback="raise", cache=False)
    torch._dynamo.reset()


ENSEMBLES = networks.ensembles(NETWORKS, ENSEMBLE)


@pytest.mark.parametrize("ensemble", tiers.first(ENSEMBLES, tiers.NETWORK_ENSEMBLES, [e.name for e in ENSEMBLES]))
def test_random_networks_match_eager_float64(ensemble, backend):
    assert_as_accurate_as_eager(ensemble, ensemble.example_inputs(), backend, ensemble.describe(), CALLS)


class StridedPair(nn.Module):
    """A computed tensor read first by a 1x1 stride-2 convolution, then by a
    3x3 stride-2 one: a RegNet or ResNet downsampling block, the
    projection first."""

    def __init__(self, producer: nn.Module, channels: int = 8) -> None:
        super().__init__()
        self.producer = producer
        self.projection = nn.Conv2d(channels, channels, 1, stride=2, bias=False)
        self.main = nn.Conv2d(channels, channels, 3, stride=2, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor]:
        x = self.producer(x)
        return (self.projection(x) + self.main(x),)


PRODUCERS: dict[str, Callable[[], nn.Module]] = {
    "centered": networks.Centered, "relu": nn.ReLU, "batch_norm_train": lambda: nn.BatchNorm2d(8),
}


@pytest.mark.parametrize("producer", sorted(PRODUCERS))
def test_two_strided_convolutions_of_one_computed_tensor(producer, backend):
    """IREE fused the producer into the 1x1 convolution's strided gather and
    wrote only the elements it read (`iree_faults.MULTI_USE_FUSION_PARTIAL_WRITE`):
    the sum came out 83%-100% off."""
    torch.manual_seed(0)
    x = torch.randn(2, 8, 32, 32)
    assert_as_accurate_as_eager(StridedPair(PRODUCERS[producer]()), [x], backend, f"StridedPair({producer})")


def test_the_reported_function_with_weights_as_inputs(backend):
    def f(x: torch.Tensor, wa: torch.Tensor, wb: torch.Tensor) -> torch.Tensor:
        x = x - x.mean(dim=(0, 2, 3), keepdim=True)
        return F.conv2d(x, wa, stride=2) + F.conv2d(x, wb, stride=2, padding=1)

    torch.manual_seed(0)
    args: Sequence[torch.Tensor] = (torch.randn(2, 8, 32, 32), torch.randn(8, 8, 1, 1), torch.randn(8, 8, 3, 3))
    expected = f(*(a.double() for a in args))
    got = torch.compile(f, backend=backend)(*args)
    assert (got.double() - expected).abs().max().item() <= 1e-5 * expected.abs().max().item()


def shares_a_computed_tensor(network: networks.Network) -> bool:
    readers = [i for node in network.nodes for i in node.inputs if i > 0]
    return len(readers) > len(set(readers))


# On the GPU targets, which this machine cannot run: the networks that read
# a computed tensor twice, their graphs lowered in that target's forms and
# compiled to IREE's flow IR, where no op may write a result partially.
GPU_ENSEMBLES = networks.ensembles([n for n in NETWORKS if shares_a_computed_tensor(n)][: int(os.environ.get(
    "IREE_BWDCONV_GPU_NETWORKS", "20"))], ENSEMBLE)


@pytest.mark.parametrize("target", ["gfx942", "cuda"])
@pytest.mark.parametrize("ensemble", GPU_ENSEMBLES, ids=[e.name for e in GPU_ENSEMBLES])
def test_random_networks_write_every_result_whole_on_gpu_targets(ensemble, target):
    for gm in recorded_graphs(ensemble, ensemble.example_inputs()):
        graph, _, _ = split_outputs(gm)
        flow = pipeline.iree_compile_to(lowering.lower_torch(import_graph(graph), "linalg", target), target, "flow")
        assert iree_faults.partial_writes(flow) == [], ensemble.describe()
