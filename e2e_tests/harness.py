"""Runs a registered case through the functional API and compares it with
eager PyTorch in float64 (iree_bwdconv.reference holds the error bound)."""

from __future__ import annotations

import torch

import iree_bwdconv
from iree_bwdconv import functional, reference

from .registry import ConvBackwardCase

# Cases expected to fail, with the reason; empty while everything passes.
# A test of a listed case fails if the case starts passing (strict xfail).
EXPECTED_FAILURES: dict[str, str] = {}


def with_batch(tensors: tuple[torch.Tensor, ...], batch: int) -> tuple[torch.Tensor, ...]:
    """The same case at another batch size (for dynamic-batch modules)."""
    grad_output, input, weight = tensors
    generator = torch.Generator().manual_seed(batch)
    resize = lambda t: torch.randn((batch, *t.shape[1:]), generator=generator).to(t.dtype)  # noqa: E731
    return resize(grad_output), resize(input), weight


def run_and_compare(case: ConvBackwardCase, tensors=None, target: str = "cpu") -> list[reference.Comparison]:
    tensors = tensors or case.tensors()
    got = iree_bwdconv.convolution_backward(
        *tensors, *case.arguments(), target=target, dynamic_batch=case.dynamic_batch
    )
    comparisons = reference.compare(got, *tensors, case.arguments())
    failed = [c for c in comparisons if not c.ok]
    assert not failed, f"{case.name}: {failed}"
    return comparisons


def spec_of(case: ConvBackwardCase):
    return functional.spec_of(*case.tensors(), *case.arguments(), dynamic_batch=case.dynamic_batch)
