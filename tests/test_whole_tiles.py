"""whole_tiles: a contraction that IREE's CUDA code would pad (and read
past an operand with) runs over operands copied into zeros of whole
tiles instead, with the same numbers; what cannot be padded so is left
for the widening."""

from __future__ import annotations

import pytest
import torch

from iree_bwdconv.compiler import iree_faults, mma_padding, pipeline, whole_tiles
from iree_bwdconv.run import runtime
from tests.overreads import found_as_given

REPRODUCER = iree_faults.CUDA_MMA_PADDING_OVERREAD.reproducer()

MATMUL = """func.func @main(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>) -> tensor<{m}x{n}xf32> {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<{m}x{n}xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16>) outs(%init : tensor<{m}x{n}xf32>)
    -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}"""

# A reduction whose body is not a sum of products: the largest product.
LARGEST = """#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#o = affine_map<(m, n, k) -> (m, n)>
func.func @main(%a: tensor<50x64xf16>, %b: tensor<64x24xf16>) -> tensor<50x24xf32> {
  %low = arith.constant -1.0e30 : f32
  %empty = tensor.empty() : tensor<50x24xf32>
  %init = linalg.fill ins(%low : f32) outs(%empty : tensor<50x24xf32>) -> tensor<50x24xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<50x64xf16>, tensor<64x24xf16>) outs(%init : tensor<50x24xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %p = arith.mulf %x, %y : f16
    %w = arith.extf %p : f16 to f32
    %m = arith.maximumf %acc, %w : f32
    linalg.yield %m : f32
  } -> tensor<50x24xf32>
  return %r : tensor<50x24xf32>
}"""


def _matmul(m: int, n: int, k: int) -> str:
    return MATMUL.format(m=m, n=n, k=k)


def _overread(extents, tiles, dims) -> mma_padding.Overread:
    return mma_padding.Overread("main_dispatch_0", tuple(extents), tuple(tiles), tuple(dims))


def _run_on_the_cpu(text: str, *inputs: torch.Tensor) -> torch.Tensor:
    (result,) = runtime.run(pipeline.iree_compile(text, "cpu"), list(inputs), "cpu")
    return result


def test_whole_sizes_round_up_the_padded_dims_alone():
    assert whole_tiles.whole_sizes((1568, 512, 2048), (64, 64, 128), (0,)) == [1600, 512, 2048]
    assert whole_tiles.whole_sizes((48, 40, 484), (64, 32, 16), (0, 2)) == [64, 40, 496]
    assert whole_tiles.whole_sizes((64, 40), (64, 32), (0,)) == [64, 40]


@pytest.mark.parametrize("m, n, k, tiles, dims", [
    (50, 24, 64, (16, 16, 16), (0,)),        # rows: a parallel dim
    (48, 40, 50, (64, 32, 16), (0, 2)),      # rows and the reduction
    (32, 10, 64, (32, 16, 32), (1,)),        # a classifier's ten columns
], ids=["rows", "rows_and_reduction", "columns"])
def test_whole_tiles_compute_the_same_on_the_cpu(m, n, k, tiles, dims):
    text = _matmul(m, n, k)
    tiled, left = whole_tiles.padded(text, [_overread((m, n, k), tiles, dims)])
    assert left == []
    sizes = whole_tiles.whole_sizes((m, n, k), tiles, dims)
    assert f"tensor<{sizes[0]}x{sizes[1]}xf32>" in tiled and "flow.dispatch.region" in tiled
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(m, k, generator=generator).half(), torch.randn(k, n, generator=generator).half()
    expected = a.double() @ b.double()
    got = _run_on_the_cpu(tiled, a, b)
    assert got.shape == (m, n)
    assert (got.double() - expected).abs().max().item() < 1e-5 * expected.abs().max().item()


def test_left_for_the_widening_where_whole_tiles_would_change_a_number():
    """A reduction dim is padded only where the body sums products."""
    overread = _overread((50, 24, 64), (16, 16, 48), (2,))
    assert whole_tiles.padded(LARGEST, [overread]) == (LARGEST, [overread])
    rows = _overread((50, 24, 64), (16, 16, 16), (0,))
    tiled, left = whole_tiles.padded(LARGEST, [rows])
    assert left == [] and "tensor<64x24xf32>" in tiled


def test_left_for_the_widening_where_iree_reshaped_the_loops():
    """The reproducer's dispatch collapses the source's spatial loops: no
    op has its extents, so it is widened, as before."""
    found = found_as_given(REPRODUCER)
    assert whole_tiles.padded(REPRODUCER, found) == (REPRODUCER, found)
    assert list(whole_tiles.rewrites(REPRODUCER, found)) == [mma_padding.widened(REPRODUCER, found),
                                                          mma_padding.widened(REPRODUCER, found, every=True)]


def test_a_contraction_of_the_same_counts_is_left_as_it_is():
    """Widening matched contractions by their counts alone, so a layer of
    as many multiply-adds as an overreading one was widened with it."""
    text = _matmul(50, 24, 64).replace("@main", "@first") + "\n" + _matmul(100, 12, 64).replace("@main", "@second")
    tiled, left = whole_tiles.padded(text, [_overread((50, 24, 64), (16, 16, 16), (0,))])
    assert left == [] and "tensor<64x24xf32>" in tiled
    assert "linalg.matmul ins(%arg0, %arg1 : tensor<100x64xf16>" in tiled


def test_the_named_matmul_that_reads_past_an_operand_takes_whole_tiles_for_cuda():
    text = _matmul(48, 40, 484)
    found = found_as_given(text)
    assert found, "the matmul no longer reads past an operand: pick another shape"
    tiled, left = whole_tiles.padded(text, found)
    assert left == [] and "tensor<484x40xf16>" in tiled  # its operands stay f16
    assert found_as_given(tiled) == []


def test_a_named_contraction_in_a_util_func_takes_whole_tiles():
    """After IREE's input phase (iree-bwdconv-compile) functions are
    util.func: their named ops are made generics too."""
    text = (_matmul(50, 24, 64).replace("func.func @main", "util.func public @main")
            .replace("  return %r", "  util.return %r"))
    tiled, left = whole_tiles.padded(text, [_overread((50, 24, 64), (16, 16, 16), (0,))])
    assert left == [] and "tensor<64x24xf32>" in tiled
    rows = mma_padding.Overread("main_dispatch_0", (50, 24, 64), (16, 16, 16), (0,), reduction=64)
    assert "tensor<64x24xf32>" in mma_padding.widened(text, [rows])


def test_where_the_tiled_module_is_still_marked_every_contraction_is_widened(monkeypatch):
    """IREE may pad a module anew after whole tiles: the next candidate,
    everything widened (by one operand: the smaller), is made then and compiled."""
    text = _matmul(48, 40, 484)
    zero = "%zero = arith.constant 0.0 : f32"
    still_marked = text.replace(zero, f"{zero}\n  %unused = arith.constant 1.0 : f32")
    monkeypatch.setattr(whole_tiles, "padded", lambda text, found: (still_marked, []))
    found = found_as_given(text)
    candidates = whole_tiles.rewrites(text, found)
    assert next(candidates) == still_marked
    widened = next(candidates)
    assert "tensor<484x40xf32>" in widened and "tensor<48x484xf32>" not in widened
    assert pipeline.judged_compile(text, "cuda")[1] == []
