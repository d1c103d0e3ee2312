"""Bad input gets an error naming the argument and its value, before any
IR is built or compiled."""

from __future__ import annotations

import pytest
import torch

import iree_bwdconv
from iree_bwdconv import functional, lowering
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.errors import InvalidArgumentError, UnsupportedDtypeError

GOOD = dict(bias_sizes=[4], stride=[2, 2], padding=[1, 1], dilation=[1, 1], transposed=False,
            output_padding=[0, 0], groups=1, output_mask=[True, True, True])


def tensors(dy=(2, 4, 4, 4), x=(2, 2, 8, 8), w=(4, 2, 3, 3), dtype=torch.float32):
    return torch.zeros(dy, dtype=dtype), torch.zeros(x, dtype=dtype), torch.zeros(w, dtype=dtype)


@pytest.fixture(autouse=True)
def no_compiling(monkeypatch):
    """Any attempt to compile fails the test: errors must come first."""
    def refuse(*args, **kwargs):
        raise AssertionError("compiled before validating")
    monkeypatch.setattr(pipeline, "iree_compile", refuse)
    monkeypatch.setattr(lowering, "import_module", refuse)
    monkeypatch.setattr(lowering, "lower_torch", refuse)


def call(args=None, **overrides):
    return iree_bwdconv.convolution_backward(*(args or tensors()), **{**GOOD, **overrides})


@pytest.mark.parametrize("overrides, argument, value", [
    (dict(padding=[-1, 1]), "padding", [-1, 1]),
    (dict(stride=[0, 2]), "stride", [0, 2]),
    (dict(dilation=[1, 0]), "dilation", [1, 0]),
    (dict(stride=[2, 2, 2]), "stride", [2, 2, 2]),
    (dict(padding=[1, 1, 1, 1]), "padding", [1, 1, 1, 1]),
    (dict(groups=3), "groups", 3),
    (dict(groups=0), "groups", 0),
    (dict(output_padding=[1, 1]), "output_padding", [1, 1]),
    (dict(bias_sizes=[5]), "bias_sizes", [5]),
    (dict(bias_sizes=[0]), "bias_sizes", [0]),  # [0] means "no bias": only without grad_bias
    (dict(output_mask=[True, True]), "output_mask", [True, True]),
])
def test_bad_arguments_are_named(overrides, argument, value):
    with pytest.raises(InvalidArgumentError) as err:
        call(**overrides)
    assert err.value.argument == argument and err.value.value == value
    assert argument in str(err.value) and repr(value) in str(err.value)


@pytest.mark.parametrize("shapes, argument", [
    (dict(dy=(2, 4, 5, 5)), "grad_output.shape"),
    (dict(dy=(3, 4, 4, 4)), "grad_output.shape"),
    (dict(w=(4, 3, 3, 3)), "weight.shape"),
    (dict(w=(4, 2, 3)), "input.shape"),
    (dict(dy=(2, 4), x=(2, 2), w=(4, 2)), "weight.shape"),
])
def test_mismatched_shapes_are_named(shapes, argument):
    with pytest.raises(InvalidArgumentError) as err:
        call(tensors(**shapes))
    assert err.value.argument == argument


def test_transposed_output_padding_must_be_below_stride_or_dilation():
    dy, x, w = torch.zeros(2, 4, 10, 10), torch.zeros(2, 2, 5, 5), torch.zeros(2, 4, 3, 3)
    with pytest.raises(InvalidArgumentError, match="output_padding=\\[2, 2\\]"):
        iree_bwdconv.convolution_backward(dy, x, w, None, [2, 2], [1, 1], [1, 1], True, [2, 2], 1,
                                          [True, True, True])


def test_groups_must_divide_both_channel_counts():
    with pytest.raises(InvalidArgumentError, match="groups=2: does not divide grad_output channels 3"):
        call(tensors(dy=(2, 3, 4, 4), x=(2, 2, 8, 8), w=(3, 1, 3, 3)), groups=2, bias_sizes=None)


@pytest.mark.parametrize("transposed, shapes", [
    (False, dict(dy=(2, 12, 6, 6), x=(2, 8, 8, 8), w=(12, 2, 3, 3))),  # w: [out, in / groups, ...]
    (True, dict(dy=(2, 12, 10, 10), x=(2, 8, 8, 8), w=(8, 3, 3, 3))),  # w: [in, out / groups, ...]
])
def test_channels_per_group_of_a_spec(transposed, shapes):
    configuration = functional.spec_of(*tensors(**shapes), None, [1, 1], [0, 0], [1, 1], transposed, [0, 0], 4,
                                       [True, True, False])
    assert (configuration.in_channels_per_group, configuration.out_channels_per_group) == (2, 3)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float64, torch.int8])
def test_unsupported_dtypes_are_named(dtype):
    with pytest.raises(UnsupportedDtypeError, match="grad_output.dtype"):
        call(tensors(dtype=dtype))


def test_mixed_dtypes_are_refused():
    dy, x, w = tensors()
    with pytest.raises(UnsupportedDtypeError, match="share one dtype"):
        call((dy, x.half(), w))


def test_non_tensor_is_named():
    dy, x, w = tensors()
    with pytest.raises(InvalidArgumentError, match="weight="):
        call((dy, x, w.tolist()))


def test_unknown_target_is_named():
    with pytest.raises(InvalidArgumentError, match="target='tpu'"):
        iree_bwdconv.convolution_backward(*tensors(), **GOOD, target="tpu")


def test_all_false_mask_returns_nothing_without_compiling():
    assert call(output_mask=[False, False, False]) == (None, None, None)
