"""How torch tensors cross into IREE and back (`runtime`). The CUDA path
itself runs only where there is a GPU: `benchmarks/cuda_tensors.py` checks
it there; here, which path each device takes, the exit hook, and how the CUDA
device keeps its buffers."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from iree_bwdconv.run import runtime
from iree_bwdconv.errors import InvalidArgumentError
from iree_bwdconv.options import CUDA_CACHE_VARIABLE, LoweringOptions, from_environment

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
    probe = ("import sys; from iree_bwdconv.run import runtime; runtime._release_devices(); "
             "print(sorted(m for m in ('iree_bwdconv.functional', 'torch._inductor', 'torch_mlir') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("setting, gpu_bytes, expected", [
    ("", 80 << 30, 20 << 30),    # a quarter of the GPU: torch's allocator needs the rest
    ("", None, 4 << 30),         # torch cannot tell the GPU's memory
    ("1073741824", 80 << 30, 1 << 30),
    (" 0 ", 80 << 30, 0),        # no cache
])
def test_cuda_cache_capacity(setting, gpu_bytes, expected):
    """The environment's setting, read at an edge, sizes the cache."""
    options = from_environment("cuda", {CUDA_CACHE_VARIABLE: setting})
    assert runtime.cuda_cache_bytes(options.cuda_cache_bytes, gpu_bytes) == expected


@pytest.mark.parametrize("setting", ["-1", "4gib", "1.5", "many"])
def test_cuda_cache_capacity_refuses_what_is_not_a_count(setting):
    with pytest.raises(InvalidArgumentError, match=rf"{CUDA_CACHE_VARIABLE}='{setting}'"):
        from_environment("cuda", {CUDA_CACHE_VARIABLE: setting})


def test_the_cuda_cache_changes_no_cache_key():
    """Nor does the folder for failing IR: neither changes a module."""
    assert (LoweringOptions("cuda", cuda_cache_bytes=0, repro_dir="/tmp/x").cache_key()
            == LoweringOptions("cuda").cache_key())


def _device_bytes(device, key: str) -> int:
    return device.allocator.statistics[f"device_bytes_{key}"]


def test_cuda_allocator_spec_keeps_freed_buffers(monkeypatch):
    """The CUDA device cannot be made here; the same spec on a CPU device is
    parsed and obeyed by the same code: a freed buffer is kept and given to
    the next call of its size, and `release_cached_memory` gives it back."""
    from iree import runtime as ireert

    assert runtime.cuda_allocators(0) == []
    (spec,) = runtime.cuda_allocators(3 << 30)
    device = ireert.get_driver("local-task").create_default_device(allocators=[spec])
    monkeypatch.setitem(runtime._configs, "probe", ireert.Config(device=device))

    def allocate():
        return device.allocator.allocate_buffer(memory_type=ireert.MemoryType.DEVICE_LOCAL,
                                                allowed_usage=ireert.BufferUsage.DEFAULT, allocation_size=1 << 20)

    first = allocate()
    del first  # into the cache
    second = allocate()  # out of it
    assert (_device_bytes(device, "allocated"), _device_bytes(device, "freed")) == (1 << 20, 0)
    del second
    runtime.release_cached_memory()
    assert _device_bytes(device, "freed") == 1 << 20


def test_cuda_allocator_spec_misspelt_is_refused():
    from iree import runtime as ireert

    spec = runtime.cuda_allocators(1 << 30)[0].replace("device_local", "devce_local")
    with pytest.raises(ValueError, match="unrecognized bitfield member 'devce_local'"):
        ireert.get_driver("local-task").create_default_device(allocators=[spec])


def test_gpu_benchmarks_time_the_runtimes_device():
    from benchmarks import run_on_gpu

    capacity = 16 << 30
    expected = (*runtime.CUDA_FLAGS, "--device_allocator=" + runtime.cuda_allocators(capacity)[0])
    assert run_on_gpu.RUNTIME_FLAGS == expected
