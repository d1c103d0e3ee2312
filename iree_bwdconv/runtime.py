"""Loading a .vmfb with the IREE runtime and calling it with torch tensors."""

from __future__ import annotations

from typing import Sequence

import ml_dtypes
import numpy as np
import torch
from iree import runtime as ireert

DRIVERS = {"cpu": "local-task", "gfx942": "hip", "cuda": "cuda"}


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A host array sharing the tensor's bytes where it can (bf16 included,
    through ml_dtypes, which the runtime understands)."""
    tensor = tensor.detach().contiguous().cpu()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.uint16).numpy().view(ml_dtypes.bfloat16)
    return tensor.numpy()


def to_torch(array: np.ndarray) -> torch.Tensor:
    if array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(array).view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(array))


class LoadedModule:
    """One compiled module on one IREE device, callable with torch tensors."""

    def __init__(self, vmfb: bytes, target: str = "cpu", function: str = "main") -> None:
        if target not in DRIVERS:
            raise ValueError(f"target={target!r}: expected one of {', '.join(DRIVERS)}")
        self.config = ireert.Config(DRIVERS[target])
        self._module = ireert.load_vm_flatbuffer(vmfb, driver=DRIVERS[target])
        self._function = self._module[function]

    def __call__(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        results = self._function(*(to_numpy(a) for a in args))
        if not isinstance(results, (tuple, list)):
            results = (results,)
        return tuple(to_torch(r.to_host()) for r in results)


def run(vmfb: bytes, args: Sequence[torch.Tensor], target: str = "cpu") -> tuple[torch.Tensor, ...]:
    return LoadedModule(vmfb, target)(*args)
