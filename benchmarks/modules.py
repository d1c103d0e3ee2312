"""IR for a benchmark shape: the raw torch-dialect export (what IREE's own
torch input lowers: the upstream path) and our linalg lowering."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from pathlib import Path
from typing import Iterator, Optional, Sequence
from unittest import mock

import torch

from iree_bwdconv import lowering, patterns
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.builders import tap_tables
from iree_bwdconv import options as lowering_options
from iree_bwdconv.errors import PipelineError
from iree_bwdconv.functional import ConvolutionBackward, spec_of
from iree_bwdconv.options import GRAD_INPUT_FORM_VARIABLE, LoweringOptions
from iree_bwdconv.patterns import convolution_backward_phases as phases
from iree_bwdconv.plan import grad_input, plan as plan_of

from .shapes import Shape

GRAD_INPUT_ONLY = (True, False, False)
ALL_GRADS = (True, True, True)


def arguments(shape: Shape, mask: tuple[bool, bool, bool]) -> tuple:
    return ([shape.k] if mask[2] else None, [shape.stride] * 2, [shape.padding] * 2, [1, 1], False,
            [0, 0], shape.groups, list(mask))


def example_tensors(shape: Shape) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dtype = shape.torch_dtype
    return (torch.zeros(shape.n, shape.k, *shape.out_hw, dtype=dtype),
            torch.zeros(shape.n, shape.c, *shape.hw, dtype=dtype),
            torch.zeros(shape.k, shape.c // shape.groups, shape.kernel, shape.kernel, dtype=dtype))


@functools.lru_cache(maxsize=None)
def raw_torch(shape: Shape, mask: tuple[bool, bool, bool]) -> str:
    tensors = example_tensors(shape)
    args = arguments(shape, mask)
    module = ConvolutionBackward(spec_of(*tensors, *args), args[0])
    return str(lowering.import_module(module, *tensors))


@contextlib.contextmanager
def forced_form(form: str) -> Iterator[None]:
    """The grad_input form the lowering emits inside the block ("auto": its rule)."""
    before = os.environ.get(GRAD_INPUT_FORM_VARIABLE)
    os.environ[GRAD_INPUT_FORM_VARIABLE] = form
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(GRAD_INPUT_FORM_VARIABLE)
        else:
            os.environ[GRAD_INPUT_FORM_VARIABLE] = before


@functools.lru_cache(maxsize=None)
def ours(shape: Shape, mask: tuple[bool, bool, bool], target: str = "cpu", form: str = "auto") -> str:
    return lowered_uncached(shape, mask, target, form)


def lowered_uncached(shape: Shape, mask: tuple[bool, bool, bool], target: str = "cpu", form: str = "auto") -> str:
    """`ours`, lowered anew (for a lowering changed by a context manager)."""
    return lowering.lower_torch(lowering.parse_torch_mlir(raw_torch(shape, mask)), options=options_for(target, form))


def options_for(target: str, form: str = "auto") -> LoweringOptions:
    """The options an edge makes of the environment for `target`, with
    `form` forced ("auto": the rule's), as inside `forced_form(form)`."""
    return lowering_options.from_environment(target, {**os.environ, GRAD_INPUT_FORM_VARIABLE: form})


def gpu_weave(shape: Shape, form: str, mask: tuple[bool, bool, bool] = GRAD_INPUT_ONLY) -> str:
    """How the plan weaves `form`'s phases for `shape` on CUDA: "in-place",
    "gather" or "grid" (`GradInputPlan.stored_in_place`, `gather_weave`)."""
    spec = spec_of(*example_tensors(shape), *arguments(shape, mask))
    choice = plan_of(spec, options_for("cuda", form)).grad_input
    return "in-place" if choice.stored_in_place else "gather" if choice.gather_weave else "grid"


@contextlib.contextmanager
def weave(form: str, name: str) -> Iterator[None]:
    """Lowerings inside the block place `form`'s phases `name`'s way on GPU
    targets: "in-place" (each phase stored into grad_input by its own
    dispatch, `GradInputPlan.stored_in_place`; per-phase alone), "gather"
    or "grid" (`GradInputPlan.gather_weave`). The plan's: in place where
    its rule allows, else a gather, for per-phase; the grid for col2im.
    In place, a grouped phase of one tap is a GEMM, as the plan has it."""
    build = phases.BUILDERS[form]

    def woven(spec, grad_output, weight, *, plan):
        on_gpu = plan.options.on_gpu
        in_place = on_gpu and name == "in-place"
        choice = dataclasses.replace(plan.grad_input, gather_weave=on_gpu and name == "gather",
                                     stored_in_place=in_place,
                                     one_tap_gemm=grad_input.phase_one_tap_gemm(spec, plan.options, in_place))
        return build(spec, grad_output, weight, plan=dataclasses.replace(plan, grad_input=choice))

    with mock.patch.dict(phases.BUILDERS, {form: woven}):
        yield


@contextlib.contextmanager
def without_pattern(name: str) -> Iterator[None]:
    """Lowerings in this process inside the block do without the pattern
    `name`: torch-mlir lowers what it would have rewritten."""
    saved = patterns.REGISTRY
    patterns.REGISTRY = tuple(p for p in saved if p.name != name)
    try:
        yield
    finally:
        patterns.REGISTRY = saved


@contextlib.contextmanager
def tap_table_per_phase() -> Iterator[None]:
    """Lowerings inside the block gather each per-phase table in its own op,
    as before `tap_tables.all_tap_tables`."""
    with mock.patch.object(tap_tables, "all_tap_tables", lambda spec, weight, live: [None] * len(live)):
        yield


def input_specs(shape: Shape) -> list[str]:
    """dy, x and w as iree-benchmark-module's --input shapes ("2x3x8x8xf16")."""
    return ["x".join(map(str, t.shape)) + "x" + shape.dtype for t in example_tensors(shape)]


def compiled(text: str, target: str, flags: Sequence[str] = ()) -> tuple[bytes, Optional[str]]:
    """`text` compiled for `target`, and None; or, where `pipeline` would
    refuse the code as wrong (upstream's f16 1x1 layers, forms forced on a
    layer), the code all the same, to be timed or checked, and why."""
    vmfb, wrong = pipeline.judged_compile(text, target, tuple(flags))
    return vmfb, (str(wrong[-1])[:200] if wrong else None)


def compiled_entry(folder: Path, text: str, target: str, flags: Sequence[str] = (), **entry) -> dict:
    """A manifest entry for run_on_gpu.py: `text` compiled into
    folder/entry["vmfb"], or the first line of the compiler's error (a form
    that does not compile is a result too); code refused as wrong is
    compiled as given and marked `wrong_code` (`compiled`)."""
    try:
        vmfb, wrong = compiled(text, target, flags)
        (folder / entry["vmfb"]).write_bytes(vmfb)
        if wrong:
            entry["wrong_code"] = wrong
    except PipelineError as err:
        entry["compile_error"] = err.diagnostics.strip().splitlines()[0][:200]
    said = entry.get("compile_error") or ("ok, wrong code" if "wrong_code" in entry else "ok")
    print(entry["vmfb"], said, flush=True)
    return entry


def eager_entry(shape: Shape, mask: str) -> dict:
    """A manifest entry that times torch eager on the GPU machine."""
    eager = dict(n=shape.n, c=shape.c, k=shape.k, hw=shape.hw, kernel=shape.kernel, stride=shape.stride,
                 padding=shape.padding, groups=shape.groups, dtype=shape.dtype)
    return dict(shape=shape.name, mask=mask, variant="torch-eager", eager=eager)


UPSTREAM_FLAGS = ("--iree-input-type=torch",)
