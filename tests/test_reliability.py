"""Probes of a hostile user's: threads, bad arguments. Each once failed
(docs/reliability.md has the table: probe, what it did, this test)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import iree_bwdconv
from iree_bwdconv import functional
from iree_bwdconv.errors import InvalidArgumentError

# Four small configurations, each its own module.
_CONFIGS = [
    ((2, 3, 8, 8), (4, 3, 3, 3), [2, 2], [1, 1], 1),
    ((2, 4, 7, 6), (4, 2, 3, 3), [1, 2], [1, 0], 2),
    ((1, 2, 9), (3, 2, 2), [2], [0], 1),
    ((2, 4, 6, 6), (4, 1, 1, 1), [2, 2], [0, 0], 4),
]


def _call(config, errors: list) -> None:
    shape, weight_shape, stride, padding, groups = config
    generator = torch.Generator().manual_seed(len(shape))
    x, w = torch.randn(shape, generator=generator), torch.randn(weight_shape, generator=generator)
    conv = torch.nn.functional.conv1d if len(shape) == 3 else torch.nn.functional.conv2d
    dy = torch.randn(conv(x, w, stride=stride, padding=padding, groups=groups).shape, generator=generator)
    arguments = (None, stride, padding, [1] * len(stride), False, [0] * len(stride), groups, [True, True, False])
    try:
        got = iree_bwdconv.convolution_backward(dy, x, w, *arguments)
        expected = torch.ops.aten.convolution_backward(dy.double(), x.double(), w.double(), *arguments)
        for a, b in zip(got[:2], expected[:2]):
            assert (a.double() - b).abs().max().item() <= 1e-4 * b.abs().max().item()
    except BaseException as error:  # noqa: BLE001 - reported to the test's thread
        errors.append(error)


@pytest.mark.parametrize("round_", range(2))
def test_first_calls_from_threads_at_once(round_):
    """Four threads' first calls at once failed inside torch.export, and in
    one run in five left torch.backends.mkldnn.enabled off for the process."""
    functional.clear_cache()
    mkldnn = torch.backends.mkldnn.enabled
    errors: list = []
    threads = [threading.Thread(target=_call, args=(config, errors)) for config in _CONFIGS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert torch.backends.mkldnn.enabled == mkldnn


_DY, _X, _W = torch.zeros(2, 4, 4, 4), torch.zeros(2, 3, 8, 8), torch.zeros(4, 3, 3, 3)
_GOOD = dict(bias_sizes=None, stride=[2, 2], padding=[1, 1], dilation=[1, 1], transposed=False,
             output_padding=[0, 0], groups=1, output_mask=[True, True, False])


@pytest.mark.parametrize("argument, value", [
    ("transposed", "False"),  # bool("False") is True: gradients ~100% off
    ("transposed", 2),
    ("stride", [2.0, 2]),  # int(2.5) would be 2
    ("padding", [1.5, 1]),
    ("groups", 1.0),
    ("groups", True),
    ("output_mask", ["yes", True, False]),
    ("bias_sizes", [4.0]),
    ("dilation", "11"),
])
def test_arguments_eager_refuses_are_refused_by_name(argument, value):
    arguments = dict(_GOOD, **{argument: value})
    with pytest.raises(InvalidArgumentError) as error:
        functional.spec_of(_DY, _X, _W, *arguments.values())
    assert error.value.argument == argument


@pytest.mark.parametrize("argument, value", [
    ("groups", np.int64(1)),  # eager takes numpy and torch integers
    ("groups", torch.tensor(1)),
    ("stride", [np.int32(2), torch.tensor(2)]),
    ("transposed", np.bool_(False)),
    ("transposed", 0),  # and 0 or 1 for a bool
    ("output_mask", [1, 1, 0]),
])
def test_arguments_eager_takes_are_taken(argument, value):
    arguments = dict(_GOOD, **{argument: value})
    spec = functional.spec_of(_DY, _X, _W, *arguments.values())
    assert spec.stride == (2, 2) and spec.groups == 1 and not spec.transposed


def test_dynamic_batch_must_be_a_bool():
    with pytest.raises(InvalidArgumentError, match="dynamic_batch"):
        iree_bwdconv.convolution_backward(_DY, _X, _W, *_GOOD.values(), dynamic_batch="yes")


@pytest.mark.parametrize("make", [lambda t: t.to("meta"),
                                  lambda t: torch._subclasses.fake_tensor.FakeTensorMode().from_tensor(t)],
                         ids=["meta", "fake"])
def test_meta_and_fake_tensors_are_refused_before_compiling(make, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("compiled a module for tensors without values")

    monkeypatch.setattr(functional, "compiled_module", refuse)
    with pytest.raises(InvalidArgumentError, match="input.device"):
        iree_bwdconv.convolution_backward(_DY, make(_X), _W, *_GOOD.values())
