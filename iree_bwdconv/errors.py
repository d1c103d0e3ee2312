"""Exception types. Each names what went wrong and where to look."""

from __future__ import annotations


class BwdConvError(Exception):
    """Base of every error this package raises on purpose."""


class InvalidArgumentError(BwdConvError, ValueError):
    """An argument of convolution_backward is malformed. Raised before any
    IR is built or compiled; the message names the argument and its value."""

    def __init__(self, argument: str, value: object, reason: str) -> None:
        self.argument = argument
        self.value = value
        self.reason = reason
        super().__init__(f"{argument}={value!r}: {reason}")

    def __reduce__(self):  # raised in a lowering worker, re-raised here (`isolation`)
        return type(self), (self.argument, self.value, self.reason)


class UnsupportedDtypeError(InvalidArgumentError, TypeError):
    """A tensor has a dtype the lowering does not handle (only f32, f16 and
    bf16 are lowered), or the tensors' dtypes differ."""


class LoweringError(BwdConvError):
    """A convolution_backward op survived our patterns. We refuse to let
    torch-mlir's own lowering take it, so the reasons are reported instead."""


class PipelineError(BwdConvError):
    """A pass pipeline or iree-compile failed. `repro_path` holds the input IR
    and `command` is the one command that reproduces the failure."""

    outcome = "failed."

    def __init__(self, stage: str, diagnostics: str, repro_path: str, command: str) -> None:
        self.stage = stage
        self.diagnostics = diagnostics
        self.repro_path = repro_path
        self.command = command
        super().__init__(
            f"{stage} {self.outcome}\n{diagnostics.strip()}\n\n"
            f"The input IR was saved to {repro_path}\nReproduce with:\n  {command}"
        )

    def __reduce__(self):  # raised in a lowering worker, re-raised here (`isolation`)
        return type(self), (self.stage, self.diagnostics, self.repro_path, self.command)


class WrongCodeError(PipelineError):
    """iree-compile succeeded, but its code holds a dispatch of a kind that
    IREE 3.13 is known to compute wrongly for the target (`mma_order`), so
    the module is refused rather than run. `repro_path` and `command` are
    as `PipelineError`'s; the command also dumps IREE's configured
    dispatches, where the dispatch named can be read."""

    outcome = "refused: IREE's code for it would compute wrong numbers."


class PlainFormsWarning(UserWarning):
    """iree-compile failed on the forms the rules picked for a GPU target, or
    its code was refused as wrong (`WrongCodeError`), and the module was
    compiled in the plain forms instead (`compile_fallback`).
    The message names the failing IR's file and the command that reproduces
    the failure."""


class WorkerError(BwdConvError):
    """The process that lowers a graph (`isolation`) crashed, was killed or
    ran past its time limit. The graph falls back as the backend was told."""

