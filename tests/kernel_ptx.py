"""What every shipped PTX variant of our CUDA kernels must be for IREE to
call it (tests/test_kernel.py, tests/test_phase_kernel.py)."""

from __future__ import annotations

import re

from iree_bwdconv.kernels import catalog


def assert_callable_by_iree(variant: catalog.Variant, arguments: int) -> str:
    """One entry point of the variant's name, the three buffers and
    `arguments` i32 constants that IREE passes (Triton's scratch pointers
    cut), the block size the dispatch declares, sm_80, and shared memory
    within the default 48 KiB; returns the PTX for further checks."""
    ptx = variant.ptx.read_text()
    assert re.findall(r"\.visible \.entry (\w+)\(", ptx) == [variant.name]
    params = re.findall(rf"\.param \.(\w+)(?: \.ptr \.global \.align \d+)? {variant.name}_param_\d+", ptx)
    assert params == ["u64"] * 3 + ["u32"] * arguments
    assert re.search(r"\.reqntid (\d+)", ptx).group(1) == str(variant.workgroup_size[0])
    assert ".target sm_80" in ptx
    assert 0 < variant.shared_memory <= 48 * 1024
    return ptx
