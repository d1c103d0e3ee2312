"""iree-bwdconv: aten.convolution_backward lowered straight to linalg.generic,
compiled with IREE, run through the IREE runtime."""

from .errors import (
    BwdConvError,
    InvalidArgumentError,
    LoweringError,
    PipelineError,
    UnsupportedDtypeError,
)
from .lowering import lower

__all__ = [
    "BwdConvError",
    "InvalidArgumentError",
    "LoweringError",
    "PipelineError",
    "UnsupportedDtypeError",
    "lower",
]

from .dynamo import backend  # noqa: E402
from .functional import compile, convolution_backward  # noqa: E402

__all__ += ["backend", "compile", "convolution_backward"]
