"""Are the GPU's numbers right? Compiles grad_input and grad_weight of a set
of layers for CUDA, each in the form the lowering picks or a forced one
(and a few forward convolutions, which IREE lowers from torch-mlir's named
op), for `check_on_gpu.py` to run on the H100 against torch's float64
results (and, optionally, under compute-sanitizer's memcheck). CI has no
GPU, so this is how the GPU's code is checked. A case whose code
`pipeline` refuses as wrong is checked as given (whether the refusal
was needed) and once more as users get it, through `compile_fallback`
("CASE_as_users_get").

    ./dev python -m benchmarks.gpu_check prepare .bench-check [PART ...]   # here (cases named with a PART)
    python3 benchmarks/check_on_gpu.py .bench-check [memcheck]     # there
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NamedTuple, Optional, Sequence

import torch

from iree_bwdconv import functional, geometry, lowering
from iree_bwdconv import options as lowering_options
from iree_bwdconv.compiler import compile_fallback
from iree_bwdconv.errors import PipelineError
from iree_bwdconv.options import LoweringOptions

from . import modules


class Case(NamedTuple):
    name: str
    n: int
    c: int
    k: int
    hw: int | tuple[int, ...]  # the same in every dim, or one size per dim
    kernel: tuple[int, ...]  # one size per spatial dim: 1-D to 3-D
    stride: int | tuple[int, ...]  # the same in every dim, or one per dim
    padding: int | tuple[int, ...]  # likewise
    groups: int
    form: str  # "auto": the rule's
    dtype: str
    # or "transposed" (transposed=True), "forward", "transposed-forward" (a transposed
    # convolution itself), or "upstream" (IREE's torch input)
    kind: str = "backward"
    dilation: int | tuple[int, ...] = 1  # likewise
    dynamic_batch: bool = False  # compiled with a dynamic batch dim, run at n and at n + 1
    output_padding: int = 0  # transposed-forward cases


def _layer(name: str, n: int, c: int, k: int, hw: int, kernel: int | tuple[int, int], *rest, **keywords) -> tuple:
    """A case's fields before its dtype, and its keywords (kind, dilation)."""
    return (name, n, c, k, hw, (kernel, kernel) if isinstance(kernel, int) else kernel, *rest), keywords


_LAYERS = (
    _layer("1x1_s2_g4", 8, 64, 128, 28, 1, 2, 0, 4, "auto"),
    _layer("1x1_s2_g4_direct", 8, 64, 128, 28, 1, 2, 0, 4, "direct"),
    _layer("1x1_s2", 8, 64, 128, 28, 1, 2, 0, 1, "auto"),
    _layer("1x1_s2_g32", 32, 256, 256, 100, 1, 2, 0, 32, "auto"),
    _layer("1x1_s2_odd", 6, 96, 200, 59, 1, 2, 0, 1, "auto"),  # phases of different lengths
    _layer("1x1_s3_p1_g2", 4, 64, 96, 31, 1, 3, 1, 2, "auto"),
    _layer("1x1_s2_h1", 8, 64, 128, (1, 59), 1, 2, 0, 1, "auto"),  # strided along w only (f16/bf16: the kernel)
    # The 1x1 kernel's own cases (f16/bf16 for CUDA, input channels a multiple of 8; `kernels.catalog`):
    # padding, padding >= stride, stride per dim, stride 1, the narrow and middle tiles, whole 2 x 2 blocks, pairs, dy rows
    # a multiple of 8 (the a8 variants), 1-D, channels that are not a multiple of the tile's; and input channels it
    # reads padded to a multiple of 8.
    _layer("1x1_s3_p1", 4, 128, 96, 31, 1, 3, 1, 1, "auto"),
    _layer("1x1_s2_p2", 4, 128, 64, 15, 1, 2, 2, 1, "auto"),
    _layer("1x1_s21", 8, 128, 128, 29, 1, (2, 1), 0, 1, "auto"),
    _layer("1x1_s1_p1_c128", 4, 128, 96, 31, 1, 1, 1, 1, "auto"),  # stride 1: written whole, no zero fill
    _layer("1x1_s2_c32", 4, 32, 224, 47, 1, 2, 0, 1, "auto"),  # the narrow tile, as the c32 layer of seed 003
    _layer("1x1_s2_p1_c24", 4, 24, 40, 30, 1, 2, 1, 1, "auto"),  # a part of a narrow tile's channels
    _layer("1x1_s2_p1_c72", 4, 72, 40, 30, 1, 2, 1, 1, "auto"),  # the middle tile, a part of its channels
    _layer("1x1_s2_a8", 2, 256, 64, 16, 1, 2, 0, 1, "auto"),  # whole 2 x 2 blocks, 16 bytes a store
    _layer("1x1_s2_blocks_v2", 4, 128, 64, 28, 1, 2, 0, 1, "auto"),  # blocks, 8 bytes a store, 2-byte loads
    _layer("1x1_s2_blocks_v2_a8", 2, 128, 32, (8, 12), 1, 2, 0, 1, "auto"),
    _layer("1x1_s2_blocks_v4_a2", 3, 136, 64, (14, 24), 1, 2, 0, 1, "auto"),  # a part of a channel tile
    _layer("1x1_s2_blocks_c64_v4", 4, 64, 32, 16, 1, 2, 0, 1, "auto"),  # the middle tile's blocks (and 1x1_s2)
    _layer("1x1_s2_blocks_c72_v2_a8", 2, 72, 40, (8, 12), 1, 2, 0, 1, "auto"),
    _layer("1x1_s2_blocks_c80_v4_a2", 3, 80, 48, (14, 24), 1, 2, 0, 1, "auto"),
    _layer("1x1_s2_c200", 3, 200, 72, 23, 1, 2, 0, 1, "auto"),
    _layer("1x1_s2_pairs_c32", 4, 32, 224, (46, 45), 1, 2, 0, 1, "auto"),  # pairs: rows of odd length, 2-byte loads
    _layer("1x1_s2_pairs_c40_k72", 2, 40, 72, (61, 90), 1, 2, 0, 1, "auto"),  # a part of a narrow tile's channels, a
    # reduction that ends inside a block, the last row short
    _layer("1x1_s2_pairs_c16_302x301", 2, 16, 40, (302, 301), 1, 2, 0, 1, "auto"),  # rows of odd length over many tiles
    _layer("1x1_s2_pairs_c32_a2", 2, 32, 48, (44, 29), 1, 2, 0, 1, "auto"),  # the narrow tile's pairs, 4-byte loads
    _layer("1x1_s2_pairs_c32_a8", 4, 32, 64, 16, 1, 2, 0, 1, "auto"),  # the narrow tile's pairs where blocks would fit
    _layer("1x1_s2_pairs_c136", 2, 136, 64, 50, 1, 2, 0, 1, "auto"),  # the wide tile, dy's rows odd, a part of a tile
    _layer("1x1_s2_pairs_c72_h29", 3, 72, 40, (29, 30), 1, 2, 0, 1, "auto"),  # the middle tile, the last row short
    _layer("1x1_s2_pairs_c96_a8", 2, 96, 64, (30, 31), 1, 2, 0, 1, "auto"),  # the middle tile, 16-byte loads
    _layer("k1_s3_p1_1d", 4, 128, 64, 47, (1,), 3, 1, 1, "auto"),
    _layer("1x1_s2_c12", 4, 12, 32, 20, 1, 2, 0, 1, "auto"),  # input channels padded to 16 for the kernel
    _layer("1x1_s2_c60_k120", 4, 60, 120, 28, 1, 2, 0, 1, "auto"),  # padded to 64: blocks
    _layer("1x1_s2_c255_k512", 2, 255, 512, 28, 1, 2, 0, 1, "auto"),  # padded to 256: the wide tile
    _layer("1x1_s2_p1_c36_k72", 3, 36, 72, 29, 1, 2, 1, 1, "auto"),  # padded to 40, zeros between
    _layer("1x1_s1_c100", 2, 100, 200, 14, 1, 1, 0, 1, "auto"),  # stride 1, padded to 104
    _layer("k1_s2_c6_1d", 4, 6, 16, 47, (1,), 2, 0, 1, "auto"),  # 1-D, padded to 8
    _layer("3x3_s2_g32", 4, 256, 256, 50, 3, 2, 1, 32, "auto"),
    _layer("3x3_s2_g32_per_phase", 4, 256, 256, 50, 3, 2, 1, 32, "per-phase"),
    _layer("3x3_s2_g4_odd_per_phase", 6, 64, 96, 29, 3, 2, 1, 4, "per-phase"),  # phases of different lengths
    _layer("5x5_s2_g8_per_phase", 8, 64, 64, 28, 5, 2, 2, 8, "per-phase"),
    _layer("dw3x3_s2_per_phase", 8, 64, 64, 56, 3, 2, 1, 64, "per-phase"),
    _layer("dw3x3_s2", 8, 64, 64, 56, 3, 2, 1, 64, "auto"),  # the direct form: depthwise windows up to 36 taps
    _layer("dw6x6_s2_p2", 8, 64, 64, 56, 6, 2, 2, 64, "auto"),
    _layer("dw7x7_s2", 8, 64, 64, 56, 7, 2, 3, 64, "auto"),  # per-phase: 49 taps
    # grouped weight gradients by contraction: in f16/bf16 as they are from
    # 16 channels a group (stride 1; 32 at an odd size), read as f32 below
    _layer("3x3_s1_g4", 8, 64, 64, 28, 3, 1, 1, 4, "auto"),
    _layer("3x3_s2_g2_odd", 6, 64, 96, 29, 3, 2, 1, 2, "auto"),
    # Grouped phases stored in place, those of one tap as GEMMs (IREE fault cuda_grouped_phase_store)
    _layer("2x2_s2_g2_c32", 2, 32, 32, 8, 2, 2, 0, 2, "auto"),
    _layer("3x3_s2_g4_c128", 8, 128, 128, 28, 3, 2, 1, 4, "auto"),
    _layer("4x4_s2_g4_c64", 8, 64, 64, 28, 4, 2, 1, 4, "auto"),
    _layer("3x3x3_s2_g2_c32", 2, 32, 32, 9, (3, 3, 3), 2, 1, 2, "auto"),
    _layer("3x3_s1_g32_c128", 8, 128, 128, 28, 3, 1, 1, 32, "auto"),
    _layer("dw3x3_s1", 8, 64, 64, 28, 3, 1, 1, 64, "auto"),
    # dilated: gcd(s, d) = 2 leaves one live phase of nine taps and three
    # empty ones; at s2 d3 a phase has two taps d apart, another one tap
    _layer("3x3_s2_d2", 8, 64, 64, 28, 3, 2, 2, 1, "auto", dilation=2),
    _layer("3x3_s2_d2_g4", 8, 64, 64, 28, 3, 2, 2, 4, "auto", dilation=2),
    _layer("3x3_s2_d2_g32", 4, 256, 256, 50, 3, 2, 2, 32, "auto", dilation=2),
    _layer("dw3x3_s2_d2", 8, 64, 64, 56, 3, 2, 2, 64, "auto", dilation=2),
    _layer("3x3_s2_d3_g4", 8, 64, 64, 29, 3, 2, 3, 4, "auto", dilation=3),
    # 1-D and 3-D: every form, split and widening rule above is rank-generic
    _layer("k3_s2_1d", 8, 64, 64, 201, (3,), 2, 1, 1, "auto"),
    _layer("k5_s2_g4_1d", 8, 64, 64, 200, (5,), 2, 2, 4, "auto"),
    _layer("k1_s2_1d", 8, 64, 128, 200, (1,), 2, 0, 1, "auto"),
    _layer("k1_s2_l128_1d", 8, 256, 256, 128, (1,), 2, 0, 1, "auto"),  # 64 positions: im2col, not rows
    _layer("k3_s2_d2_1d", 8, 64, 64, 200, (3,), 2, 2, 1, "auto", dilation=2),  # one strided dim: woven
    _layer("k3_s2_d2_g4_1d", 8, 64, 64, 200, (3,), 2, 2, 4, "auto", dilation=2),
    _layer("k3_s2_c48_1d", 8, 48, 48, 200, (3,), 2, 1, 1, "auto"),
    # a stride-1 dim beside a strided one: phases of three taps (a table per phase)
    _layer("3x3_s1x2", 8, 64, 64, 28, 3, (1, 2), 1, 1, "auto"),
    _layer("3x3_s1x2_g2", 8, 32, 64, 28, 3, (1, 2), 1, 2, "auto"),
    # one image, a 1-tap strided dim and a dilated one: the random sweep's draws whose GPU forms IREE 3.13's CPU
    # code gets wrong or cannot compile (docs/performance-journal.md, "A batchless convolution on the CPU")
    _layer("k1x2_s2x1_d1x2_g3_n1", 1, 6, 9, (2, 6), (1, 2), (2, 1), 0, 3, "auto", dilation=(1, 2)),
    _layer("k1x3_s2x1_p1x2_d2_g3_n1", 1, 9, 6, (2, 2), (1, 3), (2, 1), (1, 2), 3, "auto", dilation=2),
    _layer("k1x2x3_s3x1x1_p2x0x1_d1x2x1_g2_n1", 1, 2, 2, (4, 5, 2), (1, 2, 3), (3, 1, 1), (2, 0, 1), 2, "auto",
           dilation=(1, 2, 1)),
    _layer("3x3x3_s2", 4, 32, 32, 16, (3, 3, 3), 2, 1, 1, "auto"),
    _layer("3x3x3_s1_g4", 4, 64, 64, 12, (3, 3, 3), 1, 1, 4, "auto"),
    _layer("3x3x3_s2_g8", 4, 64, 64, 15, (3, 3, 3), 2, 1, 8, "auto"),
    _layer("1x1x1_s2", 4, 64, 128, 16, (1, 1, 1), 2, 0, 1, "auto"),
    _layer("3x3_s2_c64", 8, 64, 64, 25, 3, 2, 1, 1, "auto"),
    _layer("3x3_s2_c64_per_phase", 8, 64, 64, 25, 3, 2, 1, 1, "per-phase"),
    _layer("3x3_s2_c64_direct", 8, 64, 64, 25, 3, 2, 1, 1, "direct"),
    _layer("3x3_s2_c32", 8, 32, 32, 25, 3, 2, 1, 1, "auto"),
    _layer("3x3_s2_c3", 2, 3, 32, 224, 3, 2, 1, 1, "auto"),
    _layer("3x3_s2_c256", 8, 256, 256, 50, 3, 2, 1, 1, "auto"),
    _layer("3x3_s2_c64_56_n32", 32, 64, 64, 56, 3, 2, 1, 1, "auto"),
    _layer("1x1_s2_c256_56_n32", 32, 256, 512, 56, 1, 2, 0, 1, "auto"),  # ResNet-50's projection
    _layer("7x7_s2_c3_224_n32", 32, 3, 64, 224, 7, 2, 3, 1, "auto"),     # and its stem
    _layer("3x3_s1_c64", 8, 64, 64, 28, 3, 1, 1, 1, "auto"),
    _layer("3x3_s1_c128", 8, 128, 128, 14, 3, 1, 1, 1, "auto"),  # f32: the weight as it is
    _layer("1x1_s1", 8, 64, 128, 28, 1, 1, 0, 1, "auto"),
    _layer("1x1_s1_k279", 5, 208, 279, (40, 44), 1, 1, 0, 1, "auto"),  # output channels not a multiple of 64: im2col,
    # where weight_rows' contraction read past grad_output and never returned
    _layer("1x1_s1_k1344", 8, 1024, 1344, (40, 44), 1, 1, 0, 1, "auto"),  # a multiple of 64 output channels, not of
    # 128, read in place at a size where IREE tiles them by 128
    _layer("1x1_s1_c256_k64_56_n32", 32, 256, 64, 56, 1, 1, 0, 1, "auto"),  # ResNet-50's; its weight gradient
    _layer("1x3_s1_n32", 32, 64, 64, 28, (1, 3), 1, 0, 1, "auto"),          # was wrong by contraction at n32
    _layer("1x1_s1_g4", 8, 64, 128, 28, 1, 1, 0, 4, "auto"),
    _layer("1x1_s1_g4_c128", 8, 128, 128, 28, 1, 1, 0, 4, "auto"),  # past 16 channels a group: the weight gradient's
    _layer("1x1_s1_g2_c256_k128", 8, 256, 128, 14, 1, 1, 0, 2, "auto"),  # contraction, in f16/bf16
    _layer("1x3_s1", 8, 64, 64, 28, (1, 3), 1, 0, 1, "auto"),
    _layer("1x3_s1_g4", 8, 64, 64, 28, (1, 3), 1, 0, 4, "auto"),
    _layer("3x1_s2", 8, 64, 64, 28, (3, 1), 2, 0, 1, "auto"),
    # no padding (Inception's 3x3 s2): the one-tap phase's last row reads past dy (IREE fault cuda_padded_gemm_store)
    _layer("3x3_s2_p0_c64", 8, 64, 64, 28, 3, 2, 0, 1, "auto"),
    _layer("3x3_s2_p0_g4_c128", 8, 128, 128, 28, 3, 2, 0, 4, "auto"),
    _layer("3x3_s3_c64_per_phase", 8, 64, 64, 31, 3, 3, 1, 1, "per-phase"),  # nine 1-tap phases, odd size
    _layer("2x2_s2_c96", 8, 96, 192, 28, 2, 2, 0, 1, "auto"),
    _layer("5x5_s2_c64", 8, 64, 64, 28, 5, 2, 2, 1, "auto"),  # per-phase by the rule
    _layer("7x7_s2_c16", 8, 16, 64, 56, 7, 2, 3, 1, "auto"),
    _layer("3x3_s2_c24_k40", 4, 24, 40, 29, 3, 2, 1, 1, "auto"),  # the phase kernel: channels off its tiles
    _layer("2x2_s3_c16_k32", 4, 16, 32, 31, 2, 3, 0, 1, "auto"),  # the phase kernel: phases without taps
    _layer("transposed_1x1_s2", 8, 64, 128, 14, 1, 2, 0, 1, "auto", kind="transposed"),
    _layer("transposed_3x3_s2", 8, 64, 64, 14, 3, 2, 1, 1, "auto", kind="transposed"),
    _layer("transposed_1x1_s2_g4", 8, 64, 128, 14, 1, 2, 0, 4, "auto", kind="transposed"),
    # a window that slides along no dim (one input row, a kernel one wide): a 1x1 kernel to IREE
    _layer("transposed_3x1_s3_h1", 1, 4, 6, (1, 6), (3, 1), 3, (0, 1), 2, "auto", kind="transposed", dilation=(2, 1)),
    _layer("transposed_3x1_s2_h1_c64", 8, 64, 64, (1, 28), (3, 1), 2, 1, 1, "auto", kind="transposed"),
    # Transposed convolutions themselves, strided: the plan's grad_input forms (CUDA: each phase stored in place).
    _layer("tforward_k4_s2_p1", 4, 64, 32, 13, 4, 2, 1, 1, "auto", kind="transposed-forward"),
    _layer("tforward_k3_s2_p1_op1", 4, 64, 48, (9, 14), 3, 2, 1, 1, "auto", kind="transposed-forward",
           output_padding=1),
    _layer("tforward_k4_s2_p1_g4", 4, 64, 64, 11, 4, 2, 1, 4, "auto", kind="transposed-forward"),
    _layer("tforward_k2_s2", 4, 128, 64, 10, 2, 2, 0, 1, "auto", kind="transposed-forward"),
    _layer("tforward_k4_s2_p1_3d", 2, 32, 16, 5, (4, 4, 4), 2, 1, 1, "auto", kind="transposed-forward"),
    _layer("tforward_k5_s3_p2_op2", 4, 32, 32, 9, 5, 3, 2, 1, "auto", kind="transposed-forward", output_padding=2),
    _layer("forward_3x1_h3", 8, 64, 64, (3, 28), (3, 1), 1, 0, 1, "auto", kind="forward"),
    _layer("forward_3x1_h3_g4", 8, 64, 64, (3, 28), (3, 1), 1, 0, 4, "auto", kind="forward"),
    _layer("forward_1x1_s1_g4", 8, 64, 128, 28, 1, 1, 0, 4, "auto", kind="forward"),
    _layer("forward_1x1_s2_g4", 8, 64, 128, 28, 1, 2, 0, 4, "auto", kind="forward"),
    _layer("forward_1x1_dw", 8, 64, 64, 28, 1, 1, 0, 64, "auto", kind="forward"),
    _layer("forward_3x3_s1_g4", 8, 64, 64, 28, 3, 1, 1, 4, "auto", kind="forward"),  # torch-mlir's, a window
    _layer("forward_3x3_s2_g4", 8, 64, 64, 28, 3, 2, 1, 4, "auto", kind="forward"),
    _layer("forward_3x3_dw_s1", 8, 64, 64, 28, 3, 1, 1, 64, "auto", kind="forward"),  # torch-mlir's, a window
    _layer("forward_3x3_dw_s2", 8, 64, 64, 28, 3, 2, 1, 64, "auto", kind="forward"),
    _layer("forward_7x7_dw", 8, 64, 64, 28, 7, 1, 3, 64, "auto", kind="forward"),
    _layer("forward_1x1_s1", 8, 64, 128, 28, 1, 1, 0, 1, "auto", kind="forward"),
    _layer("forward_1x1_s2", 8, 64, 128, 28, 1, 2, 0, 1, "auto", kind="forward"),
    _layer("forward_3x3_s1", 8, 64, 64, 28, 3, 1, 1, 1, "auto", kind="forward"),
    _layer("upstream_1x1_s1", 8, 64, 128, 28, 1, 1, 0, 1, "-", kind="upstream"),
    _layer("upstream_1x1_s2", 8, 64, 128, 28, 1, 2, 0, 1, "-", kind="upstream"),
    _layer("upstream_3x3_s2_c64", 8, 64, 64, 25, 3, 2, 1, 1, "-", kind="upstream"),
)
# bf16, in the forms the rule picks.
_BF16 = ("tforward_k4_s2_p1", "3x1_s2", "3x3_s2_p0_c64", "3x3_s2_p0_g4_c128", "tforward_k4_s2_p1_g4", "2x2_s2_g2_c32", "3x3_s2_g4_c128", "3x3_s2_g2_odd", "tforward_k3_s2_p1_op1", "3x3_s2_c64", "3x3_s3_c64_per_phase", "5x5_s2_c64", "1x1_s2", "1x1_s1", "1x1_s2_odd", "1x1_s2_h1", "1x1_s2_g4", "3x3_s2_c3", "3x3_s2_g32", "3x3_s1_c64", "forward_1x1_s1",
         "3x3_s2_g32_per_phase", "3x3_s2_g4_odd_per_phase", "5x5_s2_g8_per_phase", "dw3x3_s2_per_phase",
         "3x3_s1_g4", "3x3_s1_g32_c128", "3x3_s2_d2_g4", "3x3_s2_d3_g4", "3x3_s2_d2_g32",
         "k3_s2_1d", "k5_s2_g4_1d", "k1_s2_l128_1d", "k3_s2_d2_1d", "k3_s2_d2_g4_1d", "3x3x3_s2", "3x3x3_s1_g4",
         "3x3_s1x2", "1x1_s3_p1", "1x1_s2_p2", "1x1_s21", "1x1_s1_p1_c128", "1x1_s1_c256_k64_56_n32", "1x1_s2_c32", "1x1_s2_p1_c24", "1x1_s2_p1_c72", "1x1_s2_a8", "1x1_s2_blocks_v2", "1x1_s2_blocks_v2_a8", "1x1_s2_blocks_v4_a2",
         "1x1_s2_blocks_c64_v4", "1x1_s2_blocks_c72_v2_a8", "1x1_s2_blocks_c80_v4_a2", "1x1_s2_c200", "k1_s3_p1_1d",
         "1x1_s2_pairs_c32", "1x1_s2_pairs_c40_k72", "1x1_s2_pairs_c16_302x301", "1x1_s2_pairs_c32_a2",
         "1x1_s2_pairs_c32_a8", "1x1_s2_pairs_c136", "1x1_s2_pairs_c72_h29", "1x1_s2_pairs_c96_a8",
         "1x1_s2_c12", "1x1_s2_c60_k120", "1x1_s2_c255_k512", "1x1_s2_p1_c36_k72", "1x1_s1_c100", "k1_s2_c6_1d",
         "dw6x6_s2_p2", "dw7x7_s2", "1x1_s1_k279", "1x1_s1_k1344", "k1x2_s2x1_d1x2_g3_n1", "transposed_3x1_s3_h1",
         "1x1_s1_g4_c128", "1x1_s1_g2_c256_k128")
# Layers also compiled with a dynamic batch dim (the lowering keeps its
# linalg forms there: no hand-written kernel, no extern dispatch), by dtype.
_DYNAMIC = {
    "f16": ("1x1_s2", "1x1_s2_odd", "1x1_s1", "3x3_s2_c64", "3x3_s2_g2_odd", "3x3_s2_g32", "3x3_s1_c64",
            "7x7_s2_c16", "k3_s2_1d", "transposed_3x3_s2", "transposed_1x1_s2"),
    "bf16": ("1x1_s2", "3x3_s2_c64", "3x3_s1_g4", "k3_s2_1d"),
    "f32": ("1x1_s2", "3x3_s2_c64", "3x3_s2_g32"),
}
# Cases whose results IREE 3.13's CUDA code got wrong on the H100 when last
# run, with what is known; `check_on_gpu.py` reports them apart.
KNOWN_WRONG = {
    "upstream_1x1_s1_f16": "IREE's own lowering of torch's convolution_backward: both gradients wrong",
    "upstream_1x1_s2_f16": "IREE's own lowering of torch's convolution_backward: both gradients wrong",
}
CASES = [Case(f"{fields[0]}_{dtype}", *fields[1:], dtype, **keywords)
         for dtype in ("f32", "f16", "bf16") for fields, keywords in _LAYERS
         if dtype != "bf16" or fields[0] in _BF16]
CASES += [Case(f"{fields[0]}_dynbatch_{dtype}", *fields[1:], dtype, **keywords, dynamic_batch=True)
          for dtype, names in _DYNAMIC.items() for fields, keywords in _LAYERS if fields[0] in names]

_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def shapes(case: Case) -> dict[str, list[int]]:
    """dy, x and w: the result of the forward (or transposed) convolution, its input and its weight."""
    rank = len(case.kernel)
    sizes = (case.hw,) * rank if isinstance(case.hw, int) else tuple(case.hw)
    dims = list(zip(sizes, case.kernel, _per_dim(case.stride, rank), _per_dim(case.padding, rank),
                    _per_dim(case.dilation, rank)))
    if case.kind in ("transposed", "transposed-forward"):
        extra = case.output_padding if case.kind == "transposed-forward" else 0
        out = [geometry.transposed_output_size(*dim, extra) for dim in dims]
        w = [case.c, case.k // case.groups, *case.kernel]
    else:
        out = [geometry.conv_output_size(*dim) for dim in dims]
        w = [case.k, case.c // case.groups, *case.kernel]
    return {"dy": [case.n, case.k, *out], "x": [case.n, case.c, *sizes], "w": w}


def _per_dim(value: int | tuple[int, ...], rank: int) -> list[int]:
    return [value] * rank if isinstance(value, int) else list(value)


def arguments(case: Case) -> list:
    """aten.convolution_backward's arguments after dy, x and w (grad_input and grad_weight)."""
    rank = len(case.kernel)
    return [None, _per_dim(case.stride, rank), _per_dim(case.padding, rank), _per_dim(case.dilation, rank),
            case.kind == "transposed",
            [0] * rank, case.groups, [True, True, False]]


class _Forward(torch.nn.Module):
    def __init__(self, case: Case) -> None:
        super().__init__()
        self.case = case

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        case = self.case
        return torch.nn.functional.conv2d(x, w, None, case.stride, case.padding, case.dilation, case.groups)


class _TransposedForward(_Forward):
    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        case = self.case
        transposed = getattr(torch.nn.functional, f"conv_transpose{len(case.kernel)}d")
        return transposed(x, w, None, case.stride, case.padding, case.output_padding, case.groups, case.dilation)


def case_options(case: Case) -> LoweringOptions:
    """The case's CUDA options: the environment's, with its forced form
    (upstream cases, "-", are not lowered by us)."""
    with modules.forced_form("auto" if case.kind == "upstream" else case.form):
        return lowering_options.from_environment("cuda")


def _mlir(case: Case, options: Optional[LoweringOptions] = None) -> str:
    options = options or case_options(case)
    dtype = _DTYPES[case.dtype]
    tensors = {name: torch.zeros(size, dtype=dtype) for name, size in shapes(case).items()}
    if case.kind in ("forward", "transposed-forward"):
        module = (_Forward if case.kind == "forward" else _TransposedForward)(case)
        return lowering.lower(module, tensors["x"], tensors["w"], target=options)
    spec = functional.spec_of(tensors["dy"], tensors["x"], tensors["w"], *arguments(case),
                              dynamic_batch=case.dynamic_batch)
    if case.kind == "upstream":
        return str(lowering.import_module(functional.ConvolutionBackward(spec, None), *tensors.values()))
    return functional.lowered(spec, target=options)


def _described(case: Case, **fields) -> dict:
    return dict(case._asdict(), shapes=shapes(case), arguments=arguments(case),
                known_wrong=KNOWN_WRONG.get(case.name), **fields)


def _as_users_get(folder: Path, case: Case, options: LoweringOptions) -> list[dict]:
    """The refused case compiled as the API compiles it for users (its
    phases woven, or its plain forms), as a case of its own; none where
    that fails to compile too (said)."""
    name = f"{case.name}_as_users_get"
    try:
        vmfb = compile_fallback.compile_lowering(lambda forms: _mlir(case, forms), options)
    except PipelineError as error:
        print(name, "does not compile:", error.diagnostics.strip().splitlines()[0][:200], flush=True)
        return []
    (folder / f"{name}.vmfb").write_bytes(vmfb)
    print(name, flush=True)
    return [_described(case, wrong_code=None) | {"name": name}]


def prepare(folder: Path, only: Sequence[str] = ()) -> None:
    """Every case, or those whose name holds one of `only`."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = [case for case in CASES if not only or any(part in case.name for part in only)]
    described = []
    for case in cases:
        flags = ("--iree-input-type=torch",) if case.kind == "upstream" else ()
        options = case_options(case)
        vmfb, wrong = modules.compiled(_mlir(case, options), "cuda", flags)  # known-wrong code is checked as given
        (folder / f"{case.name}.vmfb").write_bytes(vmfb)
        print(case.name, f"refused as wrong code: {wrong}" if wrong else "", flush=True)
        described.append(_described(case, wrong_code=wrong))
        if wrong and case.kind != "upstream":
            described += _as_users_get(folder, case, options)
    (folder / "cases.json").write_text(json.dumps(described, indent=1))


if __name__ == "__main__":
    prepare(Path(sys.argv[2]), sys.argv[3:])
