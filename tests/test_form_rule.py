"""The grad_input form rule (`choose_form`) on the configurations that
docs/performance.md measured it on: which form each target gets."""

from __future__ import annotations

import pytest
import torch

import iree_bwdconv.patterns.convolution_backward_phases as phases
from iree_bwdconv import functional, geometry, targets


def spec(channels: int, out_channels: int, kernel: int, stride: int, padding: int, size: int = 32, groups: int = 1):
    out = geometry.conv_output_size(size, kernel, stride, padding, 1)
    dy, x = torch.zeros(1, out_channels, out, out), torch.zeros(1, channels, size, size)
    w = torch.zeros(out_channels, channels // groups, kernel, kernel)
    return functional.spec_of(dy, x, w, None, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], groups,
                              [True, False, False])


@pytest.mark.parametrize("channels, out_channels, kernel, stride, padding, groups, gpu_form, cpu_form", [
    (3, 64, 7, 2, 3, 1, "col2im", "col2im"),       # ResNet-50's stem: narrow
    (3, 64, 5, 2, 2, 1, "col2im", "col2im"),
    (3, 32, 3, 2, 1, 1, "col2im", "col2im"),       # c3 k32 940x1450, MobileNet's stem
    (16, 64, 7, 2, 3, 1, "per-phase", "col2im"),   # wider than NARROW_CHANNELS
    (64, 64, 5, 2, 2, 1, "per-phase", "col2im"),
    (128, 128, 3, 2, 1, 1, "per-phase", "col2im"),
    (8, 32, 3, 2, 1, 1, "per-phase", "col2im"),    # short reductions: once direct's
    (32, 64, 3, 2, 1, 1, "per-phase", "col2im"),
    (3, 8, 1, 2, 0, 1, "per-phase", "per-phase"),  # a 1x1 kernel: one GEMM
    (8, 8, 3, 2, 1, 4, "direct", "direct"),        # grouped (on the CPU group by group)
    (8, 8, 3, 2, 1, 8, "direct", "direct"),        # depthwise
])
def test_form_per_target(channels, out_channels, kernel, stride, padding, groups, gpu_form, cpu_form, monkeypatch):
    monkeypatch.delenv(phases.FORM_VARIABLE, raising=False)
    configuration = spec(channels, out_channels, kernel, stride, padding, groups=groups)
    for target in ("cuda", "gfx942"):
        with targets.lowering_for(target):
            assert phases.choose_form(configuration) == gpu_form
    with targets.lowering_for("cpu"):
        assert phases.choose_form(configuration) == cpu_form
