"""Loading a .vmfb with the IREE runtime and calling it with torch tensors.

On the CPU (local-task) tensors cross by DLPack both ways: IREE reads the
torch tensor's memory and torch owns a view of IREE's result buffer, no copy
on either side. Other devices copy through host arrays.
"""

from __future__ import annotations

import atexit
import functools
import gc
import threading
from typing import Sequence

import ml_dtypes
import numpy as np
import torch
from iree import runtime as ireert
from torch.utils import dlpack

DRIVERS = {"cpu": "local-task", "gfx942": "hip", "cuda": "cuda"}
_DLPACK_CPU = 1  # DLDeviceType kDLCPU
# IREE imports host memory only at this alignment; torch's allocator gives
# at least 64 bytes, but a view into a storage may start anywhere.
_IMPORT_ALIGNMENT = 64
_config_lock = threading.Lock()


@functools.cache
def _shared_config(driver: str) -> ireert.Config:
    """One device per driver per process: each local-task device owns a thread pool."""
    return ireert.Config(driver)


def device_config(target: str) -> ireert.Config:
    if target not in DRIVERS:
        raise ValueError(f"target={target!r}: expected one of {', '.join(DRIVERS)}")
    with _config_lock:
        return _shared_config(DRIVERS[target])


@atexit.register
def _release_devices() -> None:
    """Drop every runtime object before the interpreter tears the bindings
    down; otherwise nanobind reports each still-alive object as a leak."""
    import torch._dynamo

    torch._dynamo.reset()  # compiled graphs hold loaded modules
    from . import functional

    functional.clear_cache()
    _shared_config.cache_clear()
    gc.collect()


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
    return (
        tensor.device.type == "cpu"
        and tensor.is_contiguous()
        and tensor.numel() > 0
        and tensor.data_ptr() % _IMPORT_ALIGNMENT == 0
    )


class LoadedModule:
    """One compiled module on one IREE device, callable with torch tensors."""

    def __init__(self, vmfb: bytes, target: str = "cpu", function: str = "main") -> None:
        self.target = target
        self.config = device_config(target)
        self._context = ireert.SystemContext(config=self.config)
        self._context.add_vm_module(ireert.VmModule.copy_buffer(self._context.instance, vmfb))
        self._function = self._context.modules.module[function]
        self._zero_copy = target == "cpu"

    def _argument(self, tensor: torch.Tensor):
        tensor = tensor.detach()
        if self._zero_copy:
            tensor = tensor.contiguous()
            if _importable(tensor):
                return self.config.device.from_dlpack_capsule(dlpack.to_dlpack(tensor))
        return to_numpy(tensor)

    def _result(self, array) -> torch.Tensor:
        if self._zero_copy and isinstance(array, ireert.DeviceArray):
            view = array._buffer_view  # the runtime's only handle on the result buffer
            if view.byte_length > 0:
                return torch.from_dlpack(self.config.device.create_dlpack_capsule(view, _DLPACK_CPU, 0))
        if isinstance(array, ireert.DeviceArray):
            array = array.to_host()
        return to_torch(np.asarray(array))

    def __call__(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        results = self._function(*(self._argument(a) for a in args))
        if not isinstance(results, (tuple, list)):
            results = (results,)
        return tuple(self._result(r) for r in results)


def run(vmfb: bytes, args: Sequence[torch.Tensor], target: str = "cpu") -> tuple[torch.Tensor, ...]:
    return LoadedModule(vmfb, target)(*args)
