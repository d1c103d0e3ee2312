"""The 1x1 grad_input kernel for CUDA (`kernels.catalog`,
`plan.grad_input.kernel_why_not`, `iree_bwdconv/patterns/convolution_backward_kernel.py`,
`extern_kernels`): which layers
take it, the arguments and blocks it computes with, and the dispatch the
lowering makes of it. Its numbers are checked on a GPU
(`benchmarks/gpu_check.py`); nothing here can run PTX."""

from __future__ import annotations

import itertools
import re

import pytest
import torch

from iree_bwdconv.compiler import extern_kernels, pipeline
from iree_bwdconv import functional, geometry
from iree_bwdconv import options as lowering_options
from iree_bwdconv.kernels import catalog
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan.grad_input import kernel_why_not

from kernel_ptx import assert_callable_by_iree
from specs import spec_nd


@pytest.mark.parametrize("positions, alignment", [(625, 1), (2500, 2), (1380, 2), (784, 8), (64, 8), (18, 2), (5, 1)])
def test_row_alignment(positions, alignment):
    assert catalog.row_alignment(positions) == alignment
    assert positions % alignment == 0


_STORES = {"": "st.global.b16", "blocks_v4": "st.global.v4.b32", "blocks_v2": "st.global.v2.b32",
           "pairs": "st.global.cs.b32"}


@pytest.mark.parametrize("tile, dtype, alignment, form", catalog.VARIANTS)
def test_every_variant_ships_its_ptx(tile, dtype, alignment, form):
    """Each variant's PTX has one entry point of that name, the three
    buffers and ten i32 arguments that IREE passes (Triton's scratch
    pointers cut), and the block size and shared memory the dispatch
    declares; the blocks' stores are 16 or 8 bytes wide, the pairs' 4
    (streaming)."""
    variant = catalog.variant_by_name(catalog.variant_name(dtype, alignment, tile[0], form))
    assert (variant.block_channels, variant.block_positions) == tile[:2]
    assert variant.workgroup_size == (32 * tile[3], 1, 1)
    ptx = assert_callable_by_iree(variant, len(catalog.ARGUMENTS))
    assert "global_smem" in ptx
    assert set(re.findall(r"st\.global(?:\.cs)?(?:\.v\d)?\.b\d+", ptx)) == {_STORES[form]}


def test_every_variant_is_listed_once():
    names = [catalog.variant_name(dtype, alignment, tile[0], form) for tile, dtype, alignment, form in catalog.VARIANTS]
    assert len(set(names)) == len(names) == 52


@pytest.mark.parametrize("size, stride, padding", [
    (size, stride, padding) for size in (1, 2, 5, 8, 13) for stride in (1, 2, 3, 4) for padding in range(0, 4)
])
def test_kernel_index_arithmetic_agrees_with_geometry(size, stride, padding):
    """Along one dim the kernel stores output position o's value at
    `o*S - P` (S, P its arguments; strided_1x1_grad_input.py) where that is
    inside grad_input. Against `geometry.scatter_placement` of a 1x1 kernel:
    the same outputs land (first..last), at the same first index, and brute
    force: exactly the indices the forward read, each once (at stride 1
    every index: the kernel needs no zeros there)."""
    out = geometry.conv_output_size(size, 1, stride, padding, 1)
    arguments = dict(zip(catalog.ARGUMENTS, catalog.arguments(8, 8, (size,), (out,), (stride,), (padding,))))
    s, p = arguments["S_W"], arguments["P_W"]
    landing = [o for o in range(out) if 0 <= o * s - p < size]
    place = geometry.scatter_placement(size, out, 1, stride, padding, 1)
    assert landing == list(range(place.first, place.last))
    assert not landing or landing[0] * s - p == place.offset
    assert sorted(o * s - p for o in landing) == [i for i in range(size) if (i + padding) % stride == 0]


def test_arguments_2d_and_1d():
    assert catalog.arguments(1024, 2048, (50, 50), (25, 25), (2, 2), (0, 0)) == (1024, 2048, 625, 25, 50, 50, 2, 2, 0, 0)
    assert catalog.arguments(8, 16, (59, 91), (30, 46), (2, 2), (1, 0)) == (8, 16, 1380, 46, 59, 91, 2, 2, 1, 0)
    # 1-D: one row of the 2-D kernel, never strided or padded along it
    assert catalog.arguments(8, 16, (13,), (5,), (3,), (1,)) == (8, 16, 5, 5, 1, 13, 1, 3, 0, 1)
    with pytest.raises(ValueError, match="spatial rank 3"):
        catalog.arguments(8, 16, (4, 4, 4), (2, 2, 2), (2, 2, 2), (0, 0, 0))


def _why_not(target: str, *args, **keywords):
    return kernel_why_not(spec_nd(*args, **keywords), LoweringOptions(target=target))


def test_takes_ungrouped_1x1_half_layers_for_cuda():
    for dtype in (torch.float16, torch.bfloat16):
        assert _why_not("cuda", 2, 128, 128, (28, 28), (1, 1), (2, 2), (0, 0), dtype=dtype) is None
        assert _why_not("cuda", 2, 128, 128, (28, 28), (1, 1), (1, 1), (0, 0), dtype=dtype) is None
    assert _why_not("cuda", 2, 128, 128, (28, 28), (1, 1), (1, 1), (1, 1)) is None  # stride 1, padded
    assert _why_not("cuda", 2, 128, 128, (29,), (1,), (3,), (1,)) is None  # 1-D, padded
    assert _why_not("cuda", 2, 128, 128, (28, 29), (1, 1), (1, 2), (0, 0)) is None  # strided in one dim
    assert _why_not("cuda", 2, 128, 128, (28, 28), (1, 1), (2, 2), (0, 0), mask=(True, True, True)) is None


@pytest.mark.parametrize("target, args, keywords, reason", [
    ("cpu", ((28, 28), (1, 1), (2, 2), (0, 0)), {}, "the kernel is CUDA PTX; the target is cpu"),
    ("gfx942", ((28, 28), (1, 1), (2, 2), (0, 0)), {}, "the target is gfx942"),
    ("cuda", ((28, 28), (1, 1), (2, 2), (0, 0)), {"dtype": torch.float32}, "dtype f32"),
    ("cuda", ((28, 28), (1, 1), (2, 2), (0, 0)), {"groups": 4}, "groups 4"),
    ("cuda", ((28, 28), (3, 3), (2, 2), (1, 1)), {}, "kernel (3, 3)"),
    ("cuda", ((8, 8, 8), (1, 1, 1), (2, 2, 2), (0, 0, 0)), {}, "3-D"),
    ("cuda", ((28, 28), (1, 1), (2, 2), (0, 0)), {"mask": (False, True, False)}, "grad_input is not asked for"),
])
def test_refuses_with_a_reason(target, args, keywords, reason):
    assert reason in _why_not(target, 2, 64, 128, *args, **keywords)


@pytest.mark.parametrize("channels, padded", [(12, 16), (60, 64), (255, 256), (1, 8)])
def test_channels_off_a_multiple_of_eight_are_padded_for_it(channels, padded):
    """The kernel reads the weight's rows 8 channels at a time: the weight
    is zero-padded to a multiple of 8 channels, the kernel writes a
    grad_input of that many, and the result is cropped back to the layer's."""
    assert _why_not("cuda", 2, channels, 64, (20, 20), (1, 1), (2, 2), (0, 0)) is None
    mlir = functional.lowered(spec_nd(2, channels, 64, (20, 20), (1, 1), (2, 2), (0, 0)), target="cuda")
    assert mlir.count("hal.dispatch.extern") == 1
    assert re.search(rf"tensor.pad %arg2 low\[0, 0, 0, 0\] high\[0, {padded - channels}, 0, 0\]", mlir)
    assert f"}} : tensor<64x{channels}x1x1xf16> to tensor<64x{padded}x1x1xf16>" in mlir
    # gathered back by a generic: IREE copies a returned slice with its slow byte copy
    assert "tensor.extract_slice" not in mlir
    assert re.search(rf"tensor.extract %\d+\[.*\] : tensor<2x{padded}x20x20xf16>", mlir)
    assert f"-> tensor<2x{channels}x20x20xf16>" in mlir
    assert [int(c) for c in re.findall(r"arith.constant (\d+) : i32", mlir)][:2] == [padded, 64]
    assert pipeline.iree_compile(mlir, "cuda")


@pytest.mark.parametrize("channels, block_channels",
                         [(8, 32), (32, 32), (56, 32), (64, 64), (120, 64), (128, 128), (136, 128)])
def test_each_layer_takes_the_widest_tile_its_channels_fill(channels, block_channels):
    assert _why_not("cuda", 4, channels, 224, (47, 72), (1, 1), (2, 2), (0, 0)) is None
    arguments = catalog.arguments(channels, 224, (47, 72), (24, 36), (2, 2), (0, 0))
    assert catalog.variant("bf16", arguments).block_channels == block_channels


def test_refuses_when_a_linalg_form_is_forced(monkeypatch):
    monkeypatch.setenv(lowering_options.GRAD_INPUT_FORM_VARIABLE, "per-phase")
    configuration = spec_nd(2, 128, 128, (28, 28), (1, 1), (2, 2), (0, 0))
    assert "forces a linalg form" in kernel_why_not(configuration, lowering_options.from_environment("cuda"))


def test_refuses_a_dynamic_batch():
    configuration = spec_nd(2, 128, 128, (28, 28), (1, 1), (2, 2), (0, 0))
    dynamic = configuration.__class__(**{**configuration.__dict__,
                                         "grad_output_shape": (None, *configuration.grad_output_shape[1:]),
                                         "input_shape": (None, *configuration.input_shape[1:])})
    assert "dynamic batch" in kernel_why_not(dynamic, LoweringOptions(target="cuda"))


def test_cuda_lowering_is_one_extern_dispatch_that_compiles():
    """The lowered module calls the kernel through one `hal.dispatch.extern`
    with the layer's arguments and the PTX embedded, writing in place into
    a zero fill; no call or declaration is left, no linalg op computes
    grad_input, and iree-compile builds it."""
    configuration = spec_nd(2, 128, 96, (31, 31), (1, 1), (3, 3), (1, 1))
    mlir = functional.lowered(configuration, target="cuda")
    assert mlir.count("hal.dispatch.extern") == 1
    assert '"strided_1x1_grad_input_c128_f16_a1"' in mlir  # 11 x 11 positions: 2-byte loads
    assert extern_kernels.PREFIX not in mlir and "func.call" not in mlir and "linalg.generic" not in mlir
    constants = re.findall(r"arith.constant (\d+) : i32", mlir)
    assert [int(c) for c in constants] == [128, 96, 121, 11, 31, 31, 3, 3, 1, 1]
    assert "workgroup_local_memory = 28672" in mlir and 'data = dense<"0x' in mlir
    # workgroups: 121 positions in tiles of 64, 128 channels in tiles of 128, then the 2 images
    assert re.search(r'extern "\w+"\[%c121, %c128, %c2\]', mlir)
    assert re.findall(r"arith.ceildivui %arg\d+, %c(\d+)", mlir) == ["64", "128"]
    (fill,) = re.findall(r"(%\d+) = linalg.fill", mlir)
    assert re.search(rf"%arg2, %arg0, {fill}\) : .* -> {fill} count", mlir)  # w, dy, the zeros; result tied to them
    assert pipeline.iree_compile(mlir, "cuda")


def test_stride_1_writes_into_an_unfilled_grad_input():
    """At stride 1 every input position gets a value, so the kernel writes
    into an empty tensor: no fill, no memset of grad_input."""
    configuration = spec_nd(2, 128, 96, (12, 12), (1, 1), (1, 1), (1, 1))
    mlir = functional.lowered(configuration, target="cuda")
    assert mlir.count("hal.dispatch.extern") == 1 and "linalg.fill" not in mlir
    (empty,) = re.findall(r"(%\d+) = tensor.empty\(\) : tensor<2x128x12x12xf16>", mlir)
    assert re.search(rf"%arg2, %arg0, {empty}\) : .* -> {empty} count", mlir)
    assert [int(c) for c in re.findall(r"arith.constant (\d+) : i32", mlir)] == [128, 96, 196, 14, 12, 12, 1, 1, 1, 1]
    assert pipeline.iree_compile(mlir, "cuda")


@pytest.mark.parametrize("channels, variant, tiles", [(48, "c32", ["128", "32"]), (96, "c64", ["64", "64"])])
def test_few_channels_dispatch_a_narrower_tile(channels, variant, tiles):
    """Fewer than 128 input channels: the narrow or the middle tile's
    variant, its 4 warps, and workgroups over its position and channel tiles."""
    mlir = functional.lowered(spec_nd(2, channels, 96, (31, 31), (1, 1), (2, 2), (0, 0)), target="cuda")
    assert f'"strided_1x1_grad_input_{variant}_f16_a8"' in mlir  # 16 x 16 positions: 16-byte loads
    assert re.search(r"workgroup_size = \[128 : index, 1 : index, 1 : index\]", mlir)
    assert re.findall(r"arith.ceildivui %arg\d+, %c(\d+)", mlir) == tiles
    assert pipeline.iree_compile(mlir, "cuda")


def test_pairs_take_their_own_middle_tile():
    """64-127 channels writing pairs: 64 channels x 128 positions, where
    the other forms take 64 x 64."""
    mlir = functional.lowered(spec_nd(2, 96, 64, (30, 31), (1, 1), (2, 2), (0, 0)), target="cuda")
    assert '"strided_1x1_grad_input_pairs_c64_f16_a8"' in mlir  # 15 x 16 positions: 16-byte loads
    assert re.findall(r"arith.ceildivui %arg\d+, %c(\d+)", mlir) == ["128", "64"]
    assert catalog.tile(96, catalog.PAIRS) == catalog.PAIRS_MIDDLE_TILE == (64, 128, 32, 4, 4)
    assert catalog.tile(96) == catalog.MIDDLE_TILE


@pytest.mark.parametrize("sizes, out, stride, padding, channels, form", [
    ((56, 56), (28, 28), (2, 2), (0, 0), 256, "blocks_v4"),  # ResNet-50's projection
    ((100, 100), (50, 50), (2, 2), (0, 0), 512, "blocks_v2"),  # rows of 50: 2 positions a store
    ((14, 24), (7, 12), (2, 2), (0, 0), 136, "blocks_v4"),
    ((56, 56), (28, 28), (2, 2), (0, 0), 96, "blocks_v4"),  # the middle tile
    ((50, 50), (25, 25), (2, 2), (0, 0), 1024, "pairs"),  # odd rows of dy
    ((470, 725), (235, 363), (2, 2), (0, 0), 32, "pairs"),  # seed 003's c32 layer: odd rows of grad_input
    ((57, 56), (29, 28), (2, 2), (0, 0), 256, "pairs"),  # the last row pair one row short
    ((56, 56), (28, 28), (2, 2), (0, 0), 32, "pairs"),  # the narrow tile writes no blocks
    ((59, 91), (30, 46), (2, 2), (0, 0), 896, ""),  # H*W odd: every other plane starts inside a word
    ((56, 56), (29, 29), (2, 2), (1, 1), 256, ""),  # padded
    ((56, 56), (28, 56), (2, 1), (0, 0), 256, ""),  # stride 1 along w
    ((84, 84), (28, 28), (3, 3), (0, 0), 256, ""),  # stride 3
    ((56,), (28,), (2,), (0,), 256, ""),  # 1-D: stride 1 along the kernel's h
])
def test_form(sizes, out, stride, padding, channels, form):
    arguments = catalog.arguments(channels, 64, sizes, out, stride, padding)
    assert catalog.form(arguments) == form
    assert catalog.block_vector(arguments) == catalog.BLOCK_FORMS.get(form, 0)
    assert catalog.writes_pairs(arguments) == (form == "pairs")
    assert catalog.writes_every_position(arguments) == (form != "")
    assert catalog.variant("f16", arguments).name.startswith(f"{catalog.KERNEL}_{form}_c" if form else
                                                            f"{catalog.KERNEL}_c")


@pytest.mark.parametrize("oh, ow", [(1, 2), (3, 2), (2, 4), (5, 6), (4, 8), (7, 12), (1, 20)])
def test_blocks_cover_grad_input_once_with_aligned_runs(oh, ow):
    """The blocks kernel's stores, brute force (strided_1x1_grad_input.py):
    position q's 2 x 2 block at rows 2*oh, 2*oh + 1 and columns 2*ow,
    2*ow + 1, its value at the forward's read position. Every element of
    grad_input is stored once, and each run of VEC positions from a
    multiple of VEC writes 2*VEC contiguous elements of each row from a
    multiple of 2*VEC, as the kernel's hints to Triton claim."""
    h, w = 2 * oh, 2 * ow
    arguments = catalog.arguments(128, 64, (h, w), (oh, ow), (2, 2), (0, 0))
    vector = catalog.block_vector(arguments)
    assert vector == (4 if ow % 4 == 0 else 2)
    stored = []
    for q in range(oh * ow):
        top_left = 2 * (q // ow) * w + 2 * (q % ow)
        assert divmod(top_left, w) == (2 * (q // ow), 2 * (q % ow))  # the value: i = oh*2, j = ow*2
        stored += [top_left, top_left + 1, top_left + w, top_left + w + 1]
    assert sorted(stored) == list(range(h * w))
    for start in range(0, oh * ow, vector):
        tops = [2 * (q // ow) * w + 2 * (q % ow) + t for q in range(start, start + vector) for t in (0, 1)]
        assert tops == list(range(tops[0], tops[0] + 2 * vector)) and tops[0] % (2 * vector) == 0
    assert w % (2 * vector) == 0 and (oh * ow) % vector == 0  # W's hinted divisibility; runs all in or out of range


@pytest.mark.parametrize("h, w", [(2, 1), (2, 3), (1, 2), (3, 4), (4, 5), (6, 7), (5, 6), (8, 8), (10, 9), (7, 2)])
def test_pairs_cover_grad_input_once(h, w):
    """The pairs kernel's stores, brute force (strided_1x1_grad_input.py),
    over three planes: position q's word oh*W + ow of its plane holds its
    value at the forward's read position (2*oh, 2*ow) and a zero after it,
    and a word of zeros follows (W + W % 2) / 2 words later where the row
    below has room. Every element of grad_input is stored once; planes of
    H*W/2 words keep each word whole."""
    oh, ow = (h + 1) // 2, (w + 1) // 2
    arguments = catalog.arguments(32, 64, (h, w), (oh, ow), (2, 2), (0, 0))
    assert catalog.writes_pairs(arguments) and h * w % 2 == 0
    planes, plane, odd = 3, h * w // 2, w % 2
    stored = []
    for p, q in itertools.product(range(planes), range(oh * ow)):
        row, col = divmod(q, ow)
        top = p * plane + row * w + col
        assert divmod(2 * top - p * h * w, w) == (2 * row, 2 * col)  # the value, in the word's low half
        stored += [2 * top, 2 * top + 1]
        if 2 * row + 1 < h and 2 * col + 1 + odd < w:
            bottom = top + (w + odd) // 2
            stored += [2 * bottom, 2 * bottom + 1]
    assert sorted(stored) == list(range(planes * h * w))


@pytest.mark.parametrize("h, w", [(3, 3), (5, 7), (1, 9)])
def test_no_pairs_where_planes_would_split_words(h, w):
    arguments = catalog.arguments(32, 64, (h, w), ((h + 1) // 2, (w + 1) // 2), (2, 2), (0, 0))
    assert not catalog.writes_pairs(arguments) and catalog.form(arguments) == ""


@pytest.mark.parametrize("channels, sizes, variant", [
    (256, (56, 56), "blocks_v4_c128_f16_a8"),  # ResNet-50's projection
    (32, (46, 45), "pairs_c32_f16_a1"),  # seed 003's c32 layer in small: rows of odd length, 23 x 23 positions
])
def test_blocks_and_pairs_write_into_an_unfilled_grad_input(channels, sizes, variant):
    """The forms that write all of grad_input at stride 2: no fill, so no
    memset; the kernel's result is the empty tensor it was given."""
    mlir = functional.lowered(spec_nd(2, channels, 224, sizes, (1, 1), (2, 2), (0, 0)), target="cuda")
    assert mlir.count("hal.dispatch.extern") == 1 and "linalg.fill" not in mlir
    assert f'"strided_1x1_grad_input_{variant}"' in mlir
    (empty,) = re.findall(rf"(%\d+) = tensor.empty\(\) : tensor<2x{channels}x{sizes[0]}x{sizes[1]}xf16>", mlir)
    assert re.search(rf"%arg2, %arg0, {empty}\) : .* -> {empty} count", mlir)
    assert pipeline.iree_compile(mlir, "cuda")


def test_other_targets_keep_the_linalg_lowering():
    configuration = spec_nd(2, 128, 96, (31, 31), (1, 1), (3, 3), (1, 1))
    for target in ("gfx942", "cpu"):
        assert "hal.dispatch.extern" not in functional.lowered(configuration, target=target)


def test_link_leaves_modules_without_kernel_calls_alone():
    text = "module {\n  func.func @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n    return %arg0 : tensor<2xf32>\n  }\n}\n"
    assert extern_kernels.link(text) == text


class _TwoProjections(torch.nn.Module):
    """Two strided 1x1 grad_inputs of one dtype and alignment but other shapes."""

    def forward(self, dy1, x1, w1, dy2, x2, w2):
        args = (None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1, [True, False, False])
        first = torch.ops.aten.convolution_backward(dy1, x1, w1, *args)[0]
        second = torch.ops.aten.convolution_backward(dy2, x2, w2, *args)[0]
        return first, second


def test_one_module_with_two_kernel_calls_of_other_shapes():
    """Each call gets a declaration of its own type (a suffix after the
    first) and becomes its own extern dispatch."""
    from iree_bwdconv import lowering

    tensors = [torch.zeros(2, 16, 5, 2), torch.zeros(2, 128, 10, 4), torch.zeros(16, 128, 1, 1),
               torch.zeros(1, 32, 3, 6), torch.zeros(1, 256, 6, 12), torch.zeros(32, 256, 1, 1)]
    module = _TwoProjections()
    raw = lowering.import_module(module, *[t.half() for t in tensors])
    lowering.to_torch_backend(raw, "linalg")
    lowering.rewrite_convolution_backward(raw, LoweringOptions(target="cuda"))
    text = str(raw)
    assert "@iree_bwdconv.kernel.strided_1x1_grad_input(" in text
    assert "@iree_bwdconv.kernel.strided_1x1_grad_input_1(" in text  # other types
    mlir = lowering.lower(module, *[t.half() for t in tensors], target="cuda")
    assert mlir.count("hal.dispatch.extern") == 2 and extern_kernels.PREFIX not in mlir
    # both: 10 and 18 positions, rows of 2 and 6, grad_input twice dy: whole blocks, 8 bytes a store
    assert '"strided_1x1_grad_input_blocks_v2_c128_f16_a2"' in mlir
    assert pipeline.iree_compile(mlir, "cuda")
