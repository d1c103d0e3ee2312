"""The U-Net: its layout, its per-pixel labels, and its training graphs
(transposed convolutions forward and backward) through our lowering,
each compiled graph equal to its aten graph run eagerly on the same
inputs. Its first-step gradients are judged graph by graph: at 16x16 and
batch 2 one ReLU input lies within rounding of zero and parts any two
correct float32 runs by far more than rounding (`graph_check`)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from iree_bwdconv.torch_compile.graph_check import RecordingBackend, largest_error
from iree_bwdconv.models import MODELS, SyntheticImages
from iree_bwdconv.training import forward_backward
from iree_bwdconv.models.unet import UNet


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def test_layout():
    net = MODELS["unet"]()
    ups = [m for m in net.modules() if isinstance(m, nn.ConvTranspose2d)]
    assert [(m.in_channels, m.out_channels, m.kernel_size, m.stride) for m in ups] == [
        (128, 64, (2, 2), (2, 2)), (256, 128, (2, 2), (2, 2)), (512, 256, (2, 2), (2, 2)), (1024, 512, (2, 2), (2, 2))]
    assert net(torch.randn(1, 3, 32, 32)).shape == (1, 10, 32, 32)


def test_dense_labels_mark_the_bright_stripes_with_the_class():
    images, labels = SyntheticImages(size=16, seed=3).batch(4, dense=True)
    assert labels.shape == (4, 16, 16) and labels.dtype == torch.int64
    classes = SyntheticImages(size=16, seed=3).batch(4)[1]
    for image_labels, cls in zip(labels, classes):
        assert set(image_labels.unique().tolist()) <= {0, int(cls)}


def test_training_graphs_equal_their_aten_graphs(tmp_path):
    torch.manual_seed(0)
    net = UNet(width=8, depth=2)
    images, labels = SyntheticImages(size=16, seed=0).batch(2, dense=True)
    backend = RecordingBackend(fallback="raise", cache_dir=str(tmp_path))
    backend.recording = True
    forward_backward(torch.compile(copy.deepcopy(net), backend=backend), images, labels)
    assert len(backend.calls) == 2  # the forward and the backward graph
    worst = largest_error(backend.calls)
    assert worst.ratio <= 1.0, worst
    # A miscompute the check must see: one gradient off by 1% of the largest.
    gradients = [o for o in backend.calls[1].outputs if isinstance(o, torch.Tensor) and o.is_floating_point()]
    largest = max(gradients, key=lambda o: o.abs().max().item())
    gradients[0].view(-1)[0] += 0.01 * largest.abs().max()
    assert largest_error(backend.calls).ratio > 1.0
