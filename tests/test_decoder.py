"""The encoder-decoder: its layout, and its training graphs (the three
kinds of strided transposed convolution, forward by stride phases and
backward) through our lowering, each compiled graph equal to its aten
graph run eagerly on the same inputs (`graph_check`), the forward one
with no zeros inserted between the input's elements."""

from __future__ import annotations

import copy
import re
from unittest import mock

import pytest
import torch
from torch import nn

from iree_bwdconv import lowering, patterns
from iree_bwdconv.models import MODELS, SyntheticImages
from iree_bwdconv.models.decoder import Decoder
from iree_bwdconv.torch_compile.graph_check import RecordingBackend, largest_error
from iree_bwdconv.training import forward_backward

# torch-mlir's transposed convolution: its input inserted into zeros with stride 2.
STRIDED_INSERT = re.compile(r"tensor\.insert_slice [^\n]*\[1, 1, 2, 2\]")


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def test_layout():
    net = MODELS["decoder"]()
    ups = [m for m in net.modules() if isinstance(m, nn.ConvTranspose2d)]
    assert [(m.in_channels, m.out_channels, m.kernel_size, m.stride, m.padding, m.output_padding) for m in ups] == [
        (256, 128, (3, 3), (2, 2), (1, 1), (1, 1)),
        (128, 64, (4, 4), (2, 2), (1, 1), (0, 0)),
        (64, 32, (2, 2), (2, 2), (0, 0), (0, 0)),
    ]
    assert net(torch.randn(1, 3, 32, 32)).shape == (1, 10, 32, 32)


def test_the_zero_insertion_is_seen_where_torch_mlir_lowers(monkeypatch):
    upsampling, x = Decoder(width=4).decode, torch.zeros(1, 32, 2, 2)
    assert not STRIDED_INSERT.search(lowering.lower(upsampling, x))
    monkeypatch.setattr(patterns, "REGISTRY", tuple(p for p in patterns.REGISTRY if p.name != "convolution_transposed"))
    assert len(STRIDED_INSERT.findall(lowering.lower(upsampling, x))) == 3


def test_training_graphs_equal_their_aten_graphs(tmp_path):
    torch.manual_seed(0)
    net = Decoder(width=4)
    images, labels = SyntheticImages(size=16, seed=0).batch(2, dense=True)
    backend = RecordingBackend(fallback="raise", cache_dir=str(tmp_path), isolate=False)
    backend.recording = True
    lowered: list[str] = []
    lower_torch = lowering.lower_torch

    def keep(*args, **kwargs) -> str:
        lowered.append(lower_torch(*args, **kwargs))
        return lowered[-1]

    with mock.patch.object(lowering, "lower_torch", keep):
        forward_backward(torch.compile(copy.deepcopy(net), backend=backend), images, labels)
    assert len(backend.calls) == 2 == len(lowered)  # the forward and the backward graph
    assert not STRIDED_INSERT.search(lowered[0])
    worst = largest_error(backend.calls)
    assert worst.ratio <= 1.0, worst
