"""`benchmarks/padded_mma.py` finds the dispatches IREE pads to its MMA
tiles on CUDA, where the reads past an operand's end come from
(docs/performance-journal.md, "Reads past an operand's end")."""

from __future__ import annotations

import re

from benchmarks import gpu_compile_sweep, overread_repro, padded_mma
from iree_bwdconv import functional
from iree_bwdconv.compiler import pipeline

# Stop 34's grouped 1-D layer whose im2col matmul memcheck caught reading
# past an allocation: 4 groups of 4 output channels, a reduction of 260.
_LAYER = dict(n=4, c=32, k=16, sizes=[128], out=[65], kernel=[3], stride=[2], padding=[3], dilation=[2], groups=4,
              transposed=False, output_padding=[0], dtype="f16")


def test_the_grouped_im2col_matmul_that_read_past_its_operand_is_padded_to_iree_tiles():
    spec = gpu_compile_sweep.spec_of(_LAYER, [False, True, False])
    text = pipeline.iree_compile_to(functional.lowered(spec, (16,), "cuda"), "cuda", "executable-configurations")
    found = dict(padded_mma.padded_dispatches(text))
    matmuls = [name for name in found if "matmul_like_4x4x24x260" in name]
    assert len(matmuls) == 1 and found[matmuls[0]] == "1, 16, 8, 16", found


def test_an_f32_layer_has_no_mma_padding():
    spec = gpu_compile_sweep.spec_of(dict(_LAYER, dtype="f32"), [False, True, False])
    text = pipeline.iree_compile_to(functional.lowered(spec, (16,), "cuda"), "cuda", "executable-configurations")
    assert padded_mma.padded_dispatches(text) == []


def _optimized_llvm(text: str, target: str, folder) -> str:
    """The optimized LLVM IR of `text`'s one dispatch for `target`, compiled
    as given (on CUDA `pipeline` would compile the overreading dispatch
    again, widened)."""
    pipeline.iree_compile(text, target, (f"--iree-hal-dump-executable-intermediates-to={folder}",), as_given=True)
    (path,) = folder.glob("*.optimized.ll")
    return path.read_text()


def test_the_repro_clamps_its_padded_rows_to_the_row_count_on_cuda(tmp_path):
    """`benchmarks/overread_repro.py`'s layer: M 48 padded to a tile of 64,
    and the padded rows' threads read row 48 (the clamp is to M, not
    M - 1), with loads masked along K only: memcheck's read past the end."""
    text = overread_repro.module_text(*overread_repro.VARIANTS["m48_n32_k484"])
    found = padded_mma.padded_dispatches(pipeline.iree_compile_to(text, "cuda", "executable-configurations"))
    assert [padding for _, padding in found] == ["1, 64, 32, 16"]
    llvm = _optimized_llvm(text, "cuda", tmp_path)
    assert re.search(r"@llvm\.umin\.i32\(i32 %\d+, i32 48\)", llvm) and "masked.load" in llvm


def test_gfx942_loads_the_repro_operands_through_bounds_checked_buffers(tmp_path):
    """On gfx942 every global load of the same dispatch goes through a
    buffer fat pointer (address space 7) bounded by its operand's size,
    whose loads past that bound return zero: the reads past an operand that fault on CUDA do not
    leave the buffer there."""
    text = overread_repro.module_text(*overread_repro.VARIANTS["m48_n32_k484"])
    llvm = _optimized_llvm(text, "gfx942", tmp_path)
    loads = re.findall(r"= load [^,]+, ptr addrspace\((\d+)\)", llvm)
    assert "7" in loads and "1" not in loads, sorted(set(loads))
    # Each buffer's bound is its tensor's bytes: 2 x 48 x 484 and 2 x 32 x 484 f16.
    bounds = re.findall(r"make\.buffer\.rsrc\.p7\.p1\.i32\(ptr addrspace\(1\) nonnull %\d+, i16 0, i32 (\d+)", llvm)
    assert bounds[:2] == ["92928", "61952"], bounds
