"""`iree_bwdconv.compiler.cpu_conv_store`: a copy between a convolution's result and
its insert into a larger tensor, where IREE 3.13's CPU code would store it
to the wrong places (docs/performance-journal.md, "A batchless convolution on the
CPU")."""

from __future__ import annotations

import pytest
import torch

from iree_bwdconv.compiler import cpu_conv_store, pipeline
from iree_bwdconv import functional, reference
from iree_bwdconv.run import runtime

from specs import spec_nd

# The random sweep's draw that found it: one image, groups 3, a kernel dim
# of 1 at stride 2 (grad_input's phases of one row), a dilated dim beside it.
_LAYER = dict(batch=1, channels=6, out_channels=9, sizes=(2, 6), kernel=(1, 2), stride=(2, 1), padding=(0, 0),
              dilation=(1, 2), groups=3, mask=(True, False, False))
_ARGUMENTS = [None, [2, 1], [0, 0], [1, 2], False, [0, 0], 3, [True, False, False]]


@pytest.mark.parametrize("sizes, drops", [([1, 3, 2, 1, 6], True), ([1, 3, 2, 2, 6], False), ([1, 1, 2, 6], False),
                                          ([2, 3, 1, 6], True), ([1, 1, 1], False)])
def test_a_store_drops_a_dim_after_its_first_kept_one(sizes, drops):
    assert cpu_conv_store.drops_a_dim_after_a_kept_one(sizes) == drops


def _grad_input_on_cpu(text: str, dtype: torch.dtype, as_given: bool = False) -> reference.Comparison:
    """grad_input of `text`, run on the CPU, against eager float64."""
    spec = spec_nd(**_LAYER, dtype=dtype)
    generator = torch.Generator().manual_seed(0)
    dy, x, w = (torch.randn(shape, generator=generator).to(dtype)
                for shape in (spec.grad_output_shape, spec.input_shape, spec.weight_shape))
    (grad_input,) = runtime.run(pipeline.iree_compile(text, "cpu", as_given=as_given), [dy, x, w], "cpu")
    (comparison,) = reference.compare([grad_input, None, None], dy, x, w, _ARGUMENTS)
    return comparison


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_the_gpu_form_needs_the_copy_on_the_cpu_and_is_right_with_it(dtype):
    """The GPU targets' per-phase form of this layer inserts its one phase
    of one row into grad_input. IREE's CPU code gets it wrong without the
    copy (if this starts to pass, IREE has fixed it and the copy can go)
    and right with it; the same module was right on an H100."""
    text = functional.lowered(spec_nd(**_LAYER, dtype=dtype), target="cuda")
    assert cpu_conv_store.guard(text).count("util.optimization_barrier") == 1
    wrong = _grad_input_on_cpu(text, dtype, as_given=True)
    assert wrong.max_error > 0.5 * wrong.max_reference
    assert _grad_input_on_cpu(text, dtype).ok  # pipeline.iree_compile copies it for the CPU


def test_a_module_without_such_an_insert_comes_back_as_it_was():
    """The CPU's own form of the layer inserts each group's convolution into
    grad_input's channels: [1, 2, 2, 6], no dim of one after a larger one."""
    text = functional.lowered(spec_nd(**_LAYER), target="cpu")
    assert "tensor.insert_slice" in text and "util.optimization_barrier" not in text
    assert cpu_conv_store.guard(text) is text


def test_the_cpu_forced_into_the_per_phase_form_gets_the_copy_too(monkeypatch):
    monkeypatch.setenv(functional.GRAD_INPUT_FORM_VARIABLE, "per-phase")
    functional.clear_cache()
    try:
        text = functional.lowered(spec_nd(**_LAYER, dtype=torch.float32), target="cpu")
    finally:
        functional.clear_cache()
    assert "util.optimization_barrier" in cpu_conv_store.guard(text)
    assert _grad_input_on_cpu(text, torch.float32).ok
