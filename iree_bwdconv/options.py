"""What a lowering is asked for, made once at an edge and passed down.

The edges (the functional API, the torch.compile backend, the CLI) make a
`LoweringOptions`, reading the environment there and nowhere below
(`from_environment`); every pattern, rule and compile step takes it as an
argument, and every compiled-module cache key holds its `cache_key()`.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Mapping, Optional

from .errors import InvalidArgumentError

TARGETS = ("cpu", "gfx942", "cuda")
# grad_input forms of a strided data gradient; "auto" lets the rules pick
# (`plan.grad_input.strided_form`).
GRAD_INPUT_FORMS = ("auto", "per-phase", "sub-pixel", "col2im", "direct")
GRAD_INPUT_FORM_VARIABLE = "IREE_BWDCONV_GRAD_INPUT_FORM"
OPERAND_ROOM_VARIABLE = "IREE_BWDCONV_OPERAND_ROOM"


@dataclass(frozen=True)
class LoweringOptions:
    """target: the IREE target the forms are picked for.
    grad_input_form: a strided grad_input form forced (for measuring), or "auto".
    plain_forms: the plain forms on GPU targets (the direct grad_input of
    kernels wider than 1x1, weight gradients in one sum): the second try of
    a compile that failed in the usual forms (`compile_fallback`).
    operand_room: room after CUDA's f16/bf16 contraction operands (`operand_room`).
    extern_kernels: whether a form may call our CUDA kernel, linked into the
    module after lowering; off where another's command line compiles the
    module (`iree-bwdconv-compile`), whose IREE input phase does not keep
    the kernel's call for the link."""

    target: str = "cpu"
    grad_input_form: str = "auto"
    plain_forms: bool = False
    operand_room: bool = False
    extern_kernels: bool = True

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise InvalidArgumentError("target", self.target, f"expected one of {', '.join(TARGETS)}")
        if self.grad_input_form not in GRAD_INPUT_FORMS:
            raise InvalidArgumentError("grad_input_form", self.grad_input_form,
                                       f"expected one of {', '.join(GRAD_INPUT_FORMS)}")
        for name in ("plain_forms", "operand_room", "extern_kernels"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidArgumentError(name, getattr(self, name), "expected a bool")

    @property
    def on_gpu(self) -> bool:
        return self.target != "cpu"

    def in_plain_forms(self) -> LoweringOptions:
        return dataclasses.replace(self, plain_forms=True)

    def cache_key(self) -> tuple[str, ...]:
        """Everything here that can change a lowering, for compiled-module cache keys."""
        return tuple(f"{field.name}={getattr(self, field.name)}" for field in dataclasses.fields(self))


def from_environment(target: str = "cpu", environ: Optional[Mapping[str, str]] = None) -> LoweringOptions:
    """The options an edge lowers with: `target`, and what
    $IREE_BWDCONV_GRAD_INPUT_FORM and $IREE_BWDCONV_OPERAND_ROOM ask for,
    each refused by name (before anything compiles) where it is not a value
    we know."""
    environ = os.environ if environ is None else environ
    form = environ.get(GRAD_INPUT_FORM_VARIABLE, "auto")
    if form not in GRAD_INPUT_FORMS:
        raise InvalidArgumentError(GRAD_INPUT_FORM_VARIABLE, form, f"expected one of {', '.join(GRAD_INPUT_FORMS)}")
    room = environ.get(OPERAND_ROOM_VARIABLE, "").strip()
    if room not in ("", "0", "1"):
        raise InvalidArgumentError(OPERAND_ROOM_VARIABLE, room, "expected 1 (on) or 0 (off)")
    return LoweringOptions(target=target, grad_input_form=form, operand_room=room == "1")
