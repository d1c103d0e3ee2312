"""The phase kernel for CUDA (`kernels.phase_catalog`,
`plan.grad_input.phase_kernel_why_not`, the "phase-kernel" form of
`iree_bwdconv/patterns/convolution_backward_kernel.py`, `extern_kernels`):
which layers take it, the arguments it computes with, and the dispatch
the lowering makes of it. Its numbers are checked on a GPU
(`benchmarks/gpu_check.py`); nothing here can run PTX."""

from __future__ import annotations

import re

import pytest
import torch

from iree_bwdconv import functional, geometry, lowering
from iree_bwdconv.compiler import extern_kernels, pipeline
from iree_bwdconv.kernels import phase_catalog
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import plan
from iree_bwdconv.plan.grad_input import phase_kernel_why_not

from kernel_ptx import assert_callable_by_iree
from specs import spec_nd


@pytest.mark.parametrize("tile, dtype", phase_catalog.VARIANTS)
def test_every_variant_ships_its_ptx(tile, dtype):
    """Each variant's PTX has one entry point of that name, the three
    buffers and thirteen i32 arguments that IREE passes (Triton's scratch
    pointers cut), MMA instructions, stores of 2 bytes (a phase's values
    are a stride apart), and the block size the dispatch declares."""
    variant = phase_catalog.variant(dtype, phase_catalog.arguments(1, tile[0], 16, (8, 8), (4, 4), (3, 3), (2, 2),
                                                                   (1, 1)))
    assert variant.name == phase_catalog.variant_name(dtype, tile[0])
    assert (variant.block_channels, variant.block_positions) == tile[:2]
    assert variant.workgroup_size == (32 * tile[3], 1, 1)
    ptx = assert_callable_by_iree(variant, len(phase_catalog.ARGUMENTS))
    assert "mma.sync" in ptx
    assert set(re.findall(r"st\.global(?:\.v\d)?\.b\d+", ptx)) == {"st.global.b16"}


def _phase_sums(size: int, out: int, kernel: int, stride: int, padding: int) -> set[tuple[int, int, int]]:
    """(i, k, o) of every product the kernel sums along one dim, by its
    own index arithmetic (phase_grad_input.py): phase r's positions
    i = q*S + r, taps k = (r + P) % S, + S, ... below the kernel, o = (i + P - k) / S
    where 0 <= o < out."""
    sums = set()
    for r in range(stride):
        for i in range(r, size, stride):
            for k in range((r + padding) % stride, kernel, stride):
                numerator = i + padding - k
                assert numerator % stride == 0
                if numerator >= 0 and numerator // stride < out:
                    sums.add((i, k, numerator // stride))
    return sums


@pytest.mark.parametrize("size, kernel, stride, padding", [
    (size, kernel, stride, padding) for size in (1, 4, 7, 16) for kernel in (1, 2, 3, 4, 5)
    for stride in (2, 3) for padding in range(0, kernel)
    if geometry.conv_output_size(size, kernel, stride, padding, 1) > 0
])
def test_phase_index_arithmetic_sums_exactly_the_forward_products(size, kernel, stride, padding):
    """Along one dim, the products the kernel sums are exactly those of the
    forward convolution (input i read by output o through tap k), each
    once, and every input position belongs to one phase."""
    out = geometry.conv_output_size(size, kernel, stride, padding, 1)
    forward = {(o * stride - padding + k, k, o) for o in range(out) for k in range(kernel)
               if 0 <= o * stride - padding + k < size}
    assert _phase_sums(size, out, kernel, stride, padding) == forward
    phases = [i for r in range(stride) for i in range(r, size, stride)]
    assert sorted(phases) == list(range(size))


def test_arguments_2d_and_1d():
    assert phase_catalog.arguments(4, 64, 64, (64, 64), (32, 32), (4, 4), (2, 2), (1, 1)) == (
        4, 16, 16, 64, 64, 32, 32, 4, 4, 2, 2, 1, 1)
    # 1-D: one row of the 2-D kernel, never strided or padded along it
    assert phase_catalog.arguments(1, 32, 48, (13,), (6,), (3,), (2,), (1,)) == (
        1, 32, 48, 1, 13, 1, 6, 1, 3, 1, 2, 0, 1)
    arguments = phase_catalog.arguments(2, 32, 48, (13, 10), (5, 4), (5, 4), (3, 2), (2, 1))
    assert phase_catalog.largest_phase(arguments) == 5 * 5  # ceil(13 / 3) x ceil(10 / 2)
    assert phase_catalog.grid_z(8, arguments) == 8 * 2 * 6


@pytest.mark.parametrize("channels, block", [(16, 16), (24, 16), (32, 32), (8, 16), (3, 16)])
def test_each_group_takes_the_widest_tile_its_channels_fill(channels, block):
    assert phase_catalog.tile(channels)[0] == block


def _why_not(target: str, *args, **keywords):
    return phase_kernel_why_not(spec_nd(*args, **keywords), LoweringOptions(target=target),
                                plan(spec_nd(*args, **keywords), LoweringOptions(target=target)).tuning)


@pytest.mark.parametrize("target, args, keywords, reason", [
    ("cpu", ((32, 32), (4, 4), (2, 2), (1, 1)), {"groups": 4}, "the target is cpu"),
    ("gfx942", ((32, 32), (4, 4), (2, 2), (1, 1)), {"groups": 4}, "the target is gfx942"),
    ("cuda", ((32, 32), (4, 4), (2, 2), (1, 1)), {"groups": 4, "dtype": torch.float32}, "dtype f32"),
    ("cuda", ((32, 32), (4, 4), (1, 1), (1, 1)), {"groups": 4}, "stride 1"),
    ("cuda", ((32, 32), (1, 1), (2, 2), (0, 0)), {"groups": 4}, "kernel (1, 1)"),
    ("cuda", ((32, 32), (3, 3), (2, 2), (2, 2)), {"groups": 4, "dilation": (2, 2)}, "dilation (2, 2)"),
    ("cuda", ((8, 8, 8), (4, 4, 4), (2, 2, 2), (1, 1, 1)), {"groups": 4}, "3-D"),
    ("cuda", ((32, 32), (4, 4), (2, 2), (1, 1)), {"groups": 4, "mask": (False, True, False)},
     "grad_input is not asked for"),
])
def test_refuses_with_a_reason(target, args, keywords, reason):
    assert reason in _why_not(target, 2, 64, 64, *args, **keywords)


def test_refuses_more_workgroup_rows_than_cuda_allows():
    """The grid's z is images x groups x phases: 4100 images of 4 groups
    at stride 2 are 65600 rows, over CUDA's 65535."""
    assert "workgroup rows" in _why_not("cuda", 4100, 64, 64, (8, 8), (4, 4), (2, 2), (1, 1), groups=4)


def test_refuses_without_extern_kernels_or_with_a_form_forced():
    configuration = spec_nd(2, 64, 64, (32, 32), (4, 4), (2, 2), (1, 1), groups=4)
    tuning = plan(configuration, LoweringOptions(target="cuda")).tuning
    off = LoweringOptions(target="cuda", extern_kernels=False)
    assert "extern_kernels=False" in phase_kernel_why_not(configuration, off, tuning)
    forced = LoweringOptions(target="cuda", grad_input_form="per-phase")
    assert "forces a linalg form" in phase_kernel_why_not(configuration, forced, tuning)


def test_cuda_lowering_is_one_extern_dispatch_that_compiles():
    """A grouped strided grad_input calls the kernel through one
    `hal.dispatch.extern` with the layer's arguments, writing into an
    unfilled grad_input (every phase stores its positions, a phase without
    taps its zeros), and iree-compile builds it."""
    configuration = spec_nd(2, 64, 64, (31, 30), (4, 4), (2, 2), (1, 1), groups=4)
    assert _why_not("cuda", 2, 64, 64, (31, 30), (4, 4), (2, 2), (1, 1), groups=4) is None
    mlir = functional.lowered(configuration, target="cuda")
    assert mlir.count("hal.dispatch.extern") == 1 and '"phase_grad_input_c16_f16"' in mlir
    assert extern_kernels.PREFIX not in mlir and "func.call" not in mlir and "linalg.generic" not in mlir
    out = [geometry.conv_output_size(s, 4, 2, 1, 1) for s in (31, 30)]
    constants = [int(c) for c in re.findall(r"arith.constant (\d+) : i32", mlir)]
    assert constants == [4, 16, 16, 31, 30, *out, 4, 4, 2, 2, 1, 1]
    # workgroups: phase (0, 0)'s 16 x 15 positions, 16 channels a group, 2 images x 4 groups x 4 phases
    assert re.search(r'extern "\w+"\[%c240, %c16, %c32\]', mlir)
    (empty,) = re.findall(r"(%\d+) = tensor.empty\(\) : tensor<2x64x31x30xf16>", mlir)
    assert re.search(rf"%arg2, %arg0, {empty}\) : .* -> {empty} count", mlir)
    assert pipeline.iree_compile(mlir, "cuda")


def test_transposed_forward_takes_it_on_cuda_only():
    """ConvTranspose2d(64, 64, 4, stride=2, padding=1, groups=4) forward is
    the grad_input of the convolution it transposes: on CUDA the phase
    kernel, elsewhere the linalg phases."""
    conv = torch.nn.ConvTranspose2d(64, 64, 4, stride=2, padding=1, groups=4, bias=False).half()
    x = torch.zeros(2, 64, 8, 8, dtype=torch.float16)
    cuda = lowering.lower(conv, x, target="cuda")
    assert cuda.count("hal.dispatch.extern") == 1 and '"phase_grad_input_c16_f16"' in cuda
    assert pipeline.iree_compile(cuda, "cuda")
    assert "hal.dispatch.extern" not in lowering.lower(conv, x, target="gfx942")


def test_the_interpreted_check_reads_the_dispatch_as_linked():
    """`benchmarks/phase_kernel_interpreted.py` (which runs the Triton source
    on the CPU, where Triton is installed) calls the kernel with the linked
    dispatch's variant, arguments and grid: read here from the module."""
    from benchmarks.phase_kernel_interpreted import dispatch

    configuration = spec_nd(2, 64, 64, (31, 30), (4, 4), (2, 2), (1, 1), groups=4)
    name, arguments, grid = dispatch(functional.lowered(configuration, target="cuda"))
    assert name == "phase_grad_input_c16_f16"
    assert arguments == [4, 16, 16, 31, 30, 15, 15, 4, 4, 2, 2, 1, 1]
    assert grid == (2, 1, 32)  # 240 positions in tiles of 128, one 16-channel tile, 2 x 4 x 4
