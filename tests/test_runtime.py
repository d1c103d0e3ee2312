"""How torch tensors cross into IREE and back (`runtime`). The CUDA path
itself runs only where there is a GPU: `benchmarks/cuda_tensors.py` checks
it there; here, which path each device takes, and the exit hook."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from iree_bwdconv import runtime

CPU, CUDA0, CUDA1 = torch.device("cpu"), torch.device("cuda", 0), torch.device("cuda", 1)


@pytest.mark.parametrize("target, device, expected", [
    ("cpu", CPU, True),
    ("cpu", CUDA0, False),
    ("cuda", CUDA0, True),   # IREE's CUDA device is cuda:0, in the same primary context
    ("cuda", CUDA1, False),  # another GPU: through host memory
    ("cuda", CPU, False),
    ("gfx942", CUDA0, False),  # torch's ROCm tensors also say "cuda"; IREE's HIP import is unchecked
])
def test_which_tensors_cross_by_dlpack(target, device, expected):
    assert runtime.crosses_by_dlpack(target, device) is expected


def test_results_go_to_the_first_device_off_the_cpu():
    on_meta = torch.empty(2, device="meta")
    assert runtime.device_of([torch.zeros(1), 3, on_meta]) == torch.device("meta")
    assert runtime.device_of([torch.zeros(1), 3]) == CPU
    assert runtime.device_of([]) == CPU


def test_cpu_results_stay_on_the_cpu():
    from iree_bwdconv import functional

    dy, x, w = torch.randn(1, 4, 3, 3), torch.randn(1, 2, 5, 5), torch.randn(4, 2, 3, 3)
    args = (None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False])
    grad_input, grad_weight, _ = functional.convolution_backward(dy, x, w, *args)
    expected = torch.ops.aten.convolution_backward(dy, x, w, *args)
    assert grad_input.device == grad_weight.device == CPU
    torch.testing.assert_close(grad_input, expected[0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(grad_weight, expected[1], rtol=1e-4, atol=1e-4)


def test_exit_hook_imports_nothing():
    """At exit only what was imported is released: importing dynamo's reset
    (inductor) or the functional API (torch-mlir) then failed on a machine
    with the runtime alone."""
    probe = ("import sys; from iree_bwdconv import runtime; runtime._release_devices(); "
             "print(sorted(m for m in ('iree_bwdconv.functional', 'torch._inductor', 'torch_mlir') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
    assert "Traceback" not in proc.stderr
