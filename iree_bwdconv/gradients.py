"""The contractions of convolution_backward as linalg.generic ops, one
rank-generic builder per gradient. Sizes and paddings come from `geometry`;
the builders only turn them into IR.

The contractions take the shapes of `contraction_forms` (a named
convolution's maps, or a matmul): an explicit group dim only where there
are groups. Loop dims are named as MLIR's opdsl names them: n (batch),
g (group), f (grad_output channel in group), c (input channel in group),
o/i (output/input spatial), k (kernel taps).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from torch_mlir import ir

from . import contraction_forms as forms
from . import cpu_weight, geometry, targets, weight_rows
from . import linalg_builders as lb
from .linalg_builders import PARALLEL, REDUCTION
from .options import LoweringOptions
from .spec import ConvBackwardSpec

ACCUMULATOR = "f32"


def _batch(value: ir.Value) -> lb.Size:
    return lb.sizes_of(value)[0]


def grad_bias(spec: ConvBackwardSpec, grad_output: ir.Value, *, options: LoweringOptions) -> ir.Value:
    """db[f] = sum over n and every spatial position of dy[n, f, ...]; on GPU
    targets in two steps (`bias_split`): rows[n, f, s] = sum_j dy[n, f, (s, j)]
    over runs j of the flattened positions, then db[f] = sum_{n,s} rows[n, f, s]."""
    r = spec.spatial_rank
    acc = lb.element_type(ACCUMULATOR)
    if bias_batch_first(spec, options=options):  # cols[f, o] = sum_n dy[n, f, o], then db[f] = sum_o cols[f, o]
        f, *o, n = lb.dims(2 + r)
        cols = lb.reduction(grad_output, lb.zeros([spec.out_channels, *spec.output_spatial], acc),
                            [lb.affine_map(2 + r, [n, f, *o]), lb.affine_map(2 + r, [f, *o])],
                            [PARALLEL] * (1 + r) + [REDUCTION])
        f, *o = lb.dims(1 + r)
        total = lb.reduction(cols, lb.zeros([spec.out_channels], acc),
                             [lb.affine_map(1 + r, [f, *o]), lb.affine_map(1 + r, [f])], [PARALLEL] + [REDUCTION] * r)
        return lb.convert(total, lb.element_type(spec.dtype))
    split = bias_split(spec, options=options)
    if split is None:
        f, n, *o = lb.dims(2 + r)
        maps = [lb.affine_map(2 + r, [n, f, *o]), lb.affine_map(2 + r, [f])]
        total = lb.reduction(grad_output, lb.zeros([spec.out_channels], acc), maps,
                             [PARALLEL] + [REDUCTION] * (1 + r))
        return lb.convert(total, lb.element_type(spec.dtype))
    positions = math.prod(spec.output_spatial)
    runs = lb.expand_dim(forms.collapse_range(grad_output, 2, 2 + r), 2, (split, positions // split))
    n, f, s, j = lb.dims(4)
    rows = lb.reduction(runs, lb.zeros([_batch(grad_output), spec.out_channels, split], acc),
                        [lb.affine_map(4, [n, f, s, j]), lb.affine_map(4, [n, f, s])], [PARALLEL] * 3 + [REDUCTION])
    f, n, s = lb.dims(3)
    total = lb.reduction(rows, lb.zeros([spec.out_channels], acc),
                         [lb.affine_map(3, [n, f, s]), lb.affine_map(3, [f])], [PARALLEL] + [REDUCTION] * 2)
    return lb.convert(total, lb.element_type(spec.dtype))


# grad_bias on GPU targets: enough rows (image, channel, run) that the first
# step fills the GPU, each a contiguous run of at least SPLIT_MIN_CHUNK
# positions. On the H100 the one reduction took 3 ms for dy of n32 k2048
# 25x25 and 79 ms for n3 k32 470x725 (docs/performance.md).
BIAS_TARGET_ROWS = 1 << 16


def bias_batch_first(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """f16 on gfx942 with a dynamic batch: grad_bias sums over the images
    first. IREE 3.13's AMDGPU backend failed on an f16 sum over each image's
    positions with the batch dynamic where their count is odd, has a factor
    5 or 7 and none 3 (5x5, 7x7, 25x25 dy: "LLVM ERROR: Cannot select: f32 =
    Constant<-1>"); bf16, f32, a static batch and the sum over images compiled."""
    return options.target == "gfx942" and spec.dynamic_batch and spec.dtype == "f16"


def bias_split(spec: ConvBackwardSpec, *, options: LoweringOptions) -> Optional[int]:
    """Runs per image and channel for grad_bias's first step; None on the
    CPU, where one reduction is kept."""
    if options.target == "cpu":
        return None
    rows = (spec.batch or 1) * spec.out_channels
    return geometry.reduction_split(math.prod(spec.output_spatial), rows, BIAS_TARGET_ROWS, SPLIT_MIN_CHUNK)


# Split-K on GPU targets: enough partial sums that the weight gradient's
# contraction fills the GPU (about SPLIT_TARGET_PARTIALS partial outputs),
# each over a run of at least SPLIT_MIN_CHUNK terms. A weight gradient is a
# few thousand outputs, each a sum over every image and output position:
# unsplit, a few thread blocks ran each whole sum (docs/performance.md).
SPLIT_TARGET_PARTIALS = 1 << 22
SPLIT_MIN_CHUNK = 512

# f16/bf16 on GPU targets. On the H100 (benchmarks/split_k.py) the
# contraction split by images beat the split im2col matmul on 12 of 20
# ungrouped shapes (ResNet-50's 3x3 c64: 0.46 ms against 1.46) and lost where
# the images split into too few partial outputs: below
# GPU_CONTRACTION_MIN_PARTIALS (3x3 c3 k32 940x1450, n1-n5, under 5000: 0.49
# ms against 21; 3x3 c16 k32 56x56 at n8, 36864: 0.119 against 0.109), not
# above (73728 to 204800 on five layers: 0.090-0.83 against 0.107-1.66, the
# stem among them; `benchmarks/gpu_weight_forms.py`), and on the wide
# stride-1 kernels (3x3 c256 k256: 0.76 against 0.49 at 14x14, 7.8 against
# 5.5 at 50x50).
GPU_CONTRACTION_MIN_PARTIALS = 1 << 16
GPU_IM2COL_MIN_WEIGHT_STRIDE_1 = 1 << 19
# Strided layers whose weight has at least GPU_IM2COL_MIN_WEIGHT_STRIDE_1
# elements take the im2col matmul too where each image has fewer than this
# many output positions: on the H100 the contraction ran 3x3 c256 k256 at
# 13x13 and 14x14 in 0.69 and 0.81 ms against im2col's 0.55 and 0.58, level
# at 25x25 (1.87 against 1.88), and 5x5 c128 k256 at 19x87 in 1.69 against
# 2.61 (docs/performance.md, "Weight gradients on GPUs by dtype").
GPU_HALF_CONTRACTION_MIN_POSITIONS = 1024


def grad_weight_by_im2col(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """The form of grad_weight for the current target: im2col + matmul on the
    CPU, for grouped convolutions outside `grouped_contraction_applies`, in
    f32 on GPU targets, and in f16/bf16 for kernels with a dim of 1
    (`half_precision_contraction_wrong`; ungrouped 1x1 kernels take
    `weight_rows` instead where it applies).
    Other f16/bf16 weight gradients on GPU targets are one contraction split
    by images, unless the images split into too few partial sums, or the
    weight has at least GPU_IM2COL_MIN_WEIGHT_STRIDE_1 elements and the
    kernel is unstrided, or strided over fewer than
    GPU_HALF_CONTRACTION_MIN_POSITIONS positions per image: those take the
    split im2col matmul."""
    if options.target == "cpu":
        return True
    if spec.groups > 1:
        return not grouped_contraction_applies(spec, options=options)
    if not targets.half_precision_on_gpu(options.target, spec.dtype):
        # f32 on the H100: the contraction ran slower on 30 of 32 layers,
        # 1.5x-16x on 28 (1x1 c1024 k2048 50x50 at stride 2: 355 ms against
        # 24; ResNet-50's 3x3 c64 56x56: 6.1 against 2.0), faster on two
        # small ones (3x3 c16 k32 56x56 stride 2 at n8: 0.09 against 0.44).
        return True
    if half_precision_contraction_wrong(spec, options=options):
        return True
    weight = math.prod(spec.weight_shape)
    split = image_split(spec, options=options)
    if split < 2 or split * weight < GPU_CONTRACTION_MIN_PARTIALS:
        return True
    if weight < GPU_IM2COL_MIN_WEIGHT_STRIDE_1:
        return False
    if all(s == 1 for s in spec.stride):
        return True  # the kernel is wider than 1x1 here: 1x1 ones are `half_precision_contraction_wrong`
    return math.prod(_windows(spec)) < GPU_HALF_CONTRACTION_MIN_POSITIONS


# Grouped weight gradients for CUDA take the contraction split by images,
# its f16/bf16 operands read as f32 below GROUPED_HALF_MIN_CHANNELS
# channels a group. On the H200 (docs/performance.md, "Grouped weight
# gradients by contraction"; ms against im2col's): 3x3 s2 g32 c256 200x200
# n32 (8 channels a group) 9.99 against 15.5 widened from f16, 8.42
# against 18.7 in f32; g8 c128 56x56 n16 (16 a group) 0.237 against 0.635
# in f16; ResNeXt-50's 4 a group (g32 c128 56x56 n32) 0.97 against 2.72 at
# stride 1; depthwise c64 56x56 0.40 against 1.61. In f16 without widening
# the 8-channel layers did not finish a 45 s benchmark (IREE's MMA tiles of
# 16 over 8 channels). Transposed layers were not measured and keep
# im2col, and so does gfx942: IREE 3.13 did not compile the g32 layer's
# contraction for it (1.3 GB of workgroup memory asked for).
GROUPED_HALF_MIN_CHANNELS = 16
# Kernels with a dim of 1 take it, read as f32 but for 1x1 kernels whose
# channels fit IREE's MMA tile (`grouped_contraction_widened`; every 1-wide
# f16 contraction was wrong ungrouped, in the loop order since fixed for
# 1x1 kernels), unstrided and with at most this many
# channels a group. On the H200 (docs/performance.md, "Grouped kernels
# with a dim of 1"; ms against im2col's): 1x1 g64 c256 56x56 n32 (4 a
# group) 0.077 against 0.361, g32 (8) 0.105 against 0.303, g16 (16) 0.153
# against 0.332, 3x1 g32 c256 28x28 0.122 against 0.912; slower from 30 a
# group (1x1 g8 c240 28x28 0.255 against 0.189, g4 c256 0.477 against
# 0.315). Strided, the f16 1x1 contraction failed at run time and a 1x3
# one did not compile. Past it, a window that slides along no dim (a 1x1
# kernel) whose contraction keeps f16/bf16 (`grouped_contraction_widened`)
# takes it too: on the H100, 1x1 g8 c256 56x56 n32 (32 a group) 0.130
# against im2col's 0.329 (bf16 0.137 against 0.333), g4 (64) 0.142 against
# 0.340, g2 (128) 0.173 against 0.962 ("Grouped 1x1 kernels in f16 past 16
# channels a group"); in f32 g4 ran 1.06 against 0.63.
GROUPED_ONE_WIDE_MAX_CHANNELS = 16


def grouped_contraction_applies(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """Whether a grouped weight gradient takes the contraction split by
    images (CUDA; see GROUPED_HALF_MIN_CHANNELS and GROUPED_ONE_WIDE_MAX_CHANNELS)."""
    if spec.groups == 1 or options.target != "cuda" or spec.transposed or image_split(spec, options=options) < 2:
        return False
    if all(k > 1 for k in spec.kernel):
        return True
    if any(s != 1 for s in spec.stride):
        return False
    return min(_rows_columns(spec)) <= GROUPED_ONE_WIDE_MAX_CHANNELS or _windowless_in_half(spec, options=options)


def _windowless_in_half(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """Whether the weight gradient sums f16/bf16 over a window that slides
    along no dim, with channels a group that IREE's MMA tile keeps in f16."""
    return (targets.half_precision_on_gpu(options.target, spec.dtype)
            and geometry.slides_no_window(spec.kernel, _windows(spec))
            and not targets.widens_windowless(options.target, spec.dtype, _rows_columns(spec)))


def grouped_contraction_widened(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """Whether that contraction reads its f16/bf16 operands as f32: below
    GROUPED_HALF_MIN_CHANNELS channels a group, and for kernels with a dim
    of 1, but for a window that slides along no dim (a 1x1 kernel) whose
    channels a group are multiples of IREE's MMA tile
    (`targets.widens_windowless`): with its columns' loops before its
    rows' (`grad_weight_contraction`) that one was right in f16 on the
    H100 and 1.6x-2.0x faster than widened, on three layers of 16
    channels a group (docs/performance.md, "Windowless convolutions in f16")."""
    few_channels = min(_rows_columns(spec)) < GROUPED_HALF_MIN_CHANNELS
    one_wide_off_tile = any(k == 1 for k in spec.kernel) and not _windowless_in_half(spec, options=options)
    return (grouped_contraction_applies(spec, options=options)
            and targets.half_precision_on_gpu(options.target, spec.dtype)
            and (few_channels or one_wide_off_tile))


def half_precision_contraction_wrong(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """Where IREE 3.13's CUDA code computed the weight-gradient contraction
    wrongly in f16/bf16 on the H100 (largest error 1.2-1.7 times the
    largest value) whatever the split: every kernel with a dim of 1 checked,
    strided or not (seed 003's 1x1 layers, ResNet-50's 1x1 layers, c64 k128
    28x28 at n8; with 1 to 16 images per partial sum). Strided kernels wider
    than 1 were wrong only with one image per partial sum
    (`HALF_STRIDED_MIN_IMAGES`); unstrided ones right on every layer checked.
    A kernel with one dim of 1 (1x3) is counted in unchecked. im2col +
    matmul was right on all of them (docs/performance.md, "Read first";
    `benchmarks/gpu_weight_forms.py`)."""
    return targets.half_precision_on_gpu(options.target, spec.dtype) and any(k == 1 for k in spec.kernel)


# On the CPU the im2col matmul's columns (channels x taps) are made a
# multiple of CPU_IM2COL_COLUMNS by computing taps past the kernel and
# dropping them, where that adds at most a third more work: IREE 3.13's CPU
# tiling takes tile sizes that divide a dim, and ran ResNet-50's stem
# gradient (3 x 7x7 = 147 columns) 1.3x-1.4x slower than with 3 x 8x8 =
# 192, a 1-channel 7x7 kernel 1.8x slower than with 8x8 (docs/performance.md).
CPU_IM2COL_COLUMNS = 16
CPU_MAX_TAP_GROWTH = 4 / 3


def im2col_taps(columns_per_tap: int, kernel: tuple[int, ...], columns_first: bool,
                *, options: LoweringOptions) -> tuple[int, ...]:
    """The kernel window the im2col gather of grad_weight covers: the
    kernel itself on GPU targets and where the gather is laid out
    columns-first (its columns are then the matmul's rows, and the stem's
    7x7 window ran 1.2x-1.3x faster than 8x8), `geometry.padded_taps` for the
    CPU's named matmul."""
    if options.target != "cpu" or columns_first:
        return kernel
    return geometry.padded_taps(columns_per_tap, kernel, CPU_IM2COL_COLUMNS, CPU_MAX_TAP_GROWTH)


# On the CPU, a grad_weight whose reduction (images x positions) is at
# least this many times its rows takes the im2col gather columns-first
# (`im2col_columns_first`): unstrided, or strided where the named matmul's
# result would have fewer than CPU_MIN_MATMUL_TILES of IREE 3.13's 64x64
# CPU tiles (CPU_MATMUL_TILE) to share among the threads and the
# columns-first matmul splits its reduction (`cpu_weight.chunks`).
CPU_COLUMNS_FIRST_MIN_DEPTH = 8
CPU_MATMUL_TILE = 64
CPU_MIN_MATMUL_TILES = 4


def im2col_columns_first(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """Whether grad_weight's im2col gather is laid out [(channel, tap),
    (image, position)] and multiplied by grad_output channels-last
    (`cpu_weight`), not [(image, position), (channel, tap)] into the named
    matmul: on the CPU, for layers with a deep reduction, unstrided (where
    the gather copies runs of the input's rows) or with a narrow result
    (ResNet-50's stem, 64 x 3*7*7: three tiles of the named matmul for two
    threads). Other strided layers keep rows: columns-first ran 1.5x slower
    on a 5x5 stride-2 layer whose matmul had 13 tiles, for no cause found
    (neither its stride-2 read nor its odd split-K runs); a 3x3 stride-2
    layer that ran a tenth faster columns-first stays with it, since no
    measured rule yet tells the two apart (docs/performance.md, "The
    columns-first gather as the matmul's first operand, split-K" and "This
    CPU again, timed by single calls")."""
    if options.target != "cpu" or spec.batch is None:
        return False
    rows, columns = _rows_columns(spec)
    columns *= math.prod(spec.kernel)
    depth = spec.batch * math.prod(_windows(spec))
    if depth < CPU_COLUMNS_FIRST_MIN_DEPTH * rows:
        return False
    if all(s == 1 for s in spec.stride):
        return True
    tiles = spec.groups * -(-rows // CPU_MATMUL_TILE) * -(-columns // CPU_MATMUL_TILE)
    return tiles < CPU_MIN_MATMUL_TILES and cpu_weight.chunks(depth) > 1


def _rows_columns(spec: ConvBackwardSpec) -> tuple[int, int]:
    """The weight gradient's rows (grad_output channels per group, input
    channels when transposed) and its columns per tap (the other side)."""
    c_in, f_out = spec.in_channels_per_group, spec.out_channels_per_group
    return (c_in, f_out) if spec.transposed else (f_out, c_in)


def _windows(spec: ConvBackwardSpec) -> tuple[int, ...]:
    """The positions each weight gradient term sums over, per image."""
    return spec.input_spatial if spec.transposed else spec.output_spatial


# Images each partial sum of a strided f16/bf16 weight-gradient contraction
# covers, at least: with one image each, IREE 3.13's CUDA code computed
# ResNet-50's 3x3 c64 56x56 stride-2 layer and its stem wrongly on the H100
# (125% and 149% of the largest value); with two or more it was right on
# both and on the fourteen other strided layers checked, seven of which no
# rule was drawn from (docs/performance.md, "Weight gradients on GPUs by
# dtype").
HALF_STRIDED_MIN_IMAGES = 2


def image_split(spec: ConvBackwardSpec, *, options: LoweringOptions) -> int:
    """Partial sums for the contraction, each over a run of whole images
    (the leading dim of both operands, so that splitting is a reshape): 1 on
    the CPU (its few threads are busy without it), for a dynamic batch and
    in the plain forms."""
    if options.target == "cpu" or spec.batch is None or options.plain_forms:
        return 1
    min_images = -(-SPLIT_MIN_CHUNK // max(math.prod(_windows(spec)), 1))
    if targets.half_precision_on_gpu(options.target, spec.dtype) and any(s > 1 for s in spec.stride):
        min_images = max(min_images, HALF_STRIDED_MIN_IMAGES)
    return geometry.reduction_split(spec.batch, math.prod(spec.weight_shape), SPLIT_TARGET_PARTIALS, min_images)


def im2col_split(spec: ConvBackwardSpec, *, options: LoweringOptions) -> int:
    """Partial sums for the im2col matmul, over runs of its (image,
    position) rows; 1 where `image_split` is."""
    if options.target == "cpu" or spec.batch is None or options.plain_forms:
        return 1
    length = spec.batch * math.prod(_windows(spec))
    return geometry.reduction_split(length, math.prod(spec.weight_shape), SPLIT_TARGET_PARTIALS, SPLIT_MIN_CHUNK)


def grad_weight(spec: ConvBackwardSpec, grad_output: ir.Value, input_: ir.Value,
                *, options: LoweringOptions) -> ir.Value:
    """Weight gradient; reads the padded source at `o*s + k*d`, so no zero is
    ever multiplied but those of the padding itself.

    transposed=False: dw[g,f,(c,k)] = sum_{(n,o)} dy[n,g,f,o] * xp[n,g,c,o*s+k*d]
    transposed=True:  dw[g,c,(f,k)] = sum_{(n,i)} x[n,g,c,i] * dyp[n,g,f,i*s+k*d]

    as an im2col gather and one matmul per group, or as one contraction
    (`grad_weight_by_im2col`); on GPU targets either is split-K
    (`im2col_split`, `image_split`), and f16/bf16 1x1 kernels take
    `weight_rows` where it applies. On the CPU the gather may cover a
    window larger than the kernel (`im2col_taps`), whose extra columns are
    dropped from the result.
    """
    r, groups = spec.spatial_rank, spec.groups
    c_in, f_out = spec.in_channels_per_group, spec.out_channels_per_group
    if spec.transposed:
        source, windows, padded_input = spec.output_spatial, spec.input_spatial, False
    else:
        source, windows, padded_input = spec.input_spatial, spec.output_spatial, True
    window = (source, windows, spec.kernel, spec.stride, spec.padding, spec.dilation)
    if any(map(geometry.reads_only_padding, *window)):
        return lb.zeros(list(spec.weight_shape), lb.element_type(spec.dtype))
    if weight_rows.applies(spec, options=options):
        acc = weight_rows.grad_weight(spec, grad_output, input_, image_split(spec, options=options))
        return lb.convert(acc, lb.element_type(spec.dtype))
    rows, columns = _rows_columns(spec)
    by_im2col = grad_weight_by_im2col(spec, options=options)
    columns_first = by_im2col and im2col_columns_first(spec, options=options)
    taps = im2col_taps(columns, spec.kernel, columns_first, options=options) if by_im2col else tuple(spec.kernel)
    unpadded = by_im2col and gather_reads_unpadded(spec, options=options)
    if not unpadded:  # the windowed operand padded (or cropped) to span exactly the reads
        low, high = geometry.window_padding_nd(source, windows, taps, spec.stride, spec.padding, spec.dilation)
        low, high = [0, 0, *low], [0, 0, *high]
        if padded_input:
            input_ = lb.pad_or_crop(input_, low, high)
        else:
            grad_output = lb.pad_or_crop(grad_output, low, high)
    x = lb.expand_dim(input_, 1, (groups, c_in))
    dy = lb.expand_dim(grad_output, 1, (groups, f_out))
    plain, windowed = (x, dy) if spec.transposed else (dy, x)
    if not by_im2col:
        if grouped_contraction_widened(spec, options=options):
            plain, windowed = (lb.convert(v, lb.element_type(ACCUMULATOR)) for v in (plain, windowed))
        return grad_weight_contraction(spec, plain, windowed, rows, columns, options=options)

    out_sizes = [*([groups] if groups > 1 else []), rows, columns * math.prod(taps)]
    padding = spec.padding if unpadded else None
    if columns_first and all(map(geometry.window_reads_source, *window)):  # no gather to make
        acc = cpu_weight.per_image_matmul(plain, windowed, out_sizes)
    elif columns_first:
        cols = forms.im2col(windowed, windows, taps, spec.stride, spec.dilation, columns_first=True, padding=padding)
        cols = forms.collapse_range(forms.collapse_range(cols, 2 + r, 3 + 2 * r), 1, 2 + r)  # [g, col*k, n*o]
        acc = cpu_weight.columns_first_matmul(plain, cols if groups > 1 else lb.collapse_dims(cols, 0), out_sizes)
    else:
        acc = _rows_matmul(spec, plain, windowed, windows, taps, padding, out_sizes, options=options)
    return _weight_from_matmul(spec, acc, out_sizes, columns, taps)


def _rows_matmul(
    spec: ConvBackwardSpec, plain: ir.Value, windowed: ir.Value, windows: Sequence[int], taps: tuple[int, ...],
    padding: Optional[Sequence[int]], out_sizes: list[int], *, options: LoweringOptions
) -> ir.Value:
    """The im2col gather laid out a row per (image, position), [(g,) n*o,
    col*k], times grad_output as [(g,) row, n*o]: the named matmul on the
    CPU, a generic on GPU targets, split-K where `im2col_split` says."""
    r = spec.spatial_rank
    lhs = forms.collapse_range(forms.transpose(plain, [1, 2, 0, *range(3, 3 + r)]), 2, 3 + r)  # [g, row, n*o]
    cols = forms.im2col(windowed, windows, taps, spec.stride, spec.dilation, padding=padding)
    cols = forms.collapse_range(forms.collapse_range(cols, 1, 2 + r), 2, 3 + r)  # [g, n*o, col*k]
    if spec.groups == 1:  # a plain matmul, not a batch of one
        lhs, cols = lb.collapse_dims(lhs, 0), lb.collapse_dims(cols, 0)
    split = im2col_split(spec, options=options)
    if split > 1:
        return forms.split_matmul(lhs, cols, out_sizes, split, GPU_SPLIT_CHUNK_MULTIPLE)
    named = options.target == "cpu"  # see forms.matmul
    return forms.matmul(lhs, cols, lb.zeros(out_sizes, lb.element_type(ACCUMULATOR)), named)


def _weight_from_matmul(
    spec: ConvBackwardSpec, acc: ir.Value, out_sizes: list[int], columns: int, taps: tuple[int, ...]
) -> ir.Value:
    """The weight gradient from the im2col matmul's [(g,) row, col*k]
    result: the taps unflattened, those past the kernel dropped."""
    acc = forms.expand_trailing(acc, [columns, *taps])
    acc = lb.extract(acc, [0] * (len(out_sizes) + len(taps)), [*out_sizes[:-1], columns, *spec.kernel])
    if spec.groups > 1:
        acc = lb.collapse_dims(acc, 0)
    return lb.convert(acc, lb.element_type(spec.dtype))


def gather_reads_unpadded(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """Whether the im2col gather reads its source unpadded, zero where a
    read is padding (`contraction_forms._padded_gather`), instead of a
    padded copy: on GPU targets, where IREE 3.13 makes that copy a
    slow_memcpy (docs/performance.md, "The im2col gather without a pad")."""
    return options.target != "cpu"


# The split im2col matmul's runs of k are padded with zeros to a multiple
# of this: with runs of 676 (c64 n8 25x25, split 2) IREE 3.13's CUDA code
# left NaN in 704 of the 36864 f16 results when col2im's grad_input was in
# the same module (right alone, and right padded or unsplit).
GPU_SPLIT_CHUNK_MULTIPLE = 64


def grad_weight_contraction(
    spec: ConvBackwardSpec, plain: ir.Value, windowed: ir.Value, rows: int, columns: int, *, options: LoweringOptions
) -> ir.Value:
    """dw[g,row,col,k] = sum_{n,o} windowed[n,g,col,o*s+k*d] * plain[n,g,row,o], one
    generic, split by images on GPU targets (`image_split`). The windowed
    operand must come first: with the operands swapped, IREE's GPU code
    generation failed to compile some of these ("failed to pack reduction
    dimensions": the demo CNN's stem, 1x1 c512 k1024 100x100) and took 5 s
    on the 1x1 n32 c1024 k2048 50x50 gradients."""
    r = spec.spatial_rank
    out_sizes = [spec.groups, rows, columns, *spec.kernel]
    split = image_split(spec, options=options)
    if split > 1:
        images = ir.RankedTensorType(windowed.type).shape[0] // split
        windowed = lb.expand_dim(windowed, 0, (split, images))
        plain = lb.expand_dim(plain, 0, (split, images))
    lead = 1 if split > 1 else 0
    num = lead + 4 + 2 * r
    d = lb.dims(num)
    s, (g, row, col, *rest) = d[:lead], d[lead:]
    if geometry.slides_no_window(spec.kernel, _windows(spec)):
        # IREE folds it to a contraction with `windowed` first: its columns' loop must come before
        # the rows', or IREE 3.13's MMA code computes it wrongly in f16/bf16 (`mma_order`).
        row, col = col, row
    k, (n, *o) = rest[:r], rest[r:]
    reads = [oi * st + ki * dil for oi, ki, st, dil in zip(o, k, spec.stride, spec.dilation)]
    maps = [lb.affine_map(num, [*s, n, g, col, *reads]), lb.affine_map(num, [*s, n, g, row, *o]),
            lb.affine_map(num, [*s, g, row, col, *k])]
    init = lb.zeros([split] * lead + out_sizes, lb.element_type(ACCUMULATOR))
    acc = lb.contraction(windowed, plain, init, maps, [PARALLEL] * (lead + 3 + r) + [REDUCTION] * (1 + r))
    if split > 1:
        acc = forms.sum_partials(acc, out_sizes)
    return lb.convert(lb.collapse_dims(acc, 0), lb.element_type(spec.dtype))


def zeros_like_input(spec: ConvBackwardSpec, grad_output: ir.Value) -> ir.Value:
    """An all-zero input gradient, for when every grad_output element reads
    only padding: nothing to contract."""
    sizes = [_batch(grad_output), spec.in_channels, *spec.input_spatial]
    return lb.zeros(sizes, lb.element_type(spec.dtype))
