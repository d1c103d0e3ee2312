"""iree-bwdconv: aten.convolution_backward lowered straight to linalg.generic,
compiled with IREE, run through the IREE runtime.

The entry points below are imported on first use, so that importing a
submodule (the `iree-bwdconv` command) does not import torch before that
command has set up its process (`openmp`).
"""

from __future__ import annotations

import importlib
from typing import Any

from iree_bwdconv.errors import (
    BwdConvError,
    InvalidArgumentError,
    LoweringError,
    PipelineError,
    PlainFormsWarning,
    UnsupportedDtypeError,
    WrongCodeError,
)

_LAZY = {
    "lower": "lowering",
    "backend": "torch_compile.dynamo",
    "compile": "functional",
    "convolution_backward": "functional",
}

__all__ = [
    "BwdConvError",
    "InvalidArgumentError",
    "LoweringError",
    "PipelineError",
    "PlainFormsWarning",
    "UnsupportedDtypeError",
    "WrongCodeError",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
