"""What a lowering, its compile and its run are asked for, made once at an
edge and passed down.

The edges (the functional API, the torch.compile backend, the CLI, the
iree-compile plugin) make a `LoweringOptions`, reading the environment there
and nowhere below (`from_environment`); every pattern, rule, compile step
and loaded module takes it as an argument, and every compiled-module cache
key holds its `cache_key()`.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Mapping, Optional

from iree_bwdconv.errors import InvalidArgumentError

TARGETS = ("cpu", "gfx942", "cuda")
# grad_input forms of a strided data gradient; "auto" lets the rules pick
# (`plan.grad_input.strided_form`).
GRAD_INPUT_FORMS = ("auto", "per-phase", "sub-pixel", "col2im", "direct")
GRAD_INPUT_FORM_VARIABLE = "IREE_BWDCONV_GRAD_INPUT_FORM"
OPERAND_ROOM_VARIABLE = "IREE_BWDCONV_OPERAND_ROOM"
REPRO_DIR_VARIABLE = "IREE_BWDCONV_REPRO_DIR"
CUDA_CACHE_VARIABLE = "IREE_BWDCONV_CUDA_CACHE_BYTES"
# Fields that change where failing IR is saved or how a module runs, never
# the module: left out of `cache_key()`.
_UNKEYED = {"unkeyed": True}


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
    the kernel's call for the link.
    phases_in_place: whether CUDA's stride phases may each store into
    grad_input from a dispatch of their own (`dispatch_regions`); off for
    the second try of a compile that IREE's code refused with them
    (`compile_fallback`), which weaves the phases instead.
    repro_dir: the folder failing IR is saved to (`pipeline`); None: a
    private one in the temp folder.
    cuda_cache_bytes: the most bytes IREE's CUDA device keeps for later
    calls (`runtime`), read when the process's device is made; None: a
    quarter of the GPU's memory."""

    target: str = "cpu"
    grad_input_form: str = "auto"
    plain_forms: bool = False
    operand_room: bool = False
    extern_kernels: bool = True
    phases_in_place: bool = True
    repro_dir: Optional[str] = dataclasses.field(default=None, metadata=_UNKEYED)
    cuda_cache_bytes: Optional[int] = dataclasses.field(default=None, metadata=_UNKEYED)

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise InvalidArgumentError("target", self.target, f"expected one of {', '.join(TARGETS)}")
        if self.grad_input_form not in GRAD_INPUT_FORMS:
            raise InvalidArgumentError("grad_input_form", self.grad_input_form,
                                       f"expected one of {', '.join(GRAD_INPUT_FORMS)}")
        for name in ("plain_forms", "operand_room", "extern_kernels", "phases_in_place"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidArgumentError(name, getattr(self, name), "expected a bool")
        if self.repro_dir is not None and not isinstance(self.repro_dir, str):
            raise InvalidArgumentError("repro_dir", self.repro_dir, "expected a folder's path, or None")
        cache = self.cuda_cache_bytes
        if cache is not None and (isinstance(cache, bool) or not isinstance(cache, int) or cache < 0):
            raise InvalidArgumentError("cuda_cache_bytes", cache, "expected a count of bytes, 0 or more, or None")

    @property
    def on_gpu(self) -> bool:
        return self.target != "cpu"

    def in_plain_forms(self) -> LoweringOptions:
        return dataclasses.replace(self, plain_forms=True)

    def phases_woven(self) -> LoweringOptions:
        return dataclasses.replace(self, phases_in_place=False)

    def cache_key(self) -> tuple[str, ...]:
        """Everything here that can change a lowering, for compiled-module cache keys."""
        return tuple(f"{field.name}={getattr(self, field.name)}" for field in dataclasses.fields(self)
                     if not field.metadata.get("unkeyed"))


def from_environment(target: str = "cpu", environ: Optional[Mapping[str, str]] = None) -> LoweringOptions:
    """The options an edge lowers with: `target`, and what
    $IREE_BWDCONV_GRAD_INPUT_FORM, $IREE_BWDCONV_OPERAND_ROOM,
    $IREE_BWDCONV_REPRO_DIR and $IREE_BWDCONV_CUDA_CACHE_BYTES ask for,
    each refused by name (before anything compiles) where it is not a value
    we know."""
    environ = os.environ if environ is None else environ
    form = environ.get(GRAD_INPUT_FORM_VARIABLE, "auto")
    if form not in GRAD_INPUT_FORMS:
        raise InvalidArgumentError(GRAD_INPUT_FORM_VARIABLE, form, f"expected one of {', '.join(GRAD_INPUT_FORMS)}")
    room = environ.get(OPERAND_ROOM_VARIABLE, "").strip()
    if room not in ("", "0", "1"):
        raise InvalidArgumentError(OPERAND_ROOM_VARIABLE, room, "expected 1 (on) or 0 (off)")
    cache = environ.get(CUDA_CACHE_VARIABLE, "").strip()
    if cache and not cache.isdigit():
        raise InvalidArgumentError(CUDA_CACHE_VARIABLE, cache, "expected a count of bytes, 0 or more")
    return LoweringOptions(target=target, grad_input_form=form, operand_room=room == "1",
                           repro_dir=repro_dir_from_environment(environ),
                           cuda_cache_bytes=int(cache) if cache else None)


def repro_dir_from_environment(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """$IREE_BWDCONV_REPRO_DIR, for an edge that compiles IR it did not
    lower (`functional.compile`, `iree-bwdconv compile`, a command line
    naming no target of ours): no other setting applies there."""
    return (os.environ if environ is None else environ).get(REPRO_DIR_VARIABLE) or None
