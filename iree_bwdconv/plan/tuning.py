"""Every threshold the plan decides by, in one record per target.

IREE 3.13 compiles the same linalg form at very different speeds on the
CPU and on GPUs, so each rule that picks a form by size reads its
threshold here. The values were measured on this project's 2-core CPU and
on an H100 (gfx942 takes the GPU record, unmeasured); docs/forms.md names
the figure behind each. A field that only one kind of target reads is
still present in every record, with the same value, so that a rule never
asks which record it has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class Tuning:
    # grad_input
    # GPU targets: col2im, not per-phase, for ungrouped kernels with at most
    # this many input channels (per-phase 2x-3.5x slower).
    narrow_channels: int = 4
    # GPU per-phase: one tap table for every phase for kernels narrower than
    # this in every dim (and whose table decodes by shifts).
    one_table_kernel: int = 5
    # CUDA per-phase: each phase stored in place (a dispatch of its own) from
    # this many grad_input channels a group. With 8 (c8 k32 112x112) IREE's code for
    # the phases read past an operand (IREE fault cuda_mma_padding_overread),
    # and the workaround does not rewrite contractions in regions of ours:
    # widened there by their weight, the c8 phases computed NaN (H200).
    in_place_min_channels: int = 16
    # CUDA: our phase kernel computes a strided grad_input whose GEMM a
    # group is narrow: at most this many grad_input channels a group, and at
    # least `phase_kernel_min_group_outputs` grad_output channels a group.
    # On the H100, n32 f16: 1.6x-1.8x faster than the phases stored in place
    # with 16-32 channels a group, 2.1x with 8 (g32 c256 200x200), 1.6x-10x
    # on layers of 3-16 channels; 1.4x-2.5x slower with 64 or more (c64 5x5,
    # ResNet-50's 3x3), and depthwise (one channel a group) 2.4x slower.
    phase_kernel_max_group_channels: int = 32
    phase_kernel_min_group_outputs: int = 8
    # GPU targets: a depthwise layer (one channel a group each way) takes the
    # direct form up to this many taps in its window. IREE's depthwise code
    # on the H200 cost the same per output from 9 to 36 taps and 1.4x more at
    # 49; per-phase saves only taps and adds a weave of grad_input.
    depthwise_direct_max_taps: int = 36
    # Channels a group (both counts) from which a convolution whose window
    # slides along no dim keeps f16/bf16 on GPU targets: IREE's MMA tile.
    mma_channel_multiple: int = 16
    # The CPU's direct form is an im2col matmul at stride 1 from this many
    # grad_input channels (0.7x-0.8x the generic's time on c128/c256 3x3).
    direct_im2col_min_channels: int = 128
    # f32 on GPU targets: the direct form reads the weight as it is from
    # this many grad_input channels (c256 14x14: 1.20 ms against 4.28).
    f32_weight_as_is_min_channels: int = 128
    # A grouped transposed f16/bf16 1x1 kernel takes the weight-first GEMM
    # from this many channels a group (15x faster at 128/64; at 8 its code
    # reads past an operand: IREE fault cuda_mma_padding_overread).
    transposed_gemm_min_group_channels: int = 64
    # gfx942: layers with fewer input and at least as many output channels a
    # group widen per-phase whole (IREE fault gfx942_phase_shared_memory).
    gfx942_narrow_group_inputs: int = 16
    gfx942_wide_group_outputs: int = 32

    # grad_bias and split-K on GPU targets
    bias_target_rows: int = 1 << 16
    split_target_partials: int = 1 << 22
    split_min_chunk: int = 512
    # The split im2col matmul's runs are padded to a multiple of this (NaN
    # in 704 of 36864 f16 results with runs of 676).
    split_chunk_multiple: int = 64
    contraction_min_partials: int = 1 << 16
    im2col_min_weight_stride_1: int = 1 << 19
    half_contraction_min_positions: int = 1024
    half_strided_min_images: int = 2
    grouped_half_min_channels: int = 16
    grouped_one_wide_max_channels: int = 16

    # the weight rows (an ungrouped 1x1 kernel's grad_weight on GPU targets)
    rows_position_multiple: int = 16
    rows_min_padded_intensity: float = 256
    rows_f32_min_intensity: float = 128
    rows_out_channel_multiple: int = 128
    rows_max_channel_padding: float = 1 / 8

    # the CPU
    im2col_columns: int = 16
    max_tap_growth: float = 4 / 3
    columns_first_min_depth: int = 8
    matmul_tile: int = 64
    min_matmul_tiles: int = 4
    max_chunk: int = 1024
    min_chunk: int = 256
    forward_im2col_min_channels: int = 128
    split_min_channels_per_group: int = 2


CPU = Tuning()
GPU = Tuning()
TUNING: Mapping[str, Tuning] = {"cpu": CPU, "cuda": GPU, "gfx942": GPU}


def for_target(target: str) -> Tuning:
    return TUNING[target]
