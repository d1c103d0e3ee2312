"""The grad_input form of a convolution_backward, and every choice inside it.

`form` picks the form (the phases' rule, docs/forms.md); `details` the
choices each form's builder makes on the way. Each rule's docstring holds
the figures it was drawn from; `rules.RULES` gives each a line for
`iree-bwdconv explain`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Optional

from iree_bwdconv import geometry
from iree_bwdconv.compiler import iree_faults
from iree_bwdconv.kernels import catalog, phase_catalog
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.spec import ConvBackwardSpec
from iree_bwdconv.plan import targets
from iree_bwdconv.plan.tuning import Tuning

Phases = tuple[geometry.Phase, ...]
STRIDED_FORMS = ("per-phase", "col2im", "sub-pixel")


@dataclass(frozen=True)
class GradInputPlan:
    """form: "kernel", "phase-kernel", "per-phase", "col2im", "sub-pixel", "direct" or
    "transposed" (a transposed convolution's, a strided forward one).
    in_f32: its f16/bf16 operands widened to f32 before the form runs.
    The rest are the choices of one form's builder (False elsewhere)."""

    form: str
    in_f32: bool = False
    # direct
    im2col_matmul: bool = False
    weight_as_is: bool = False
    widened_windowless: bool = False
    # per-phase
    one_matmul: bool = False
    weight_first: bool = False
    one_tap_gemm: bool = False
    woven_axes: tuple[int, ...] = ()
    one_table: bool = False
    widened_phases: frozenset[tuple[int, ...]] = frozenset()
    gather_weave: bool = False
    stored_in_place: bool = False
    # col2im
    images_first: bool = False
    # transposed: "im2col-matmul", "weight-first-gemm", "windowless-conv" or "conv"
    transposed_form: str = ""


def live_phases(spec: ConvBackwardSpec) -> tuple[list[Phases], list[int]]:
    """The phase combinations that read dy (the others' positions are
    zeros), and the rows of the position grid per dim."""
    per_dim = [geometry.grad_input_phases(*dim) for dim in spec.per_dim()]
    rows = [geometry.position_grid_length(i, s) for i, s in zip(spec.input_spatial, spec.stride)]
    live = [phases for phases in itertools.product(*per_dim)
            if all(ph.reads_dy(o) for ph, o in zip(phases, spec.output_spatial))]
    return live, rows


def position_residues(phases: Phases) -> tuple[int, ...]:
    """The phase combination's column of the position grid, per dim."""
    return tuple(ph.position_residue for ph in phases)


def _extern_kernel_why_not(spec: ConvBackwardSpec, options: LoweringOptions) -> Optional[str]:
    """Why neither of our CUDA kernels can compute this grad_input, or None:
    what both need (a CUDA target that links them, no forced form, the
    grad_input of a strided convolution asked for, f16/bf16, 1-D or 2-D,
    static shapes)."""
    if options.target != "cuda":
        return f"the kernel is CUDA PTX; the target is {options.target}"
    if not options.extern_kernels:
        return "extern_kernels=False: no form may call our kernel"
    if options.grad_input_form != "auto":
        return f"grad_input_form={options.grad_input_form!r} forces a linalg form"
    if spec.transposed:
        return "transposed=True: grad_input is a strided convolution without zeros"
    if not spec.output_mask[0]:
        return "grad_input is not asked for"
    if spec.dtype not in catalog.DTYPES:
        return f"dtype {spec.dtype}: the kernel is f16/bf16 (f32 would need it without TF32)"
    if spec.spatial_rank > 2:
        return f"{spec.spatial_rank}-D: the kernel takes 1-D and 2-D layers"
    if spec.dynamic_batch:
        return "dynamic batch: the kernel's dispatch is built for static shapes"
    return None


def kernel_why_not(spec: ConvBackwardSpec, options: LoweringOptions) -> Optional[str]:
    """None where our CUDA kernel computes this grad_input, else why not.
    IREE 3.13 tiles the GEMM of a strided 1x1 kernel's grad_input by (oh,
    ow) and stores it with a stride; no linalg form of it came nearer than
    1.8x-2.4x of IREE's own matmul on the H100, and at stride 1 its linalg
    GEMM ran 1.2x-1.5x slower than the kernel (docs/performance-journal.md, "The
    strided 1x1 GEMM", "The kernel at stride 1"). Input channels that are
    not a multiple of 8 are padded for it (`catalog.padded_channels`): IREE's
    own f16 GEMM read past them and was widened to f32, 3.7x-14x slower than
    upstream's (1x1 s2 n32 c252 k504 56x56 on the H200: 5.6 ms against 0.68)."""
    common = _extern_kernel_why_not(spec, options)
    if common:
        return common
    if any(k != 1 for k in spec.kernel) or spec.groups != 1:
        return f"kernel {spec.kernel}, groups {spec.groups}: the kernel is an ungrouped 1x1 one's"
    if spec.batch > catalog.MAX_IMAGES:
        return f"batch {spec.batch}: the kernel runs an image per workgroup row, at most {catalog.MAX_IMAGES}"
    channels = catalog.padded_channels(spec.in_channels)
    per_image = max(channels * math.prod(spec.input_spatial), spec.out_channels * math.prod(spec.output_spatial))
    if per_image > catalog.MAX_IMAGE_ELEMENTS:
        return f"{per_image} elements an image: the kernel's offsets are 32-bit"
    return None


def phase_kernel_why_not(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> Optional[str]:
    """None where our CUDA phase kernel computes this strided grad_input
    (`kernels.phase_catalog`), else why not. IREE 3.13 runs one dispatch
    a phase, pads each phase's window inside it and stores its rows with
    the stride; the kernel runs every phase of every image and group in one
    launch, its window's edges masked. It takes narrow GEMMs a group
    (`tuning.phase_kernel_max_group_channels`): on the H100 (f16, n32,
    grad_input alone) 1.6x-1.8x faster than the phases stored in place on
    four grouped layers of 16 and 32 channels a group, 2.1x with 8 (g32 c256
    200x200: 1.86 ms against 3.89), 1.2x on the GAN's k4 s2 transposed
    layer (c32), 1.6x-10x on layers of 3-16 grad_input channels
    (ResNet-50's stem 0.80 ms against 6.3 in place); from 64 channels it
    ran 1.4x-2.5x slower (the U-Net's k2 s2 transposed layer 0.132 ms
    against 0.079, ResNet-50's 3x3 s2 layers), and 2.4x slower depthwise
    (docs/performance.md, "The phase kernel")."""
    common = _extern_kernel_why_not(spec, options)
    if common:
        return common
    if all(s == 1 for s in spec.stride):
        return "stride 1: one phase, no zeros to skip"
    if all(k == 1 for k in spec.kernel):
        return f"kernel {spec.kernel}: a 1x1 kernel's phase is one GEMM"
    if any(d != 1 for d in spec.dilation):
        return f"dilation {spec.dilation}: the kernel's taps of a phase are a stride apart"
    arguments = phase_catalog.arguments(spec.groups, spec.in_channels, spec.out_channels, spec.input_spatial,
                                        spec.output_spatial, spec.kernel, spec.stride, spec.padding)
    if phase_catalog.grid_z(spec.batch, arguments) > phase_catalog.MAX_GRID_Z:
        return (f"batch {spec.batch} x groups {spec.groups} x phases: over the {phase_catalog.MAX_GRID_Z} "
                "workgroup rows the kernel runs them in")
    if phase_catalog.image_elements(arguments) > phase_catalog.MAX_IMAGE_ELEMENTS:
        return f"{phase_catalog.image_elements(arguments)} elements an image: the kernel's offsets are 32-bit"
    if spec.in_channels_per_group > tuning.phase_kernel_max_group_channels:
        return (f"{spec.in_channels_per_group} grad_input channels a group: over "
                f"{tuning.phase_kernel_max_group_channels}, IREE's phases in place are faster")
    if spec.out_channels_per_group < tuning.phase_kernel_min_group_outputs:
        return (f"{spec.out_channels_per_group} grad_output channels a group: under "
                f"{tuning.phase_kernel_min_group_outputs}, most of the kernel's k steps of 16 would be padding")
    return None


def avoids_zeros(spec: ConvBackwardSpec, options: LoweringOptions) -> bool:
    """Whether a strided form applies: a stride above 1 in some dim (zeros
    a scatter would insert), or an f16/bf16 1x1 kernel on a GPU target at
    any stride (`targets.one_tap_half_on_gpu`: the direct form's 1x1
    convolution was wrong in f16 on the H100)."""
    return any(s > 1 for s in spec.stride) or targets.one_tap_half_on_gpu(options.target, spec.dtype, spec.kernel)


def strided_form(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> tuple[str, str]:
    """(the grad_input form of a strided data gradient, the rule that chose it),
    unless `options.grad_input_form` forces one (for measuring);
    docs/performance-journal.md ("The form rule") has the measurements behind each branch.

    GPU targets: a 1x1 kernel takes per-phase: ungrouped, its one phase is
    the weight-first GEMM, right in f16 and 1.8x-4.1x faster than col2im's
    matmul per image on the H100. Larger ungrouped kernels with more than
    `tuning.narrow_channels` input channels: per-phase, faster than col2im
    on 16 of 23 such layers on the H100, level (within 3%) on 4, slower on
    3 (by 1.10x-1.32x); with fewer, col2im (per-phase 2x-3.5x slower).
    Depthwise kernels of at most `tuning.depthwise_direct_max_taps` taps:
    the direct form (`depthwise_direct`). Other grouped kernels larger than
    1x1: per-phase (g32 3x3 5.4 ms against the direct form's 7.3 and
    upstream's 9.4). In f32, ungrouped kernels larger
    than 1x1 take col2im, 1.4x-10x faster than per-phase (i2v: 2.9 ms
    against 28.5). In the plain forms (the second try of a compile that
    failed) kernels wider than 1x1 take the direct form, which compiled
    where per-phase did not.
    The sub-pixel form ran 1.3x to 16x slower than per-phase on 6 of 7
    shapes, so it is never picked; it is refused where the phases are not
    aligned (d/gcd(d, s) > 1).
    CPU: an ungrouped kernel larger than 1x1 takes col2im, 1.2x-4x faster
    than the direct form (the stem 15 ms -> 4); grouped ones keep the
    direct form, run group by group (`group_split`); a 1x1 kernel per-phase,
    one GEMM on grad_output."""
    forced = options.grad_input_form
    if forced == "sub-pixel":
        aligned = all(d // math.gcd(d, s) == 1 for s, d in zip(spec.stride, spec.dilation))
        return ("sub-pixel", "forced") if aligned else ("per-phase", "subpixel_unaligned")
    if forced != "auto":
        return forced, "forced"
    one_tap = all(k == 1 for k in spec.kernel)
    if options.on_gpu:
        if one_tap:
            return "per-phase", "gpu_one_tap_per_phase"
        if options.plain_forms:
            return "direct", "gpu_plain_direct"
        if depthwise_direct(spec, tuning):
            return "direct", "gpu_depthwise_direct"
        if spec.groups > 1:
            return "per-phase", "gpu_grouped_per_phase"
        if targets.f32_on_gpu(options.target, spec.dtype):
            return "col2im", "gpu_f32_col2im"
        if spec.in_channels > tuning.narrow_channels:
            return "per-phase", "gpu_per_phase"
        return "col2im", "gpu_narrow_col2im"
    if one_tap:
        return "per-phase", "cpu_one_tap_per_phase"
    return ("col2im", "cpu_col2im") if spec.groups == 1 else ("direct", "cpu_grouped_direct")


def depthwise_direct(spec: ConvBackwardSpec, tuning: Tuning) -> bool:
    """A depthwise layer (one channel a group each way) whose window has at
    most `tuning.depthwise_direct_max_taps` taps, on a GPU target: the
    direct form, upstream's convolution over grad_output with zeros
    inserted. IREE 3.13's CUDA code for a depthwise convolution costs the
    same per output from 4 to 36 taps (H200, f16, n32 c144 56x56 at stride
    2: 274 us for 4x4 and 5x5 windows over all of grad_input, 70 us for each
    2x2 or 3x3 phase over a quarter of it), so the phases save nothing and
    their weave (36 us) is the 0.87x-0.92x of upstream's speed that
    per-phase ran at with 16-36 taps; the direct form ran level with
    upstream (0.97x-1.06x) at 9-36 taps. At 49 taps (7x7) the direct form
    took 1.2x-1.3x per-phase's time (0.60 ms against 0.49): wider windows
    keep per-phase."""
    depthwise = spec.groups > 1 and spec.in_channels_per_group == spec.out_channels_per_group == 1
    return depthwise and math.prod(spec.kernel) <= tuning.depthwise_direct_max_taps


def form(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> tuple[str, str]:
    """(grad_input's form, the rule that chose it), for a spec that asks for grad_input."""
    if spec.transposed:
        return "transposed", "transposed_strided_conv"
    if kernel_why_not(spec, options) is None:
        return "kernel", "cuda_kernel"
    if phase_kernel_why_not(spec, options, tuning) is None:
        return "phase-kernel", "cuda_phase_kernel"
    if not avoids_zeros(spec, options):
        return "direct", "unit_stride_direct"
    return strided_form(spec, options, tuning)


def direct_im2col_matmul(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> bool:
    """The direct form as an im2col gather and the named matmul, ungrouped.
    On the CPU for a 1x1 kernel at any stride and
    for stride 1 with 128+ channels: 3x-5x faster than the
    convolution-shaped generic on 1x1 kernels and 0.7x-0.8x its time on
    ResNet-50's c128/c256 3x3 layers; with 64 grad_input channels as fast
    or 1.25x slower, and over a zero-inserted grad_output (3x3 stride 2)
    1.6x slower. In f32 on GPU targets at stride 1 where
    `direct_weight_as_is` does not apply: 0.79x-0.89x the direct form's
    time on the H100 (docs/performance-journal.md)."""
    if spec.groups != 1:
        return False
    if targets.f32_on_gpu(options.target, spec.dtype):
        return all(s == 1 for s in spec.stride) and not direct_weight_as_is(spec, options, tuning)
    one_tap = all(k == 1 for k in spec.kernel)
    wide = all(s == 1 for s in spec.stride) and spec.in_channels >= tuning.direct_im2col_min_channels
    return (one_tap or wide) and options.target == "cpu"


def direct_weight_as_is(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> bool:
    """f32 on GPU targets, ungrouped, a kernel larger than 1x1 with
    `tuning.f32_weight_as_is_min_channels`+ grad_input channels: the direct
    form reads the flipped weight as it is, [f, c, k] with f the reduction,
    instead of transposed to [c, f, k]: ResNet-50's c256 14x14 layer 3.6x
    faster on the H100 (1.20 ms against 4.24), slower on c64 and 1x1 ones
    (docs/performance-journal.md, "f32 on GPUs")."""
    wide = any(k > 1 for k in spec.kernel) and spec.in_channels >= tuning.f32_weight_as_is_min_channels
    return spec.groups == 1 and targets.f32_on_gpu(options.target, spec.dtype) and wide


def direct_widened(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> bool:
    """A direct form whose window slides along no dim folds to a
    contraction; IREE's f16 code for it did not finish on channels off its
    MMA tile (`targets.widens_windowless`): it runs in f32."""
    channels = (spec.in_channels_per_group, spec.out_channels_per_group)
    return (geometry.slides_no_window(spec.kernel, spec.input_spatial)
            and targets.widens_windowless(options.target, spec.dtype, channels, tuning))


def phase_one_matmul(spec: ConvBackwardSpec, options: LoweringOptions) -> bool:
    """An ungrouped 1x1 kernel's one phase on the CPU, and in f32 on GPU
    targets: one row-major matmul woven into the grid. In f32 on the H100
    it ran 3.3x-18x faster than the weight-first GEMM on all six strided
    1x1 layers (1x1 c1024 k2048 50x50: 23 ms against 130; IREE's own
    matmul 21)."""
    one_tap = all(k == 1 for k in spec.kernel) and spec.groups == 1
    return one_tap and (options.target == "cpu" or targets.f32_on_gpu(options.target, spec.dtype))


def phase_weight_first(spec: ConvBackwardSpec, options: LoweringOptions) -> bool:
    """An ungrouped 1x1 kernel on a GPU target: its one phase is the
    weight-first GEMM, the operand order IREE 3.13's CUDA code computes
    right in f16 (the convolution-shaped contraction it computed wrongly).
    Grouped, with 8 channels per group (1x1 g32 n32 c256 100x100) the GEMM
    did not finish in 120 s: grouped 1x1 kernels keep the phase's
    convolution."""
    return all(k == 1 for k in spec.kernel) and spec.groups == 1 and options.on_gpu


def phase_widened(spec: ConvBackwardSpec, phases: Phases, options: LoweringOptions, tuning: Tuning) -> bool:
    """A phase of a grouped f16/bf16 per-phase form that runs in f32 on GPU
    targets: a phase of one tap, whose window slides along no dim, where
    `targets.widens_windowless` says (channels a group on which IREE 3.13's
    f16 code did not finish). The other phases keep the dtype."""
    one_tap = geometry.one_tap(phases)
    channels = (spec.in_channels_per_group, spec.out_channels_per_group)
    return one_tap and spec.groups > 1 and targets.widens_windowless(options.target, spec.dtype, channels, tuning)


def woven_axes(spec: ConvBackwardSpec, counts: list[int], half: bool, options: LoweringOptions) -> tuple[int, ...]:
    """The dims of a lone phase's result, contracted on a GPU target from
    f16/bf16 operands (`half`), that are woven with zeros instead of
    stepped along by its strided insert (dims of more than one row and a
    stride). IREE 3.13 failed to compile that insert fused into an f16/bf16
    MMA dispatch for CUDA where one dim is strided (IREE fault
    `cuda_strided_insert_mma_fusion`; two strided dims compiled), and the
    weight-first GEMM on gfx942 with a dynamic batch where two are ("LLVM
    ERROR: Cannot select: f32 = Constant<-1>")."""
    if options.target == "cpu" or not half:
        return ()
    strided = tuple(a for a, (s, q) in enumerate(zip(spec.stride, counts)) if s > 1 and q > 1)
    if len(strided) == 1:
        return strided
    if phase_weight_first(spec, options) and options.target == "gfx942" and spec.dynamic_batch:
        return strided
    return ()


def decoded_sizes(spec: ConvBackwardSpec, live: list[Phases]) -> list[int]:
    """What one table of every phase's taps divides its flat index by: the
    groups, the channels a group each way and every phase's taps per dim."""
    sizes = [spec.groups, spec.in_channels_per_group, spec.out_channels_per_group]
    return sizes + [ph.taps for phases in live for ph in phases]


def decodes_by_shifts(spec: ConvBackwardSpec, live: list[Phases]) -> bool:
    """Whether every size that table decodes by is a power of two. Dividing
    by others, IREE 3.13's CUDA code for the gather failed to compile on
    layers with a stride-1 dim beside a strided one (IREE fault
    `cuda_gather_division_umul_lohi`). A table per phase has no division and
    compiled on every one of them (docs/performance-journal.md, "Random layers
    compiled for GPUs")."""
    return all(size & (size - 1) == 0 for size in decoded_sizes(spec, live))


def _table_kernel(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> bool:
    return options.on_gpu and max(spec.kernel) < tuning.one_table_kernel


def phase_one_table(spec: ConvBackwardSpec, live: list[Phases], options: LoweringOptions, tuning: Tuning) -> bool:
    """GPU per-phase: every phase's taps gathered by one op, for kernels
    narrower than `tuning.one_table_kernel` whose table decodes by shifts:
    a gather per phase was a dispatch per phase on IREE's GPU code
    (docs/performance-journal.md, "One tap table")."""
    return _table_kernel(spec, options, tuning) and decodes_by_shifts(spec, live)


def phase_tables_each(spec: ConvBackwardSpec, live: list[Phases], options: LoweringOptions, tuning: Tuning) -> bool:
    """The phases of such a kernel whose one table would divide by a size
    that is not a power of two: a table per phase, as IREE fault
    `cuda_gather_division_umul_lohi` asks."""
    return _table_kernel(spec, options, tuning) and not decodes_by_shifts(spec, live)


def phase_stored_in_place(spec: ConvBackwardSpec, live: list[Phases], options: LoweringOptions,
                          tuning: Tuning) -> bool:
    """CUDA per-phase, 2-D or 3-D, with two or more live phases, strided
    along every dim and of two or more rows along each, with
    `tuning.in_place_min_channels` or more grad_input channels a group: each phase
    reads a window of dy padded for it alone and stores its rows into
    grad_input with the stride, all in one dispatch
    (`compiler.dispatch_regions`), instead of one padded span of dy copied
    for every phase and the phases woven by a gather. On an H200 in f16 the
    transposed k4 s2 p1 c64 k32 32x32 (n32) took 0.096 ms a call against
    0.134 woven (kernels 71 us against 89: the pad's copy, 23, and the
    weave, 12, gone; each phase 14 -> 18); on nine strided data gradients
    (issues 1 and 3, ResNet-50's) in place ran 1.05x-9x faster on eight and
    0.93x-0.96x on one (5x5 c128 k256 40x175); the woven phases of one tap
    row were widened to f32 for IREE fault `cuda_mma_padding_overread` (0.8
    ms each on Retinanet). Grouped 3x3 s2 layers of 2-8 groups ran 2.0x-2.9x
    faster in place than woven; their phases of one tap along every dim
    are weight-first GEMMs there (`phase_one_tap_gemm`), since IREE's CUDA
    code stored the convolution-shaped ones wrongly in f16/bf16 (IREE
    fault `cuda_grouped_phase_store`). A stride along one dim alone (1-D
    too) is IREE fault `cuda_strided_insert_mma_fusion`; gfx942 has not run
    it. With 8 channels (c8 k32 112x112) IREE's code for the phases in their
    regions read past an operand, and the workaround does not reach into
    regions (widened there by their weight, they computed NaN): they are
    woven. Where that happens above the line (7x7 c16 k64 224x224),
    `compile_fallback` lowers the module again with the phases woven
    (`LoweringOptions.phases_in_place`)."""
    strided = all(s > 1 for s in spec.stride) and len(spec.stride) > 1
    rows = all(ph.count > 1 for phases in live for ph in phases)
    wide = spec.in_channels_per_group >= tuning.in_place_min_channels
    return options.target == "cuda" and options.phases_in_place and len(live) > 1 and strided and rows and wide


def phase_one_tap_gemm(spec: ConvBackwardSpec, options: LoweringOptions, stored_in_place: bool) -> bool:
    """Whether a phase of one tap along every dim is a GEMM with the weight
    first (`contraction_forms.weight_first_gemm`) rather than a
    convolution: on GPU targets for ungrouped layers, where IREE 3.13's CUDA
    code computed the convolution-shaped phase wrongly in f16; for grouped
    ones where the phases are stored in place, where it stored the grouped
    convolution-shaped phase wrongly (IREE fault `cuda_grouped_phase_store`:
    2x2 s2 in 2 groups of 16, 98% of the largest value off; right as
    GEMMs, H200). Woven, grouped one-tap phases were right as
    convolutions."""
    return options.on_gpu and (spec.groups == 1 or stored_in_place)


def narrow_channels_on_gfx942(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> bool:
    """Layers, grouped or not, with fewer than 16 input channels a group and
    32 or more output channels a group, whose f16/bf16 phase convolutions
    IREE 3.13 did not compile for gfx942 (IREE fault
    `gfx942_phase_shared_memory`); CUDA compiled all of them."""
    c_group, f_group = spec.in_channels_per_group, spec.out_channels_per_group
    return (iree_faults.seen_on(iree_faults.GFX942_PHASE_SHARED_MEMORY, options.target)
            and c_group < tuning.gfx942_narrow_group_inputs and f_group >= tuning.gfx942_wide_group_outputs)


def computes_in_f32(spec: ConvBackwardSpec, form_: str, options: LoweringOptions, tuning: Tuning) -> bool:
    """Whether the form's f16/bf16 contractions run in f32 instead: the
    sub-pixel form (never checked in f16 on a GPU), a grouped per-phase
    form whose one live phase is widened (a grouped 1x1 kernel; widened
    only inside the phase, the g32 one did not finish), and gfx942's
    narrow channels (`narrow_channels_on_gfx942`). On the H100 IREE 3.13's CUDA
    code computed the per-phase form's 1-tap phases wrongly in f16 (60%-120%
    of the largest value) where they were convolutions; col2im and the
    direct form were right in f16 on every layer checked and keep it
    (docs/performance-journal.md, "Read first", "Windowless convolutions in f16")."""
    if not targets.half_precision_on_gpu(options.target, spec.dtype):
        return False
    live = live_phases(spec)[0]
    grouped_one_tap = (form_ == "per-phase" and spec.groups > 1 and len(live) == 1
                       and phase_widened(spec, live[0], options, tuning))
    narrow = form_ == "per-phase" and narrow_channels_on_gfx942(spec, options, tuning)
    return form_ == "sub-pixel" or grouped_one_tap or narrow


def transposed_gemm_applies(spec: ConvBackwardSpec, tuning: Tuning) -> bool:
    """Whether a transposed 1x1 kernel in f16/bf16 on a GPU target takes the
    weight-first GEMM rather than its convolution widened to f32. On the
    H100, n16 c512 k256 28x28 stride 2: 0.17-0.19 ms against 141 ms
    ungrouped, 0.26 against 4.1 in 4 groups; with 8 channels a group the
    GEMM did not finish in 120 s."""
    per_group = min(spec.in_channels_per_group, spec.out_channels_per_group)
    return spec.groups == 1 or per_group >= tuning.transposed_gemm_min_group_channels


def transposed_form(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning) -> tuple[str, str]:
    """(the form of a transposed convolution's grad_input, the rule): a
    strided forward convolution of grad_output, or on GPU targets an
    ungrouped strided 1x1 kernel in f32 an im2col gather and the named
    matmul (`targets.one_tap_strided_f32_on_gpu`), an f16/bf16 1x1 kernel
    the weight-first GEMM (`transposed_gemm_applies`), and a window that
    slides along no dim the rows it reads copied and a convolution over
    them, its positions' loops first (`targets.windowless_half_on_gpu`)."""
    if targets.one_tap_strided_f32_on_gpu(options.target, spec.dtype, spec.kernel, spec.stride, spec.groups):
        return "im2col-matmul", "one_tap_strided_f32_im2col"
    if targets.one_tap_half_on_gpu(options.target, spec.dtype, spec.kernel) and transposed_gemm_applies(spec, tuning):
        return "weight-first-gemm", "transposed_one_tap_gemm"
    if targets.windowless_half_on_gpu(options.target, spec.dtype, spec.kernel, spec.input_spatial):
        return "windowless-conv", "windowless_half_conv"
    return "conv", "transposed_strided_conv"
