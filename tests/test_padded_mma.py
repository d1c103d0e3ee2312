"""`benchmarks/padded_mma.py` finds the dispatches IREE pads to its MMA
tiles on CUDA, where the reads past an operand's end come from
(docs/performance.md, "Reads past an operand's end")."""

from __future__ import annotations

from benchmarks import gpu_compile_sweep, padded_mma
from iree_bwdconv import functional, pipeline

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
