"""mma_padding: the f16/bf16 contractions whose CUDA code from IREE 3.13
reads past an operand's end are found in IREE's own configuration and
PTX, and compiled widened to f32 instead, with the same numbers."""

from __future__ import annotations

import warnings

import pytest
import torch

from benchmarks import gpu_compile_sweep, overread_repro
from iree_bwdconv.compiler import compile_fallback, iree_faults, mma_padding, pipeline, whole_tiles
from iree_bwdconv import functional
from iree_bwdconv.run import runtime
from iree_bwdconv.errors import PlainFormsWarning, WrongCodeError
from tests.overreads import found_as_given

REPRODUCER = iree_faults.CUDA_MMA_PADDING_OVERREAD.reproducer()


# The batch matmuls an H100's memcheck judged (docs/performance-journal.md,
# "Reads past an operand's end"): two read past an operand, two did not.
@pytest.mark.parametrize("variant, reads_past", [("m48_n32_k484", True), ("m64_n32_k484", False),
                                                 ("m48_n32_k512", False), ("m64_n40_k512", True)])
def test_found_where_memcheck_found_reads_past_the_end(variant, reads_past):
    found = found_as_given(overread_repro.module_text(*overread_repro.VARIANTS[variant]))
    assert bool(found) == reads_past, [str(f) for f in found]


def test_the_padded_dims_named_are_the_outer_ones():
    (found,) = found_as_given(REPRODUCER)
    assert found.dims == (1, 3) and found.key == (2 * 12 * 4 * 4 * 24, 24), str(found)


def test_clamp_bounds_are_read_per_kernel():
    ptx = (".visible .entry a(\n  min.u32 \t%r6, %r35, 60;\n}\n"
           ".visible .entry b(\n  min.s32 \t%r1, %r2, 7;\n  max.u32 \t%r1, %r2, 9;\n}\n")
    assert mma_padding.clamp_bounds(ptx) == {"a": {60}, "b": {7}}


def test_widened_contraction_reads_f32_operands_and_computes_the_same_on_the_cpu():
    found = found_as_given(REPRODUCER)
    widened, every = mma_padding.widened(REPRODUCER, found), mma_padding.widened(REPRODUCER, found, every=True)
    assert "arith.truncf" not in widened and "tensor<12x24xf32>" in widened
    assert "tensor<12x24xf32>" in every and "tensor<2x24x4x4xf32>" in every
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(12, 24, generator=generator).half()
    grad_output = torch.randn(2, 24, 4, 4, generator=generator).half()
    expected = torch.einsum("cf,nfhw->nchw", weight.double(), grad_output.double())
    for text in (REPRODUCER, widened, every):
        (got,) = runtime.run(pipeline.iree_compile(text, "cpu"), [weight, grad_output], "cpu")
        assert (got.double() - expected).abs().max().item() < 1e-5 * expected.abs().max().item()


def test_one_f32_operand_keeps_cuda_from_the_mma_code_that_reads_past_the_end():
    """Widened by its smaller operand alone (the weight), the contraction
    reads grad_output as f16 in its own body, with no f32 copy of it; no
    MMA intrinsic takes f16 with f32, so IREE pads nothing."""
    widened = mma_padding.widened(REPRODUCER, found_as_given(REPRODUCER))
    assert "tensor<12x24xf32>" in widened and "tensor<2x24x4x4xf32>" not in widened
    assert found_as_given(widened) == []


def test_a_module_with_nothing_found_or_nothing_to_widen_is_left_as_it_is():
    assert mma_padding.widened(REPRODUCER, []) is REPRODUCER
    other = mma_padding.Overread("main_dispatch_0", (3, 5, 7), (16, 16, 16), (0,), 7)
    assert mma_padding.widened(REPRODUCER, [other]) is REPRODUCER


def test_cuda_compiles_leave_no_contraction_that_reads_past_the_end():
    _, left = pipeline.judged_compile(REPRODUCER, "cuda")
    assert left == []


def test_an_overreading_named_matmul_is_widened_too():
    """A named op (torch-mlir's matmul) is made a generic, then widened."""
    named = """func.func @main(%a: tensor<48x484xf16>, %b: tensor<484x40xf16>) -> tensor<48x40xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<48x40xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<48x40xf32>) -> tensor<48x40xf32>
  %r = linalg.matmul ins(%a, %b : tensor<48x484xf16>, tensor<484x40xf16>) outs(%init : tensor<48x40xf32>) -> tensor<48x40xf32>
  return %r : tensor<48x40xf32>
}"""
    found = found_as_given(named)
    assert found, "the named matmul no longer reads past an operand: pick another shape"
    assert "tensor<484x40xf32>" in mma_padding.widened(named, found)
    assert pipeline.judged_compile(named, "cuda")[1] == []


def test_a_module_left_with_reads_past_the_end_is_refused(monkeypatch):
    monkeypatch.setattr(whole_tiles, "rewrites", lambda text, found: [])
    with pytest.raises(WrongCodeError, match="reads past an operand's end"):
        pipeline.iree_compile(REPRODUCER, "cuda")


# Strided layers in f16 and bf16 whose channels are not multiples of 16,
# every gradient, as the lowering builds them for CUDA: where IREE's f32
# code for a widened form fails, the plain forms compile instead.
@pytest.mark.parametrize("c, k, kernel, dtype", [(12, 24, 1, "f16"), (60, 120, 1, "f16"), (20, 36, 3, "f16"),
                                                (12, 24, 1, "bf16")])
def test_the_lowerings_odd_channel_layers_compile_without_reads_past_the_end(c, k, kernel, dtype):
    layer = dict(n=2, c=c, k=k, sizes=[8, 8], out=[4, 4], kernel=[kernel] * 2, stride=[2, 2],
                 padding=[kernel // 2] * 2, dilation=[1, 1], groups=1, transposed=False, output_padding=[0, 0],
                 dtype=dtype)
    spec = gpu_compile_sweep.spec_of(layer, [True, True, True])
    # pipeline.iree_compile returns no code its judge finds reading past an
    # operand (test_a_module_left_with_reads_past_the_end_is_refused).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PlainFormsWarning)
        vmfb = compile_fallback.compile_lowering(lambda options: functional.lowered(spec, (k,), options),
                                                 functional.options_for("cuda"))
    assert vmfb


def test_an_f32_matmul_of_widened_f16_copies_is_kept_apart_from_them():
    """torch-mlir's matmul under autocast reads f32 copies of f16 tensors;
    IREE fuses the copies in and pads an f16 contraction. The copies are
    then made in dispatches of their own."""
    copies = """#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%a: tensor<48x484xf16>, %b: tensor<484x40xf16>) -> tensor<48x40xf32> {
  %zero = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<48x484xf32>
  %a32 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<48x484xf16>) outs(%ea : tensor<48x484xf32>) {
  ^bb0(%x: f16, %o: f32):
    %w = arith.extf %x : f16 to f32
    linalg.yield %w : f32
  } -> tensor<48x484xf32>
  %eb = tensor.empty() : tensor<484x40xf32>
  %b32 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<484x40xf16>) outs(%eb : tensor<484x40xf32>) {
  ^bb0(%x: f16, %o: f32):
    %w = arith.extf %x : f16 to f32
    linalg.yield %w : f32
  } -> tensor<484x40xf32>
  %empty = tensor.empty() : tensor<48x40xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<48x40xf32>) -> tensor<48x40xf32>
  %r = linalg.matmul ins(%a32, %b32 : tensor<48x484xf32>, tensor<484x40xf32>) outs(%init : tensor<48x40xf32>) -> tensor<48x40xf32>
  return %r : tensor<48x40xf32>
}"""
    found = found_as_given(copies)
    assert found, "IREE no longer fuses the copies into an f16 contraction: drop the test"
    assert mma_padding.widened(copies, found).count("flow.dispatch.region") == 2
    assert pipeline.judged_compile(copies, "cuda")[1] == []
