"""Dispatch regions of ours (`compiler/dispatch_regions.py`): CUDA's stride
phases each wrapped with the ops that compute them, and taken apart again
where a target cannot compile them."""

from __future__ import annotations

import re

import pytest
import torch

from iree_bwdconv import lowering
from iree_bwdconv.compiler import dispatch_regions, pipeline
from iree_bwdconv.options import LoweringOptions

# The phases in regions of ours, as CUDA lowers a layer wider than the phase
# kernel takes (and `iree-bwdconv-compile` every layer): this one it would take.
_CUDA = LoweringOptions(target="cuda", extern_kernels=False)


def _transposed(batch: int = 2, dtype: torch.dtype = torch.float16) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    conv = torch.nn.ConvTranspose2d(16, 16, 4, stride=2, padding=1, bias=False).to(dtype)
    return conv, torch.randn(batch, 16, 6, 7).to(dtype)


def _regions(text: str) -> list[str]:
    """The text of each region of ours, from its first line to its close."""
    lines = text.splitlines()
    found = []
    for start, line in enumerate(lines):
        if "flow.dispatch.region" in line:
            indent = len(line) - len(line.lstrip())
            end = next(i for i in range(start + 1, len(lines)) if lines[i] == " " * indent + "}")
            found.append("\n".join(lines[start:end + 1]))
    return found


def test_each_phase_is_a_region_with_what_computes_it():
    """Four live phases, four regions: each pads its window of the input,
    contracts it, rounds it and stores it with the stride; the taps' gather
    stays outside, a dispatch of its own as IREE makes it."""
    conv, x = _transposed()
    text = lowering.lower(conv, x, target=_CUDA)
    regions = _regions(text)
    assert len(regions) == 4
    for region in regions:
        assert dispatch_regions.MARK in region.splitlines()[0]
        assert region.count("tensor.pad") == 1
        assert len(re.findall(r"linalg.generic .*\"reduction\"", region)) == 1  # the phase's contraction
        assert re.search(r"tensor.insert_slice .* \[1, 1, 2, 2\]", region)
        assert "tensor.extract " not in region
        assert "arith.truncf" in region


def test_the_first_phase_stores_into_an_uninitialized_output_the_others_into_the_last():
    conv, x = _transposed()
    regions = _regions(lowering.lower(conv, x, target=_CUDA))
    destinations = [re.search(r"tensor.insert_slice %\S+ into (%\w+)", region).group(1) for region in regions]
    results = [region.split(" = ")[0].strip() for region in regions]
    assert destinations[1:] == results[:-1]


def test_unwrap_gives_the_ops_back_to_the_function():
    conv, x = _transposed()
    text = lowering.lower(conv, x, target=_CUDA)
    flat = dispatch_regions.unwrap(text)
    assert "flow.dispatch.region" not in flat and dispatch_regions.MARK not in flat
    for op in ("tensor.pad", "tensor.insert_slice", "arith.truncf"):
        assert flat.count(op) == text.count(op), op


def test_text_without_a_mark_is_left_as_it_is():
    conv, x = _transposed()
    text = lowering.lower(conv, x, target="gfx942")  # the phases woven there
    assert not dispatch_regions.marked(text)
    assert dispatch_regions.wrap(text) == text and dispatch_regions.unwrap(text) == text


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_dynamic_batch_compiles_for_cuda_with_one_dispatch_a_phase(dtype):
    """The regions' result sizes read the batch from the tensor they store
    into; IREE forms no dispatch of its own around them."""
    conv, x = _transposed(batch=3, dtype=dtype)
    batch = torch.export.Dim("batch", min=1, max=64)
    text = lowering.lower(conv, x, target=_CUDA, dynamic_shapes=({0: batch},))
    assert "tensor<?x" in text and len(_regions(text)) == 4
    flow = pipeline.iree_compile_to(text, "cuda", "flow")
    names = re.findall(r"flow.executable.export public @main_dispatch_\d+_(\w+)", flow)
    assert len(names) == 4 and all(name.startswith("conv") for name in names), names
