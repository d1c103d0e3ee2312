"""`weight_rows`: the 1x1 weight gradient of GPU targets
(`plan.grad_weight.rows_apply`), input
rows per image against grad_output in place; where the lowering takes it,
its IR, and its results (lowered for CUDA, compiled for and run on the
CPU) against eager float64."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from benchmarks import weight_rows_tiles
from iree_bwdconv import functional, geometry, reference
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.run import runtime
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import grad_weight as gw
from iree_bwdconv.plan import tuning

from specs import spec_nd

CUDA, CPU = LoweringOptions(target="cuda"), LoweringOptions(target="cpu")


def applies(spec, options: LoweringOptions) -> bool:
    return gw.rows_apply(spec, options, tuning.for_target(options.target))


def padded_positions(spec) -> int:
    return gw.rows_padding(spec, tuning.for_target("cuda"))[0]


def padded_channels(spec) -> int:
    return gw.rows_padding(spec, tuning.for_target("cuda"))[1]


def _split_small(monkeypatch, **fields) -> None:
    """The images split, small as they are (CUDA's split thresholds)."""
    monkeypatch.setitem(tuning.TUNING, "cuda", dataclasses.replace(tuning.TUNING["cuda"], **fields))


def _spec(n, c, f, size, kernel=1, stride=1, padding=0, dtype=torch.float16, groups=1):
    """A square 2-D layer asking for grad_weight alone."""
    return spec_nd(n, c, f, (size, size), (kernel, kernel), (stride, stride), (padding, padding), groups=groups,
                   dtype=dtype, mask=(False, True, False))


@pytest.mark.parametrize("spec_args, taken", [
    ((32, 256, 64, 56), True),                       # 3136 positions: no padding
    ((32, 256, 512, 56, 1, 2), True),                # 784 positions at stride 2
    ((32, 1024, 2048, 50, 1, 2), True),              # 625 positions, padded: 683 multiply-adds per element
    ((8, 64, 128, 28, 1, 2), False),                 # 196 positions, padded: 43 per element
    ((32, 256, 64, 56, 3, 1, 1), False),             # a 3x3 kernel
    ((32, 256, 64, 56, 1, 1, 0, torch.float32), False),  # f32: 51 multiply-adds per element copied
    ((32, 256, 512, 28, 1, 1, 0, torch.float32), True),   # 171
    ((32, 256, 64, 56, 1, 1, 0, torch.float16, 4), False),  # grouped
    ((5, 208, 279, 40), False),                      # 279 output channels: IREE read past grad_output
    ((4, 32, 224, 56, 1, 2), False),                 # 224, seed 003's c32 layer's: the same
    ((5, 208, 192, 40), False),                      # 192: IREE tiles the channels by 64 or 128
    ((5, 208, 256, 40), True),                       # 256, a multiple of 128
])
def test_taken_for_1x1_kernels_on_gpus(spec_args, taken):
    configuration = _spec(*spec_args)
    assert applies(configuration, CUDA) == taken
    assert not applies(configuration, CPU)


@pytest.mark.parametrize("out_channels", [64, 128, 256, 2048, 96, 160, 192, 224, 279, 1344, 2016])
def test_taken_only_for_a_multiple_of_128_output_channels_or_64(out_channels):
    """The rows' contraction read grad_output's channels in whole tiles,
    past the end of grad_output (an illegal address on the GPU) where the
    output channels were not a multiple of the tile: 160, 224, 279, 288,
    2016 of those run alone against a tile of 64, and 1344 against 128."""
    taken = applies(_spec(8, 256, out_channels, 16), CUDA)
    assert taken == (out_channels % 128 == 0 or out_channels == 64)


@pytest.mark.parametrize("n, c, f, sizes, stride, taken", [
    (12, 896, 2016, (59, 91), 2, True),   # seed 003's c896: copied to 2048 channels, 1.6% more
    (8, 1024, 1344, (50, 50), 2, True),   # 1408, 4.8% more
    (5, 1024, 279, (41, 45), 1, False),   # 384 would be 38% more
    (8, 1024, 1344, (40, 44), 1, False),  # read in place (1760 positions): no copy to pad
])
def test_a_copied_grad_output_takes_channels_up_to_a_multiple_of_128(n, c, f, sizes, stride, taken):
    """Where its positions are padded, grad_output is copied, and the copy
    gains zero channels up to a multiple of 128, which IREE's tiles divide,
    where that adds at most an eighth of them."""
    configuration = spec_nd(n, c, f, sizes, (1, 1), (stride, stride), (0, 0), mask=(False, True, False))
    assert applies(configuration, CUDA) == taken
    assert padded_channels(configuration) == (-f % 128 if padded_positions(configuration) else 0)


def test_padded_channels_are_dropped_from_the_result(monkeypatch):
    """1000 output channels copied as 1024 (25 positions padded to 32): right
    on the CPU, lowered for CUDA."""
    _split_small(monkeypatch, split_target_partials=1 << 30)
    generator = torch.Generator().manual_seed(0)
    dy, x = torch.randn(2, 1000, 5, 5, generator=generator).half(), torch.randn(2, 1024, 5, 5, generator=generator).half()
    w = torch.randn(1000, 1024, 1, 1, generator=generator).half()
    arguments = (None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [False, True, False])
    configuration = functional.spec_of(dy, x, w, *arguments)
    assert applies(configuration, CUDA) and padded_channels(configuration) == 24
    functional.clear_cache()
    mlir = functional.lowered(configuration, target="cuda")
    functional.clear_cache()
    assert "x1024x32xf16>" in mlir
    grad_weight = runtime.run(pipeline.iree_compile(mlir, "cpu"), [dy, x, w])[0]
    (comparison,) = reference.compare([None, grad_weight, None], dy, x, w, arguments)
    assert comparison.ok, comparison


@pytest.mark.parametrize("layer", [
    weight_rows_tiles.Layer(8, 64, 64, (28, 28)),        # a tile of 64
    weight_rows_tiles.Layer(8, 2048, 2048, (28, 28)),    # of 128, read in place
    weight_rows_tiles.Layer(32, 1024, 2048, (50, 50), 2),  # of 128, padded
])
def test_irees_channel_tile_divides_the_channels_the_rows_take(layer):
    """What the rule assumes of IREE's tiles, on layers where it takes the
    rows: compiled to IREE's executable configurations (nothing runs)."""
    configuration = weight_rows_tiles.spec_of(layer)
    assert applies(configuration, CUDA)
    assert layer.f % weight_rows_tiles.channel_tile(configuration) == 0


def test_a_copy_with_padded_channels_is_read_whole_by_the_contraction():
    """IREE slices the rows' contraction back to the real channels (2016)
    and reads them from the copy of 2048, so that its tiles of 64 or 128
    end inside that binding, not past a copy of 2016."""
    configuration = weight_rows_tiles.spec_of(weight_rows_tiles.Layer(4, 896, 2016, (59, 91), 2))
    assert applies(configuration, CUDA) and padded_channels(configuration) == 32
    functional.clear_cache()
    sources = pipeline.iree_compile_to(functional.lowered(configuration, target="cuda"), "cuda", "executable-sources")
    contraction = next(f for f in sources.split("func.func @")[1:] if "_matmul_like_" in f.split("(", 1)[0])
    loads = re.findall(r"dispatch\.tensor<readonly:tensor<([0-9x]+)xf16>> -> tensor<([0-9x]+)xf16>", contraction)
    assert any(binding.split("x")[-2] == "2048" and read.split("x")[-2] == "2016" for binding, read in loads), loads
    assert weight_rows_tiles.channel_tile(configuration) in (64, 128)


def test_the_tile_of_128_does_not_divide_1344_channels():
    """Why 64 output channels a tile was not enough: the layer that hung on
    the GPU with the rule at 64 (`gpu_check`'s 1x1_s1_k1344)."""
    configuration = weight_rows_tiles.spec_of(weight_rows_tiles.Layer(8, 1024, 1344, (40, 44)))
    assert weight_rows_tiles.rows_tile(configuration) == 128
    assert not applies(configuration, CUDA)


def test_not_taken_for_transposed_convolutions():
    """A transposed 1x1 convolution's weight gradient keeps im2col."""
    x, dy, w = torch.zeros(32, 256, 28, 28).half(), torch.zeros(32, 64, 28, 28).half(), torch.zeros(256, 64, 1, 1).half()
    configuration = functional.spec_of(dy, x, w, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1, [False, True, False])
    assert not applies(configuration, CUDA)


@pytest.mark.parametrize("size, stride, padding, positions", [(16, 1, 0, 256), (15, 1, 0, 240), (9, 2, 1, 48)])
def test_grad_output_is_read_in_place_and_positions_padded_to_sixteen(size, stride, padding, positions):
    configuration = _spec(4, 512, 512, size, 1, stride, padding)
    mlir = functional.lowered(configuration, target="cuda")
    contraction = next(op for op in mlir.split("linalg.generic")[1:] if '"reduction", "reduction"' in op)
    operands = re.search(r"ins\(.*?: (tensor<[^>]*>), (tensor<[^>]*>)\)", contraction).groups()
    split = gw.image_split(configuration, CUDA, tuning.for_target("cuda"))
    images = 4 // split
    assert operands == (f"tensor<{split}x{images}x512x{positions}xf16>", f"tensor<{split}x{images}x{positions}x512xf16>")
    assert "linalg.transpose" not in mlir


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("n, size, stride, padding", [(2, 5, 1, 0), (4, 9, 2, 1), (3, 16, 1, 0), (2, 14, 3, 1)])
def test_right_on_the_cpu(dtype, n, size, stride, padding, monkeypatch):
    _split_small(monkeypatch, split_target_partials=1 << 30, split_min_chunk=1)
    generator = torch.Generator().manual_seed(0)
    out = geometry.conv_output_size(size, 1, stride, padding, 1)
    dy = torch.randn(n, 512, out, out, generator=generator).to(dtype)
    x = torch.randn(n, 512, size, size, generator=generator).to(dtype)
    w = torch.randn(512, 512, 1, 1, generator=generator).to(dtype)
    arguments = (None, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1, [False, True, False])
    configuration = functional.spec_of(dy, x, w, *arguments)
    assert applies(configuration, CUDA)
    functional.clear_cache()
    mlir = functional.lowered(configuration, target="cuda")
    functional.clear_cache()
    grad_weight = runtime.run(pipeline.iree_compile(mlir, "cpu"), [dy, x, w])[0]
    (comparison,) = reference.compare([None, grad_weight, None], dy, x, w, arguments)
    assert comparison.ok, comparison


@pytest.mark.parametrize("sizes, stride, padding, dtype", [
    ((128,), (2,), (0,), torch.float16),     # 64 positions
    ((188,), (3,), (1,), torch.float32),
    ((1, 126), (1, 2), (0, 1), torch.bfloat16),
])
def test_one_strided_dim_of_unpadded_positions_takes_im2col(sizes, stride, padding, dtype):
    """Positions along one strided dim, a multiple of 16 long: IREE 3.13 did
    not compile the rows' contraction for CUDA or gfx942 ("failed to pack
    reduction dimensions for partial reduction"). They take im2col, which
    compiles for both."""
    # 256 channels each way, 128 multiply-adds per element: rows in f32 too
    spec = spec_nd(4, 256, 256, sizes, (1,) * len(sizes), stride, padding, dtype=dtype, mask=(False, True, False))
    for target in ("cuda", "gfx942"):
        assert not applies(spec, LoweringOptions(target=target))
        functional.compile(functional.lowered(spec, target=target), target)
