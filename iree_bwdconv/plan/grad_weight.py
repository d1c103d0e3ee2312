"""The forms of grad_weight and grad_bias, and the split of their sums.

A weight gradient is a few thousand outputs, each a sum over every image
and output position: on GPU targets unsplit, a few thread blocks ran each
whole sum, so the sums are split (split-K). Its forms: an im2col gather
and a matmul, one contraction, or the weight rows of a 1x1 kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from iree_bwdconv import geometry
from iree_bwdconv.compiler import iree_faults
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.spec import ConvBackwardSpec
from iree_bwdconv.plan import targets
from iree_bwdconv.plan.tuning import Tuning


@dataclass(frozen=True)
class GradWeightPlan:
    """form: "rows" (a 1x1 kernel's weight rows), "im2col" or "contraction".
    image_split: partial sums over runs of whole images (contraction, rows).
    im2col_split: partial sums over runs of the im2col matmul's rows.
    columns_first: the CPU's gather laid out [(channel, tap), (image, position)].
    taps: the window the im2col gather covers (the kernel, or wider on the CPU).
    gather_unpadded: the gather reads its source unpadded (GPU targets).
    widened: the contraction reads its f16/bf16 operands as f32.
    named_matmul: the im2col matmul is linalg.matmul, not a generic.
    rows_padding: (positions, output channels) of zeros the weight rows append."""

    form: str
    image_split: int = 1
    im2col_split: int = 1
    columns_first: bool = False
    taps: tuple[int, ...] = ()
    gather_unpadded: bool = False
    widened: bool = False
    named_matmul: bool = False
    rows_padding: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class GradBiasPlan:
    """batch_first: sum over the images first; split: runs per image and
    channel for a first step on GPU targets (None: one reduction)."""

    batch_first: bool = False
    split: Optional[int] = None


def rows_columns(spec: ConvBackwardSpec) -> tuple[int, int]:
    """The weight gradient's rows (grad_output channels per group, input
    channels when transposed) and its columns per tap (the other side)."""
    c_in, f_out = spec.in_channels_per_group, spec.out_channels_per_group
    return (c_in, f_out) if spec.transposed else (f_out, c_in)


def windows(spec: ConvBackwardSpec) -> tuple[int, ...]:
    """The positions each weight gradient term sums over, per image."""
    return spec.input_spatial if spec.transposed else spec.output_spatial


def cpu_chunks(length: int, tuning: Tuning) -> int:
    """Partial sums for a CPU reduction of `length` terms (1: not split): the
    fewest equal chunks of at most `tuning.max_chunk` terms, none shorter
    than `tuning.min_chunk`. On the 2-core CPU (f32) the split ran
    ResNet-50's stem gradient 1.8x and its 3x3 c128 layer's 1.13x faster
    than one sum (`benchmarks/cpu_weight_layout.py`)."""
    return geometry.fewest_chunks(length, tuning.max_chunk, tuning.min_chunk)


def bias_batch_first(spec: ConvBackwardSpec, options: LoweringOptions) -> bool:
    """grad_bias sums over the images first where IREE fault
    `gfx942_f16_dynamic_batch_sum` is seen: an f16 sum over each image's
    positions with the batch dynamic, which IREE 3.13's AMDGPU backend
    failed to compile (docs/iree-faults.md)."""
    fault = iree_faults.GFX942_F16_DYNAMIC_BATCH_SUM
    return iree_faults.seen_on(fault, options.target) and spec.dynamic_batch and spec.dtype in fault.dtypes


def bias_split(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> Optional[int]:
    """Runs per image and channel for grad_bias's first step on GPU targets:
    enough rows that it fills the GPU (the one reduction took 79 ms for dy
    of n3 k32 470x725 on the H100); None on the CPU, one reduction."""
    if options.target == "cpu":
        return None
    rows = (spec.batch or 1) * spec.out_channels
    return geometry.reduction_split(math.prod(spec.output_spatial), rows, tuning.bias_target_rows,
                                    tuning.split_min_chunk)


def image_split(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> int:
    """Partial sums for the contraction, each over a run of whole images: 1
    on the CPU (its few threads are busy without it), for a dynamic batch
    and in the plain forms. A strided f16/bf16 one keeps at least
    `tuning.half_strided_min_images` images a partial sum: with one,
    IREE 3.13's CUDA code computed ResNet-50's 3x3 c64 56x56 stride-2
    layer and its stem wrongly on the H100 (125% and 149% of the largest
    value); with two it was right on those and fourteen others."""
    if options.target == "cpu" or spec.batch is None or options.plain_forms:
        return 1
    min_images = -(-tuning.split_min_chunk // max(math.prod(windows(spec)), 1))
    if targets.half_precision_on_gpu(options.target, spec.dtype) and any(s > 1 for s in spec.stride):
        min_images = max(min_images, tuning.half_strided_min_images)
    return geometry.reduction_split(spec.batch, math.prod(spec.weight_shape), tuning.split_target_partials, min_images)


def im2col_split(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> int:
    """Partial sums for the im2col matmul, over runs of its (image,
    position) rows; 1 where `image_split` is."""
    if options.target == "cpu" or spec.batch is None or options.plain_forms:
        return 1
    length = spec.batch * math.prod(windows(spec))
    return geometry.reduction_split(length, math.prod(spec.weight_shape), tuning.split_target_partials,
                                    tuning.split_min_chunk)


def half_contraction_wrong(spec: ConvBackwardSpec, options: LoweringOptions) -> bool:
    """Where IREE 3.13's CUDA code computed the weight-gradient contraction
    wrongly in f16/bf16 on the H100 (largest error 1.2-1.7 times the
    largest value) whatever the split: every kernel with a dim of 1
    checked; im2col + matmul was right on all of them (docs/performance-journal.md,
    "Read first"; `benchmarks/gpu_weight_forms.py`)."""
    return targets.half_precision_on_gpu(options.target, spec.dtype) and any(k == 1 for k in spec.kernel)


def windowless_in_half(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> bool:
    """Whether the weight gradient sums f16/bf16 over a window that slides
    along no dim, with channels a group that IREE's MMA tile keeps in f16."""
    return (targets.half_precision_on_gpu(options.target, spec.dtype)
            and geometry.slides_no_window(spec.kernel, windows(spec))
            and not targets.widens_windowless(options.target, spec.dtype, rows_columns(spec), tuning))


def grouped_contraction_applies(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> bool:
    """Whether a grouped weight gradient takes the contraction split by
    images: for CUDA, kernels wider than 1 in every dim (on the H200 3x3 s2
    g32 c256 200x200 8.42 ms against im2col's 18.7, depthwise c64 56x56
    0.40 against 1.61), and unstrided kernels with a dim of 1 with at most
    `tuning.grouped_one_wide_max_channels` channels a group or whose
    f16/bf16 window slides along no dim (1x1 g64 c256 56x56 0.077 against
    0.361; slower from 30 a group in f32). Transposed layers and gfx942
    keep im2col (IREE did not compile the g32 contraction for gfx942:
    1.3 GB of workgroup memory asked for)."""
    if spec.groups == 1 or options.target != "cuda" or spec.transposed or image_split(spec, options, tuning) < 2:
        return False
    if all(k > 1 for k in spec.kernel):
        return True
    if any(s != 1 for s in spec.stride):
        return False
    return (min(rows_columns(spec)) <= tuning.grouped_one_wide_max_channels
            or windowless_in_half(spec, options, tuning))


def grouped_contraction_widened(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> bool:
    """Whether that contraction reads its smaller f16/bf16 operand as f32
    (`builders.gradients._one_read_as_f32`), which keeps IREE off its MMA
    code: below `tuning.grouped_half_min_channels` channels a group (without widening
    the 8-channel layers did not finish a 45 s benchmark), and for kernels
    with a dim of 1 but a window that slides along no dim whose channels a
    group fit IREE's MMA tile (in f16 1.6x-2.0x faster than widened)."""
    few_channels = min(rows_columns(spec)) < tuning.grouped_half_min_channels
    one_wide_off_tile = any(k == 1 for k in spec.kernel) and not windowless_in_half(spec, options, tuning)
    return (grouped_contraction_applies(spec, options, tuning)
            and targets.half_precision_on_gpu(options.target, spec.dtype)
            and (few_channels or one_wide_off_tile))


def by_im2col(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> tuple[bool, str]:
    """(grad_weight by im2col + matmul rather than one contraction, the rule).
    im2col on the CPU, for grouped convolutions outside
    `grouped_contraction_applies`, in f32 on GPU targets (the contraction
    ran slower on 30 of 32 layers on the H100, 1x1 c1024 k2048 50x50 at
    stride 2: 355 ms against 24), and in f16/bf16 for kernels with a dim of
    1 (`half_contraction_wrong`). Other f16/bf16 weight gradients on GPU
    targets are one contraction split by images (ResNet-50's 3x3 c64: 0.46
    ms against 1.46), unless the images split into too few partial sums
    (3x3 c3 k32 940x1450 n1: 0.49 ms against 21), or the weight has at
    least `tuning.im2col_min_weight_stride_1` elements and the kernel is
    unstrided (3x3 c256 k256 14x14: 0.76 against 0.49), or strided over
    fewer than `tuning.half_contraction_min_positions` positions per image
    (13x13: 0.69 against 0.55)."""
    if options.target == "cpu":
        return True, "cpu_weight_im2col"
    if spec.groups > 1:
        if grouped_contraction_applies(spec, options, tuning):
            return False, "grouped_weight_contraction"
        return True, "grouped_weight_im2col"
    if not targets.half_precision_on_gpu(options.target, spec.dtype):
        return True, "f32_weight_im2col"
    if half_contraction_wrong(spec, options):
        return True, "half_one_wide_weight_im2col"
    weight = math.prod(spec.weight_shape)
    split = image_split(spec, options, tuning)
    if split < 2 or split * weight < tuning.contraction_min_partials:
        return True, "few_partials_weight_im2col"
    if weight < tuning.im2col_min_weight_stride_1:
        return False, "half_weight_contraction"
    if all(s == 1 for s in spec.stride):
        return True, "wide_weight_im2col"
    if math.prod(windows(spec)) < tuning.half_contraction_min_positions:
        return True, "wide_weight_im2col"
    return False, "half_weight_contraction"


def columns_first(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> bool:
    """Whether the CPU's im2col gather is laid out [(channel, tap), (image,
    position)] and multiplied by grad_output channels-last, for layers
    whose reduction is at least `tuning.columns_first_min_depth` times its
    rows: unstrided, or strided where the named matmul's result would have
    fewer than `tuning.min_matmul_tiles` of IREE 3.13's CPU tiles and the
    reduction splits (ResNet-50's stem, 64 x 3*7*7: three tiles for two
    threads). Other strided layers keep rows: columns-first ran 1.5x slower
    on a 5x5 stride-2 layer whose matmul had 13 tiles (docs/performance-journal.md,
    "The columns-first gather as the matmul's first operand, split-K")."""
    if options.target != "cpu" or spec.batch is None:
        return False
    rows, columns = rows_columns(spec)
    columns *= math.prod(spec.kernel)
    depth = spec.batch * math.prod(windows(spec))
    if depth < tuning.columns_first_min_depth * rows:
        return False
    if all(s == 1 for s in spec.stride):
        return True
    tile = tuning.matmul_tile
    tiles = spec.groups * -(-rows // tile) * -(-columns // tile)
    return tiles < tuning.min_matmul_tiles and cpu_chunks(depth, tuning) > 1


def im2col_taps(spec: ConvBackwardSpec, columns_first_: bool, options: LoweringOptions,
                tuning: Tuning) -> tuple[int, ...]:
    """The window the im2col gather covers: the kernel on GPU targets and
    columns-first (the stem's 7x7 window then ran 1.2x-1.3x faster than
    8x8); on the CPU's named matmul the columns (channels x taps) made a
    multiple of `tuning.im2col_columns` where that adds at most
    `tuning.max_tap_growth` the work: IREE 3.13's CPU tiling ran the stem
    gradient (147 columns) 1.3x-1.4x slower than with 192."""
    if options.target != "cpu" or columns_first_:
        return tuple(spec.kernel)
    return geometry.padded_taps(rows_columns(spec)[1], spec.kernel, tuning.im2col_columns, tuning.max_tap_growth)


def rows_padding(spec: ConvBackwardSpec, tuning: Tuning) -> tuple[int, int]:
    """Zero positions appended to each image's to reach
    `tuning.rows_position_multiple`, and zero output channels appended to
    grad_output's copy up to a multiple of `tuning.rows_out_channel_multiple`
    (none where grad_output is read in place: no positions padded)."""
    positions = -math.prod(spec.output_spatial) % tuning.rows_position_multiple
    channels = -spec.out_channels % tuning.rows_out_channel_multiple if positions else 0
    return positions, channels


def _rows_intensity(spec: ConvBackwardSpec) -> float:
    """Multiply-adds per element of the two operands' copies."""
    f, c = spec.out_channels, spec.in_channels
    return f * c / (f + c)


def _one_strided_dim_unpadded(spec: ConvBackwardSpec, tuning: Tuning) -> bool:
    """Positions along one dim only, strided, and not padded: IREE 3.13 did
    not compile the rows' contraction for CUDA or gfx942 ("failed to pack
    reduction dimensions for partial reduction"); im2col compiled."""
    long_dims = [axis for axis, size in enumerate(spec.output_spatial) if size > 1]
    return len(long_dims) == 1 and spec.stride[long_dims[0]] > 1 and rows_padding(spec, tuning)[0] == 0


# Multiply-adds per element copied, f*c / (f + c), below which a layer keeps
# the im2col form. On the H100, f16/bf16 layers whose positions need
# padding ran slower at 43 (c64 k128 14x14 at n8: 0.105 ms against 0.096),
# level at 256 and 341, faster at 299 and up (c448 k896: 1.84 against 2.93);
# unpadded ones level or faster from 43 up. f32: faster at 171 and 299
# (c256 k512 28x28: 0.49 against 2.20), level from 256 up, slower at 51 and
# 85 (c64 k256 56x56: 0.86 against 0.39).
# IREE 3.13's CUDA code for this contraction reads grad_output's channels
# in whole tiles, past the last channel: into the next image's channels,
# and for the last image past the end of grad_output. Where the output
# channels were not a multiple of the tile (160, 224, 279, 288, 333, 2016
# against a tile of 64; 3 to 7 images; 72 to 208 input channels; f16 and
# bf16) the H100 stopped with an illegal address and the call never
# returned; with one image of slack after grad_output, or its channels
# padded to 64, it ran. im2col ran on all of them (docs/performance-journal.md,
# "Random layers on the H100"). The tile is 64 on smaller layers and 128
# on larger ones: 1344 output channels at n8 c1024 40x44, tiled by 128,
# never returned either ("The weight rows' tiles"). So grad_output read in
# place takes a multiple of 128 channels, or exactly 64, which IREE cannot
# tile by more. Where its positions are padded it is copied anyway, and
# the copy gains zero channels up to a multiple of 128 (`rows_padding`)
# where that adds at most `rows_max_channel_padding` of them.
def rows_apply(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> bool:
    """The weight rows: a GPU target, an ungrouped, untransposed 1x1 kernel
    with a static batch whose output channels fit IREE's tile (its CUDA code
    read past grad_output's channels otherwise and the H100 stopped with an
    illegal address), with enough multiply-adds per element copied: on the
    H100 in f16 faster from 299 (c448 k896: 1.84 ms against 2.93) where
    positions are padded, in f32 from 128 (c256 k512 28x28: 0.49 against
    2.20; slower at 51)."""
    if options.target == "cpu" or any(k != 1 for k in spec.kernel):
        return False
    if spec.groups != 1 or spec.transposed or spec.batch is None or _one_strided_dim_unpadded(spec, tuning):
        return False
    positions, channels = rows_padding(spec, tuning)
    in_place = not positions
    if in_place and spec.out_channels % tuning.rows_out_channel_multiple and spec.out_channels != 64:
        return False
    if channels > spec.out_channels * tuning.rows_max_channel_padding:
        return False
    if not targets.half_precision_on_gpu(options.target, spec.dtype):
        return _rows_intensity(spec) >= tuning.rows_f32_min_intensity
    return in_place or _rows_intensity(spec) >= tuning.rows_min_padded_intensity
