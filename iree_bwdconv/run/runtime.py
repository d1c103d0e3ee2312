"""Loading a .vmfb with the IREE runtime and calling it with torch tensors.

On the CPU (local-task) tensors cross by DLPack both ways: IREE reads the
torch tensor's memory and torch owns a view of IREE's result buffer, no copy
on either side. On CUDA, tensors on the device IREE runs on (cuda:0) cross
into IREE by DLPack, and each result comes back as a new torch tensor on
that device, copied from IREE's buffer on the GPU. Anything else is copied
through host arrays. Results are on the device of the call's tensors.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import logging
import sys
import threading
import time
from typing import Sequence

import ml_dtypes
import numpy as np
import torch
from iree import runtime as ireert
from torch.utils import dlpack

from iree_bwdconv.run import caller_thread

DRIVERS = {"cpu": "local-task", "gfx942": "hip", "cuda": "cuda"}
_DLPACK_CPU = 1  # DLDeviceType kDLCPU
_DLPACK_CUDA = 2  # DLDeviceType kDLCUDA
# The IREE CUDA driver's default device is the first CUDA device, which torch
# calls cuda:0; both work in the device's primary context, so a device
# pointer means the same memory to both.
_IREE_CUDA_INDEX = 0
# IREE imports host memory only at this alignment; torch's allocator gives
# at least 64 bytes, but a view into a storage may start anywhere.
_IMPORT_ALIGNMENT = 64
_config_lock = threading.Lock()
log = logging.getLogger("iree_bwdconv")


# IREE's caching allocator keeps a call's freed buffers for the next call
# of the same sizes. Without it each CUDA call pays cuMemAlloc and cuMemFree
# for its results and transients: with it, the strided 1x1 layers' calls
# ran 1.5x-2.9x faster on an H100 (docs/performance-journal.md, "The runtime's CUDA
# allocator"). The cache holds at most `LoweringOptions.cuda_cache_bytes`
# bytes (the edges read $IREE_BWDCONV_CUDA_CACHE_BYTES), live buffers
# counted; 0 turns it off.
# Buffers from IREE's stream-ordered CUDA pool cannot be exported by DLPack
# (and IREE's own queue copy out of them ran at 3.6 GB/s on an H100);
# without the pool, results are plain device allocations that torch copies
# at the GPU's speed, and that the caching allocator can keep.
CUDA_FLAGS = ("--cuda_async_allocations=false",)
_CUDA_CACHE_SHARE = 4  # of the GPU's memory, by default: torch's allocator needs the rest
_CUDA_CACHE_FALLBACK = 4 << 30  # where torch cannot tell the GPU's memory


def cuda_cache_bytes(configured: int | None, gpu_bytes: int | None) -> int:
    """The cache's capacity: the `configured` count of bytes if given, else
    a share of the GPU's memory."""
    if configured is not None:
        return configured
    return gpu_bytes // _CUDA_CACHE_SHARE if gpu_bytes else _CUDA_CACHE_FALLBACK


def cuda_allocators(capacity: int) -> list[str]:
    """IREE allocator specs: a cache of device-local buffers of at most
    `capacity` bytes (any size of buffer, up to IREE's 64 free ones)."""
    return [f"caching:device_local=*;{capacity};64"] if capacity else []


def _gpu_bytes() -> int | None:
    try:
        return torch.cuda.get_device_properties(_IREE_CUDA_INDEX).total_memory
    except (RuntimeError, AssertionError):  # no GPU, or torch without CUDA
        return None


_configs: dict[str, ireert.Config] = {}


def _shared_config(driver: str, cache_bytes: int | None) -> ireert.Config:
    """One device per driver per process: each local-task device owns a
    thread pool. The first module loaded on CUDA sizes its cache."""
    if driver in _configs:
        return _configs[driver]
    if driver == "cuda":
        # The driver reads its flags when it is created, the first time in the process.
        ireert.flags.parse_flags(*CUDA_FLAGS)
        capacity = cuda_cache_bytes(cache_bytes, _gpu_bytes())
        device = ireert.get_driver(driver).create_default_device(allocators=cuda_allocators(capacity))
        config = ireert.Config(device=device)
    else:
        config = ireert.Config(driver)
    _configs[driver] = config
    return config


def device_config(target: str, cuda_cache_bytes: int | None = None) -> ireert.Config:
    if target not in DRIVERS:
        raise ValueError(f"target={target!r}: expected one of {', '.join(DRIVERS)}")
    with _config_lock:
        return _shared_config(DRIVERS[target], cuda_cache_bytes)


def release_cached_memory() -> None:
    """Gives the memory that IREE's devices keep for later calls back to the
    driver, as torch.cuda.empty_cache() does for torch's."""
    with _config_lock:
        for config in _configs.values():
            config.device.allocator.trim()


@atexit.register
def _release_devices() -> None:
    """Drop every runtime object before the interpreter tears the bindings
    down; otherwise nanobind reports each still-alive object as a leak."""
    # Only what was imported holds modules; importing anything now can fail
    # (dynamo's reset imports inductor, functional needs torch-mlir).
    if "iree_bwdconv.torch_compile.dynamo" in sys.modules:
        torch._dynamo.reset()  # graphs compiled by our backend hold loaded modules
    functional = sys.modules.get("iree_bwdconv.functional")
    if functional is not None:
        functional.clear_cache()
    _configs.clear()
    gc.collect()


@functools.cache
def _warn_once(message: str) -> None:
    log.warning("iree-bwdconv: %s", message)


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A host array sharing the tensor's bytes where it can (bf16 included,
    through ml_dtypes, which the runtime understands)."""
    tensor = tensor.detach().contiguous().cpu()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.uint16).numpy().view(ml_dtypes.bfloat16)
    return tensor.numpy()


def to_torch(array: np.ndarray) -> torch.Tensor:
    # np.require keeps 0-d arrays 0-d (np.ascontiguousarray would make them 1-d).
    array = np.require(array, requirements="C")
    if array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _importable(tensor: torch.Tensor) -> bool:
    """IREE imports host memory only at 64-byte alignment, device memory as it is."""
    if not tensor.is_contiguous() or tensor.numel() == 0:
        return False
    return tensor.device.type != "cpu" or tensor.data_ptr() % _IMPORT_ALIGNMENT == 0


def device_of(args: Sequence[object]) -> torch.device:
    """Where a call's results go: the first tensor argument off the CPU, else the CPU."""
    for arg in args:
        if isinstance(arg, torch.Tensor) and arg.device.type != "cpu":
            return arg.device
    return torch.device("cpu")


def crosses_by_dlpack(target: str, device: torch.device) -> bool:
    """Whether torch tensors on `device` cross into a module for `target` by
    DLPack rather than through host arrays: the CPU's for the CPU, cuda:0's
    for CUDA. (torch's ROCm tensors also say "cuda"; IREE's HIP driver is
    not given them untested.)"""
    if target == "cpu":
        return device.type == "cpu"
    return DRIVERS.get(target) == "cuda" and device.type == "cuda" and device.index == _IREE_CUDA_INDEX


class LoadedModule:
    """One compiled module on one IREE device, callable with torch tensors."""

    # CUDA results: copied into torch's memory, or IREE's buffers handed to
    # torch as they are (an experiment: benchmarks/crossing_gpu.py).
    copy_results = True

    def __init__(self, vmfb: bytes, target: str = "cpu", function: str = "main", *,
                 cuda_cache_bytes: int | None = None) -> None:
        """`cuda_cache_bytes`: the cache of the process's CUDA device, where
        this module is the first to make it (`cuda_cache_bytes`)."""
        self.target = target
        self.config = device_config(target, cuda_cache_bytes)
        self._context = ireert.SystemContext(config=self.config)
        self._context.add_vm_module(ireert.VmModule.copy_buffer(self._context.instance, vmfb))
        self._function = self._context.modules.module[function]
        self._zero_copy = target == "cpu"
        self.invoke_s = 0.0  # summed over calls: IREE's function call alone

    def _argument(self, tensor: torch.Tensor):
        tensor = tensor.detach()
        if crosses_by_dlpack(self.target, tensor.device):
            tensor = tensor.contiguous()
            if _importable(tensor):
                # The capsule keeps the tensor alive until IREE releases the buffer.
                return self.config.device.from_dlpack_capsule(dlpack.to_dlpack(tensor))
        return to_numpy(tensor)

    def _result(self, array, device: torch.device = torch.device("cpu")) -> torch.Tensor:
        if self._zero_copy and isinstance(array, ireert.DeviceArray):
            view = array._buffer_view  # the runtime's only handle on the result buffer
            if view.byte_length > 0:
                return torch.from_dlpack(self.config.device.create_dlpack_capsule(view, _DLPACK_CPU, 0)).to(device)
        if isinstance(array, ireert.DeviceArray):
            array = array.to_host()
        return to_torch(np.asarray(array)).to(device)

    def _cuda_result(self, array, device: torch.device) -> torch.Tensor:
        """A new torch tensor on `device`, copied from IREE's result buffer on
        the GPU (a copy, so that torch never frees IREE's memory out of
        IREE's order), else through host memory."""
        if isinstance(array, ireert.DeviceArray) and array._buffer_view.byte_length > 0:
            try:
                capsule = self.config.device.create_dlpack_capsule(array._buffer_view, _DLPACK_CUDA, device.index)
            except (RuntimeError, ValueError) as err:  # a pool buffer, or an element type DLPack lacks
                _warn_once(f"CUDA results are copied through host memory: {err}")
            else:
                result = torch.from_dlpack(capsule)
                return result.clone() if self.copy_results else result
        return self._result(array, device)

    def __call__(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        device = device_of(args)
        on_cuda = device.type == "cuda" and crosses_by_dlpack(self.target, device)
        if on_cuda:
            # IREE's queue starts at once: what torch has queued must be
            # done, the copies that make arguments contiguous among it.
            args = tuple(a.detach().contiguous() for a in args)
            torch.cuda.current_stream(device).synchronize()
        arguments = [self._argument(a) for a in args]
        # On the CPU an IREE worker wakes this thread at the call's end; it
        # must not take that worker's core (`caller_thread`).
        waiting = caller_thread.batch_scheduling() if self.target == "cpu" else contextlib.nullcontext()
        with waiting:
            started = time.perf_counter()
            results = self._function(*arguments)
            self.invoke_s += time.perf_counter() - started
        if not isinstance(results, (tuple, list)):
            results = (results,)
        if not on_cuda:
            return tuple(self._result(r, device) for r in results)
        outputs = tuple(self._cuda_result(r, device) for r in results)
        # The copies read IREE's buffers, which are released with `results`.
        torch.cuda.current_stream(device).synchronize()
        return outputs


def run(vmfb: bytes, args: Sequence[torch.Tensor], target: str = "cpu") -> tuple[torch.Tensor, ...]:
    return LoadedModule(vmfb, target)(*args)
