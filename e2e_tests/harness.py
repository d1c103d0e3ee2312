"""Runs a registered case through the functional API and compares it with
eager PyTorch in float64 (iree_bwdconv.reference holds the error bound)."""

from __future__ import annotations

import io
import zipfile
from unittest import mock

import torch

import iree_bwdconv
from iree_bwdconv import functional, reference
from iree_bwdconv.spec import ConvBackwardSpec

from .registry import ConvBackwardCase

# Cases expected to fail, with the reason; empty while everything passes.
# A test of a listed case fails if the case starts passing (strict xfail).
EXPECTED_FAILURES: dict[str, str] = {}

# What iree-compile embeds in the .vmfb for each GPU target's kernels.
EXECUTABLE_FORMATS = {"gfx942": "rocm_hsaco", "cuda": "cuda_nvptx"}


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


def spec_of(case: ConvBackwardCase) -> ConvBackwardSpec:
    return functional.spec_of(*case.tensors(), *case.arguments(), dynamic_batch=case.dynamic_batch)


def run_in_gpu_forms(case: ConvBackwardCase) -> None:
    """The forms the lowering picks for GPU targets (which this machine
    cannot run), CUDA's and gfx942's where they differ, compiled for and run
    on the CPU: a wrong GPU form shows here. A CUDA module that dispatches
    our own kernel (`extern_kernels`) holds PTX, which no CPU runs; its
    numbers are checked on a GPU (`benchmarks/gpu_check.py`)."""
    spec = spec_of(case)
    texts = {functional.lowered(spec, case.bias_sizes, gpu) for gpu in EXECUTABLE_FORMATS}
    texts = {text for text in texts if "hal.dispatch.extern" not in text}
    for text in texts:
        with mock.patch.object(functional, "lowered", lambda *args, **kwargs: text):
            functional.clear_cache()  # modules compiled with the CPU's forms must not answer
            try:
                run_and_compare(case)
            finally:
                functional.clear_cache()


def assert_compiles_for(case: ConvBackwardCase, target: str) -> None:
    """The case's module for `target` compiles and carries that target's
    kernels, unless every gradient it asks for is zero by its shapes alone
    (IREE then folds the module to constants)."""
    spec = spec_of(case)
    mlir = functional.lowered(spec, case.bias_sizes, target)
    embedded = zipfile.ZipFile(io.BytesIO(functional.compile(mlir, target))).namelist()
    assert "module.fb" in embedded
    grad_input, grad_weight, grad_bias = spec.output_mask
    computes = grad_bias or ((grad_input or grad_weight) and some_tap_reads_data(spec))
    assert any(EXECUTABLE_FORMATS[target] in name for name in embedded) == computes, embedded


def some_tap_reads_data(spec: ConvBackwardSpec) -> bool:
    """Whether, in every spatial dim, some window o and tap k of the
    forward convolution read `o*s + k*d - p` inside its input (the
    transposed convolution's output when transposed): else every product
    has a padding zero, and grad_input and grad_weight are zeros. Listed
    read by read, not from `geometry`."""
    source, windows = ((spec.output_spatial, spec.input_spatial) if spec.transposed
                       else (spec.input_spatial, spec.output_spatial))
    return all(any(0 <= o * s + k * d - p < size for o in range(n) for k in range(kernel))
               for size, n, kernel, s, p, d in zip(source, windows, spec.kernel, spec.stride, spec.padding,
                                                   spec.dilation))
