"""The stride-phase weight-gradient form that `benchmarks/weight_phases.py`
builds for GPU targets, compiled for the CPU, against eager float64: the
IR is right, so where the H100 computes it wrongly (docs/performance-journal.md,
"Read first") IREE's CUDA code is. Odd sizes, padding, stride > kernel
(residues no tap reads) and 1x1 kernels (one phase)."""

from __future__ import annotations

import itertools
from unittest import mock

import pytest
import torch

from benchmarks import weight_phases
from iree_bwdconv import functional, geometry, reference
from iree_bwdconv.builders import gradients
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.run import runtime


@pytest.mark.parametrize("kernel, stride", list(itertools.product(range(1, 8), range(1, 8))))
def test_phases_hold_every_tap_once_and_read_their_class_to_its_end(kernel, stride):
    phases = weight_phases.weight_phases(kernel, stride)
    assert sorted(ph.residue + j * stride for ph in phases for j in range(ph.taps)) == list(range(kernel))
    for windows in range(1, 6):
        span = (windows - 1) * stride + kernel  # the strided reads, as geometry.window_padding spans them
        for ph in phases:
            rows = {o + j for o, j in itertools.product(range(windows), range(ph.taps))}
            assert rows == set(range(ph.source_length(windows)))
            assert all(q * stride + ph.residue < span for q in rows)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kernel, stride, padding, size", [
    (1, 2, 0, 15), (1, 3, 1, 14), (3, 2, 1, 15), (5, 2, 1, 17), (3, 3, 0, 16), (2, 4, 1, 13), (7, 2, 3, 18),
])
def test_stride_phase_weight_gradient_is_right_on_the_cpu(dtype, kernel, stride, padding, size):
    generator = torch.Generator().manual_seed(0)
    out = geometry.conv_output_size(size, kernel, stride, padding, 1)
    dy = torch.randn(2, 8, out, out, generator=generator).to(dtype)
    x = torch.randn(2, 6, size, size, generator=generator).to(dtype)
    w = torch.randn(8, 6, kernel, kernel, generator=generator).to(dtype)
    arguments = (None, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1, [False, True, False])
    configuration = functional.spec_of(dy, x, w, *arguments)

    def by_phase(spec, grad_output, input_, *, plan):
        return weight_phases.grad_weight(spec, grad_output, input_, gradients.grad_weight_contraction, plan=plan)

    with mock.patch.object(gradients, "grad_weight", by_phase):
        functional.clear_cache()
        mlir = functional.lowered(configuration, target="cuda")
    functional.clear_cache()
    assert mlir.count('"reduction"]') == min(stride, kernel) ** 2  # one stride-1 contraction per phase
    grad_weight = runtime.run(pipeline.iree_compile(mlir, "cpu"), [dy, x, w])[0]
    (comparison,) = reference.compare([None, grad_weight, None], dy, x, w, arguments)
    assert comparison.ok, comparison
