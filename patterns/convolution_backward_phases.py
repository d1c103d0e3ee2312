"""aten.convolution_backward with a strided grad_input, computed without
touching the zeros a scatter would insert (stride-phase decomposition).

Positions of grad_input split by residue `(i + p) mod s` per dim; each
residue class is a stride-1 contraction over the un-scattered grad_output
with its own reversed sub-kernel (`geometry.grad_input_phases`), in the
shape of a named convolution (`contraction_forms.conv`). Each phase is
computed for every row of the position grid `[q, rho]` (`rho = i mod s`,
`geometry.position_grid_length`), reading its window of dy from one
zero-padded span, and one elementwise op weaves the phases into the grid
(`contraction_forms.interleave`), which is collapsed to positions
`q*s + rho`: grad_input, cut at its end where s does not divide its size.
On GPU targets per-phase instead writes each phase as a block of one stack
and gathers grad_input from it (`contraction_forms.interleave_by_gather`),
and gathers every phase's taps with one op (`tap_tables.all_tap_tables`).
(A grid of `i + p`, cropped at p, cost a copy of grad_input on IREE's GPU
code: 42 us of the 315 of ResNet-50's 3x3 c512 14x14 layer on the H100.)
(Unit-stride inserts into such a grid were tried first: IREE 3.13 folds
the unit dims of the insert onto the wrong destination dims and drops
rows. Strided inserts of each phase into grad_input were tried next: IREE
fuses the strided store into the phase's convolution, which then does not
vectorize on the CPU.)
An empty phase (stride > kernel, or gcd(stride, dilation) > 1) emits no
contraction; its positions get zeros. A 1x1 kernel has one non-empty phase:
its contraction runs on grad_output as it is: on GPU targets its result
alone is inserted with stride s into zeros, which measured faster there
than the weave (but woven in f16/bf16 where IREE failed to compile
that insert: `_woven_axes`); on the CPU it is a named matmul between transposes
(`contraction_forms.im2col_matmul`), woven with zeros.
"""

from __future__ import annotations

import itertools
import math
from typing import Optional

from torch_mlir import ir
from torch_mlir.rewrite import PatternRewriter

from iree_bwdconv import col2im, geometry, gradients, replacement, tap_tables, targets
from iree_bwdconv import contraction_forms as forms
from iree_bwdconv import linalg_builders as lb
from iree_bwdconv.linalg_builders import PARALLEL, REDUCTION
from iree_bwdconv.options import GRAD_INPUT_FORM_VARIABLE, GRAD_INPUT_FORMS, LoweringOptions
from iree_bwdconv.spec import ConvBackwardSpec

ROOT = "torch.aten.convolution_backward"
# How each form weaves its phases into grad_input on GPU targets: "gather"
# (`contraction_forms.interleave_by_gather`) or "grid"
# (`contraction_forms.interleave`, the CPU's); docs/performance.md, "The weave".
GPU_WEAVE = {"per-phase": "gather", "col2im": "grid"}
BENEFIT = 2  # preferred over the direct form wherever it applies


def _phase_contraction(
    spec: ConvBackwardSpec, window: ir.Value, weight: ir.Value, phases: tuple[geometry.Phase, ...], rows: list[int],
    table: Optional[ir.Value] = None, *, options: LoweringOptions
) -> ir.Value:
    """dx_r[n,g,c,q] = sum_{f,j} window[n,g,f,q + D*j] * T_r[g,c,f,j] in f32
    for `rows` rows, where `window` is the part of dy the phase reads for
    them (`lb.window`) and T_r the phase's own reversed sub-kernel (the
    weight itself for a 1x1 kernel), as a convolution (`contraction_forms.conv`).
    Without groups, dy is [n,f,..] and the result [n,c,..]. An ungrouped
    phase of one tap on a GPU target is a GEMM with the weight first
    instead (`tap_tables.one_tap`): the convolution-shaped 1-tap phase was the part
    of this form IREE 3.13's CUDA code computed wrongly in f16.

    Without `table` each phase gathers its own taps. A `table` from
    `tap_tables.all_tap_tables` is a contiguous block of one buffer: slicing one
    shared table of every tap instead left a non-contiguous slice inside the
    contraction's dispatch, which IREE 3.13's CUDA backend fails to
    bufferize (5x5 stride 2)."""
    r, groups = spec.spatial_rank, spec.groups
    c_in = spec.in_channels_per_group
    channels = [groups, c_in] if groups > 1 else [c_in]
    init = lb.zeros([lb.sizes_of(window)[0], *channels, *rows], lb.element_type(gradients.ACCUMULATOR))
    if table is not None:  # [c, f] for a weight-first GEMM, else the convolution's [(g,) c, f, *j]
        if ir.RankedTensorType(table.type).rank == 2:
            return forms.weight_first_gemm(table, window, init)
        return forms.conv(window, table, init, [1] * r, [ph.tap_dilation for ph in phases])
    if options.target != "cpu" and groups == 1 and all(ph.taps == 1 for ph in phases):
        return forms.weight_first_gemm(tap_tables.one_tap(weight, [ph.first_tap for ph in phases]), window, init)
    taps = weight
    if any(k > 1 for k in spec.kernel):
        taps = tap_tables.tap_table(
            weight,
            [(ph.last_tap,) for ph in phases],
            [ph.tap_step for ph in phases],
            [ph.taps for ph in phases],
            spec.kernel,
            residue_dims=False,
            channels_first=True,
        )
    else:
        taps = forms.transpose(taps, [0, 2, 1, *range(3, 3 + r)])  # [g, c, f, *j]
    if groups == 1:
        taps = lb.collapse_dims(taps, 0)
    return forms.conv(window, taps, init, [1] * r, [ph.tap_dilation for ph in phases])


def _phase_windows(
    spec: ConvBackwardSpec, dy: ir.Value, live: list[tuple[geometry.Phase, ...]], rows: list[int]
) -> list[ir.Value]:
    """Each live phase's window of dy for `rows` position-grid rows, as a
    unit-stride slice of one zero-padded span that holds them all: one pad
    for every phase, where a pad per phase was a copy dispatch per phase on
    IREE's GPU code (22 us each on the H100, Retinanet)."""
    spans = geometry.live_spans(live, rows)
    padded = lb.window(dy, spans)
    lead = lb.sizes_of(padded)[: -spec.spatial_rank]
    windows = []
    for phases in live:
        own = [ph.position_window(n) for ph, n in zip(phases, rows)]
        offsets = [start - span_start for (start, _), (span_start, _) in zip(own, spans)]
        windows.append(lb.extract(padded, [0] * len(lead) + offsets, lead + [length for _, length in own]))
    return windows


def _one_matmul_applies(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """An ungrouped 1x1 kernel (its one phase) on the CPU, and in f32 on GPU
    targets: one row-major matmul (`contraction_forms.im2col_matmul`)
    whose result is woven into the grid. In f32 on the H100 it ran 3.3x-18x
    faster than the weight-first GEMM on all six strided 1x1 layers (1x1
    c1024 k2048 50x50: 23 ms against 130; IREE's own matmul 21). Not a
    single live phase of several taps (gcd(s, d) > 1): its taps are the
    phase's own, not the weight's."""
    one_tap = all(k == 1 for k in spec.kernel) and spec.groups == 1
    return one_tap and (options.target == "cpu" or targets.f32_on_gpu(options.target, spec.dtype))


def _weight_first_applies(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """An ungrouped 1x1 kernel on a GPU target: its one phase is
    `contraction_forms.weight_first_gemm`, the operand order IREE 3.13's
    CUDA code computes right in f16 (the convolution-shaped contraction it
    computed wrongly). Grouped, the GEMM was right in f16 too (g2, g4 on
    the H100), but with 8 channels per group (1x1 g32 n32 c256 100x100)
    it did not finish in 120 s: grouped 1x1 kernels keep the phase's
    convolution, its positions' loops first (`contraction_forms.conv`),
    in f32 where a group's channels are off IREE's MMA tile
    (`computes_in_f32`)."""
    return all(k == 1 for k in spec.kernel) and spec.groups == 1 and options.target != "cpu"


def _weight_first_part(spec: ConvBackwardSpec, window: ir.Value, weight: ir.Value, rows: list[int]) -> ir.Value:
    """dx_r[n,c,q] = sum_f w[f,c] * window[n,f,q] in f32, for an ungrouped
    1x1 kernel's one phase: its one tap (`tap_tables.one_tap`) times dy. At stride 1
    the phase is all of grad_input and its positions are one dim (tiles of
    64 of them; 1 x 32 of 25 x 25 kept apart); with a stride they stay
    apart so that IREE fuses the strided insert of the result into the
    GEMM's dispatch (its own copy of the result otherwise: 2.2 ms against
    1.9 on n32 c1024 k2048 50x50)."""
    r = spec.spatial_rank
    flat = all(s == 1 for s in spec.stride)
    source = forms.collapse_range(window, 2, 2 + r) if flat else window
    init = lb.zeros([lb.sizes_of(source)[0], spec.in_channels, *lb.sizes_of(source)[2:]],
                    lb.element_type(gradients.ACCUMULATOR))
    part = forms.weight_first_gemm(tap_tables.one_tap(weight, [0] * r), source, init)
    return forms.expand_trailing(part, rows) if flat else part


def _woven_axes(spec: ConvBackwardSpec, counts: list[int], elem: ir.Type, *, options: LoweringOptions) -> list[int]:
    """The dims of a lone phase's result, contracted on a GPU target from
    operands of type `elem`, that are woven with zeros instead of stepped
    along by its strided insert (dims of more than one row and a stride).
    IREE 3.13 failed to compile that insert fused into an f16/bf16 MMA
    dispatch where one dim is strided ("LLVM Translation failed for
    operation: builtin.unrealized_conversion_cast"; two strided dims
    compiled): the weight-first GEMM on CUDA (most 1-D layers, (1, s)
    strides), the phase's convolution of gcd(s, d) > 1 layers (1-D k3 s2
    d2, 2-D s (1, 2) d (1, 2)) on CUDA and gfx942. And the weight-first
    GEMM on gfx942 with a dynamic batch where two are (dy of 5 to 7 rows
    at stride 2 and 3: "LLVM ERROR: Cannot select: f32 = Constant<-1>";
    3-D and a static batch compiled)."""
    half = elem != lb.element_type("f32")
    if options.target == "cpu" or not half:
        return []
    strided = [a for a, (s, q) in enumerate(zip(spec.stride, counts)) if s > 1 and q > 1]
    if len(strided) == 1:
        return strided
    if _weight_first_applies(spec, options=options) and options.target == "gfx942" and spec.dynamic_batch:
        return strided
    return []


def _woven_along(part: ir.Value, axes: list[int], strides: list[int], rooms: list[int], dtype: ir.Type) -> ir.Value:
    """`part` with `strides[a] - 1` zeros after each element along each
    spatial dim `a` of `axes`, rounded to `dtype` and cut to the `rooms[a]`
    positions left in grad_input (only zeros are cut: the last row lands
    inside it)."""
    r = len(strides)
    lead = len(lb.sizes_of(part)) - r  # n, (g,) c
    weave = [strides[a] if a in axes else 1 for a in range(r)]
    grid = forms.interleave({(0,) * r: part}, weave, dtype)
    for a in range(r):  # [.., q, s, ..] -> [.., q*s, ..]
        grid = lb.collapse_dims(grid, lead + a)
    sizes = lb.sizes_of(grid)
    for a in axes:
        sizes[lead + a] = min(sizes[lead + a], rooms[a])
    return lb.extract(grid, [0] * len(sizes), sizes)


def grad_input_phases(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value,
                      *, options: LoweringOptions) -> ir.Value:
    """Every live phase over the whole position grid, woven into it by one
    elementwise op; a single live phase is inserted with stride into a zero
    grad_input instead."""
    r, groups = spec.spatial_rank, spec.groups
    f_out = spec.out_channels_per_group
    live, rows = _live_phases(spec, options=options)
    if not live:
        return gradients.zeros_like_input(spec, grad_output)
    dy = lb.expand_dim(grad_output, 1, (groups, f_out)) if groups > 1 else grad_output
    w = lb.expand_dim(weight, 0, (groups, f_out))
    lead = ir.RankedTensorType(dy.type).rank - r
    dtype = lb.element_type(spec.dtype)
    batch = lb.sizes_of(grad_output)[0]
    if _one_matmul_applies(spec, options=options):
        (phases,) = live
        window = lb.window(grad_output, [ph.position_window(n) for ph, n in zip(phases, rows)])
        part = forms.im2col_matmul(window, weight, [1] * r, lb.element_type(gradients.ACCUMULATOR))
        return _weave(spec, {_position_residues(phases): part}, batch, "per-phase", options=options)
    if len(live) == 1:
        # One live phase (a 1x1 kernel): its own rows alone go into a zero
        # grad_input with stride s. On the H100 this ran 1.85 ms against the
        # grid weave's 3.07 and a gather into grad_input's layout 2.9
        # (1x1 s2 n32 c1024 k2048 50x50), on the CPU 0.45 against 0.53.
        (phases,) = live
        counts = [ph.count for ph in phases]
        window = lb.window(dy, [ph.grid_window(ph.count, ph.first_q) for ph in phases])
        if _weight_first_applies(spec, options=options):
            part = _weight_first_part(spec, window, w, counts)
        else:
            part = _phase_contraction(spec, window, w, phases, counts, options=options)
        dx = lb.zeros(lb.sizes_of(part)[:lead] + list(spec.input_spatial), dtype)
        offsets = [ph.first_q * s + ph.residue - p for ph, s, p in zip(phases, spec.stride, spec.padding)]
        # A dim of one row takes no step: IREE's CUDA code also failed on a
        # strided insert of one row fused into the f16 GEMM (1-D, size 5, stride 3 or 4).
        strides = [1 if q == 1 else s for s, q in zip(spec.stride, counts)]
        axes = _woven_axes(spec, counts, ir.RankedTensorType(window.type).element_type, options=options)
        if axes:
            rooms = [i - o for i, o in zip(spec.input_spatial, offsets)]
            part = _woven_along(part, axes, strides, rooms, dtype)
            strides = [1] * r
        dx = lb.insert_strided(lb.convert(part, dtype), dx, [0] * lead + offsets, [1] * lead + strides)
        return lb.collapse_dims(dx, 1) if groups > 1 else dx
    windows = _phase_windows(spec, dy, live, rows)
    one_table = (options.target != "cpu" and max(spec.kernel) < GPU_PER_PHASE_KERNEL
                 and tap_tables.decodes_by_shifts(spec, live))
    tables = tap_tables.all_tap_tables(spec, w, live) if one_table else [None] * len(live)
    parts = {}
    for phases, window, table in zip(live, windows, tables):
        taps = w
        if _widened_phase(spec, phases, options=options):
            f32 = lb.element_type("f32")
            window, taps = lb.convert(window, f32), lb.convert(w, f32)
            table = None if table is None else lb.convert(table, f32)
        parts[_position_residues(phases)] = _phase_contraction(spec, window, taps, phases, rows, table, options=options)
    return _weave(spec, parts, batch, "per-phase", options=options)


def _widened_phase(spec: ConvBackwardSpec, phases: tuple[geometry.Phase, ...], *, options: LoweringOptions) -> bool:
    """Whether a phase of a grouped f16/bf16 per-phase form runs in f32 on
    GPU targets: a phase of one tap, a convolution whose window slides
    along no dim, where `targets.widens_windowless` says (channels a group
    on which IREE 3.13's f16 code did not finish). Its other phases keep
    the dtype, accumulating in f32 as the direct form does."""
    one_tap = all(ph.taps == 1 for ph in phases)
    channels = (spec.in_channels_per_group, spec.out_channels_per_group)
    return one_tap and spec.groups > 1 and targets.widens_windowless(options.target, spec.dtype, channels)


def _position_residues(phases: tuple[geometry.Phase, ...]) -> tuple[int, ...]:
    """The phase combination's column of the position grid, per dim."""
    return tuple(ph.position_residue for ph in phases)


def _live_phases(spec: ConvBackwardSpec,
                 *, options: LoweringOptions) -> tuple[list[tuple[geometry.Phase, ...]], list[int]]:
    """The phase combinations that read dy (the others' positions are
    zeros), and the rows of the position grid per dim."""
    per_dim = [geometry.grad_input_phases(*dim) for dim in spec.per_dim()]
    rows = [geometry.position_grid_length(i, s) for i, s in zip(spec.input_spatial, spec.stride)]
    live = [phases for phases in itertools.product(*per_dim)
            if all(ph.reads_dy(o) for ph, o in zip(phases, spec.output_spatial))]
    return live, rows


def grad_input_col2im(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value,
                      *, options: LoweringOptions) -> ir.Value:
    """Every live phase summed from one taps-first matmul (`col2im`), woven
    into the grid as per-phase convolutions are."""
    live, rows = _live_phases(spec, options=options)
    if not live:
        return gradients.zeros_like_input(spec, grad_output)
    parts = col2im.phase_sums(spec, grad_output, weight, live, rows, options=options)
    return _weave(spec, parts, lb.sizes_of(grad_output)[0], "col2im", options=options)


def _weave(spec: ConvBackwardSpec, parts: dict[tuple[int, ...], ir.Value], batch: lb.Size, form: str,
           *, options: LoweringOptions) -> ir.Value:
    """The phases, keyed by position residue, woven into grad_input: on GPU
    targets as `GPU_WEAVE` says for `form`, else into the position grid,
    collapsed to positions q*s + rho and cut to grad_input's size (nothing
    to cut where the strides divide it). The gather reads each phase's
    element once where the grid weave reads every phase (9 at stride 3 in
    2-D: 600 us of 920 on the H100) and needs no cut; col2im keeps the
    grid, into which IREE fuses col2im's sums of taps (the gather left them
    a dispatch per phase: 1.4x slower on the narrow layers)."""
    r = spec.spatial_rank
    if options.target != "cpu" and GPU_WEAVE[form] == "gather":
        dx = forms.interleave_by_gather(parts, spec.stride, spec.input_spatial, lb.element_type(spec.dtype))
        return lb.collapse_dims(dx, 1) if ir.RankedTensorType(dx.type).rank == 3 + r else dx
    grid = forms.interleave(parts, spec.stride, lb.element_type(spec.dtype))
    lead = ir.RankedTensorType(grid.type).rank - 2 * r
    for axis in range(r):  # [.., q, s, ..] -> [.., q*s, ..]
        grid = lb.collapse_dims(grid, lead + axis)
    if lead == 3:  # [n, g, c, ..]: per-phase parts keep the group dim
        grid = lb.collapse_dims(grid, 1)
    return lb.extract(grid, [0] * (2 + r), [batch, spec.in_channels, *spec.input_spatial])


def grad_input_subpixel(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value,
                        *, options: LoweringOptions) -> ir.Value:
    """All phases in one contraction whose output is laid out [.., q, r, ..]
    per dim, so that a reshape interleaves the phases (depth-to-space)."""
    r, groups = spec.spatial_rank, spec.groups
    c_in, f_out = spec.in_channels_per_group, spec.out_channels_per_group
    window = (spec.input_spatial, spec.output_spatial, spec.kernel, spec.stride, spec.padding, spec.dilation)
    if any(map(geometry.reads_only_padding, *window)):
        return gradients.zeros_like_input(spec, grad_output)
    forms = [geometry.subpixel_form(*dim) for dim in spec.per_dim()]
    dy = lb.expand_dim(grad_output, 1, (groups, f_out))
    taps = tap_tables.tap_table(lb.expand_dim(weight, 0, (groups, f_out)), [f.tap_base for f in forms],
                      [f.tap_step for f in forms], [f.window for f in forms], spec.kernel)
    window = lb.window(dy, [(form.dy_start, form.rows + form.window - 1) for form in forms])

    num = 4 + 3 * r
    n, g, c, *rest = lb.dims(num)
    q, res, f, u = rest[:r], rest[r : 2 * r], rest[2 * r], rest[2 * r + 1 :]
    maps = [
        lb.affine_map(num, [n, g, f, *(qi + ui for qi, ui in zip(q, u))]),
        lb.affine_map(num, [g, f, c, *res, *u]),
        lb.affine_map(num, [n, g, c, *(e for pair in zip(q, res) for e in pair)]),
    ]
    batch = lb.sizes_of(grad_output)[0]
    grid_sizes = [size for form, s in zip(forms, spec.stride) for size in (form.rows, s)]
    init = lb.zeros([batch, groups, c_in, *grid_sizes], lb.element_type(gradients.ACCUMULATOR))
    iterators = [PARALLEL] * (3 + 2 * r) + [REDUCTION] * (1 + r)
    grid = lb.convert(lb.contraction(window, taps, init, maps, iterators), lb.element_type(spec.dtype))
    for axis in range(r):  # [.., q, s, ..] -> [.., q*s, ..]
        grid = lb.collapse_dims(grid, 3 + axis)
    grid = lb.collapse_dims(grid, 1)
    return lb.extract(grid, [0, 0, *spec.padding], [batch, spec.in_channels, *spec.input_spatial])


FORMS = GRAD_INPUT_FORMS
# GPU targets: col2im, not per-phase, for ungrouped kernels with at most
# this many input channels (`choose_form`).
NARROW_CHANNELS = 4
# GPU per-phase: one tap table for every phase (`tap_tables.all_tap_tables`) for
# kernels narrower than this in every dim whose table decodes by shifts
# (`tap_tables.decodes_by_shifts`), a table per phase otherwise.
GPU_PER_PHASE_KERNEL = 5
FORM_VARIABLE = GRAD_INPUT_FORM_VARIABLE


def choose_form(spec: ConvBackwardSpec, *, options: LoweringOptions) -> str:
    """The grad_input form, unless `options.grad_input_form` forces one
    (for measuring); docs/performance.md ("The form rule") has the
    measurements behind each branch.

    GPU targets: a 1x1 kernel takes per-phase (this pattern takes f16/bf16
    ones at stride 1 too, `targets.one_tap_half_on_gpu`). Ungrouped, its
    one phase is the weight-first GEMM (`_weight_first_part`), right in
    f16 and 1.8x-4.1x faster than col2im's matmul per image on the H100;
    grouped, a convolution (in f32 where a group's channels are off
    IREE's MMA tile; `_weight_first_applies` says why). Larger ungrouped
    kernels with more than 4 input channels: per-phase (its 1-tap phases weight-first GEMMs, right in f16; its
    phases woven by a gather; its tap tables gathered by one op for
    kernels narrower than 5): faster than col2im on 16 of 23 such layers
    on the H100, level (within 3%) on 4, slower on 3 (by 1.10x-1.32x: 3x3
    c1024 14x14, 2x2 c384 14x14, 5x5 c64 k256); 8 of the 23 had no part in
    drawing the rule (docs/performance.md, "One tap table"). The same
    holds where the op computes the weight gradient too (training): with
    its tap gathers no longer behind a barrier, which had made each call
    wait on the host, the whole ran faster with per-phase than with
    col2im on most such layers and at most 5% slower on the others
    (docs/performance.md, "Taps without a barrier").
    With 4 or fewer channels: col2im (per-phase 2x-3.5x slower). Grouped kernels
    larger than 1x1, in every dtype: per-phase, its 1-tap phases in f32
    where a group's channels are off IREE's MMA tile and the others in
    f16/bf16 (`_widened_phase`): on the H100 g32 3x3
    5.4 ms against the direct form's 7.3 and upstream's 9.4, depthwise
    3x3 3.2 against 3.3 (docs/performance.md, "Grouped layers per-phase
    on GPUs"); in f32 g32 3x3 13.3 ms against the direct form's 17.4.
    In f32 on GPU targets (measured apart, docs/performance.md "f32 on
    GPUs"): an ungrouped 1x1 kernel's one phase is the CPU's matmul
    (`_one_matmul_applies`); larger ungrouped kernels take col2im, 1.4x-10x
    faster than per-phase on the four layers with more than 4 channels
    (i2v: 2.9 ms against 28.5).
    In the plain forms (`options.plain_forms`, the second try of a compile
    that failed) kernels wider than 1x1 take the direct form, which
    compiled where per-phase did not.
    The sub-pixel form ran 1.3x to 16x slower than per-phase on 6 of 7
    shapes, so it is never picked; it is refused where the phases are not
    aligned (d/gcd(d, s) > 1).
    CPU: an ungrouped kernel larger than 1x1 takes the col2im form, which
    ran 1.2x-4x faster than the direct form there (the stem 15 ms -> 4);
    grouped ones keep the direct form, run group by group where the groups
    have 2+ channels (`group_split`; col2im per group ran 2x slower on the
    g32 shape). IREE 3.13's CPU code for the phases' own small convolutions
    (2x1 taps: 3 GMAC/s) is slower than either. A 1x1 kernel: per-phase,
    one GEMM on grad_output.
    """
    forced = options.grad_input_form
    aligned = all(d // math.gcd(d, s) == 1 for s, d in zip(spec.stride, spec.dilation))
    if forced == "sub-pixel":
        return "sub-pixel" if aligned else "per-phase"
    if forced != "auto":
        return forced
    one_tap = all(k == 1 for k in spec.kernel)
    if options.target != "cpu":
        if one_tap:
            return "per-phase"
        if options.plain_forms:
            return "direct"
        if spec.groups > 1:
            return "per-phase"
        if targets.f32_on_gpu(options.target, spec.dtype):
            return "col2im"
        return "per-phase" if spec.in_channels > NARROW_CHANNELS else "col2im"
    if one_tap:
        return "per-phase"
    return "col2im" if spec.groups == 1 else "direct"


def rewrite(op: ir.Operation, rewriter: PatternRewriter, *, options: LoweringOptions) -> Optional[str]:
    """Replace the op; return None when rewritten, else the reason it was not."""
    spec, why_not = replacement.check_convolution_backward(op)
    if spec is None:
        return why_not
    if spec.transposed:
        return "transposed=True: grad_input is already a strided convolution without zeros"
    if all(s == 1 for s in spec.stride) and not targets.one_tap_half_on_gpu(options.target, spec.dtype, spec.kernel):
        return "stride 1 in every dim: there are no inserted zeros to avoid"
    if not spec.output_mask[0]:
        return "grad_input is not asked for"
    form = choose_form(spec, options=options)
    if form == "direct":
        return ("the direct form is chosen for this kernel on this target (choose_form): "
                "the convolution_backward pattern lowers it")
    builders = {"sub-pixel": grad_input_subpixel, "col2im": grad_input_col2im, "per-phase": grad_input_phases}
    build = builders[form]
    if computes_in_f32(spec, form, options=options):
        build = _in_f32(build)
    replacement.replace_convolution_backward(op, rewriter, spec, build, options=options)
    return None


def computes_in_f32(spec: ConvBackwardSpec, form: str, *, options: LoweringOptions) -> bool:
    """Whether the form's f16/bf16 contractions run in f32 instead.

    On the H100, IREE 3.13's CUDA code computed the per-phase form wrongly
    in f16 (grad_input off by 60%-120% of its largest value on a 3x3
    stride-2 c64 layer, a grouped 1x1 stride-2 layer and the g32 layer,
    whose 1-tap phase read out of bounds under compute-sanitizer), while
    the same IR was right compiled for the CPU and right on the H100 in
    f32 (`benchmarks/gpu_check.py`, docs/performance.md "Read first").
    The wrong part was the phases of one tap, convolutions of a 1x1
    kernel: as the weight-first GEMM (ungrouped phases) the form was right
    in f16 on every layer checked. The grouped 1-tap phases are
    convolutions in the loop order that is right (`contraction_forms.conv`)
    and keep f16 where a group's channels are multiples of 16. Elsewhere,
    where IREE's f16 code did not finish (`_widened_phase`), grouped
    per-phase widens whole where its one live phase has one tap (a grouped
    1x1 kernel; widened only inside the phase, the g32 one did not
    finish), and its other 1-tap phases widen alone; phases of several
    taps keep the dtype, a lone one too (gcd(s, d) > 1: right on the H200, 1.25x-2.5x
    faster than widened whole; docs/performance.md, "Dilated layers on
    GPUs", "Windowless convolutions in f16").
    On gfx942 grouped layers with few input channels a group widen whole
    (`_narrow_groups_on_gfx942`).
    The sub-pixel form was not checked and widens. gfx942's code comes
    from the same IREE pipeline, so it is treated alike. col2im and the
    direct form were right in f16 on every layer checked and keep it."""
    live = _live_phases(spec, options=options)[0]
    grouped_one_tap = (form == "per-phase" and spec.groups > 1 and len(live) == 1
                       and _widened_phase(spec, live[0], options=options))
    narrow = form == "per-phase" and _narrow_groups_on_gfx942(spec, options=options)
    return (targets.half_precision_on_gpu(options.target, spec.dtype)
            and (form == "sub-pixel" or grouped_one_tap or narrow))


def _narrow_groups_on_gfx942(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """Grouped layers with fewer than 16 input channels a group and 32 or
    more output channels a group, whose f16/bf16 phase convolutions IREE
    3.13 did not compile for gfx942 (8 and 32 a group, 3x3 and 5x5 kernels,
    2-D and 3-D: "uses 69632 bytes of shared memory; exceeded the limit of
    65536"; with 4 or 16 input channels a group, or 16 output channels, it
    compiled; widening only the phases, whose conversions IREE fuses into
    them, did not help: docs/performance.md, "Random layers compiled for
    GPUs"). CUDA compiled all of them."""
    c_group, f_group = spec.in_channels_per_group, spec.out_channels_per_group
    return options.target == "gfx942" and spec.groups > 1 and c_group < 16 and f_group >= 32


def _in_f32(build: replacement.GradInputBuilder) -> replacement.GradInputBuilder:
    """`build` on grad_output and weight widened to f32. The forms round to
    the spec's dtype where they write grad_input (the weave, or the phase
    inserted with stride), so grad_input is never held in f32."""
    def build_in_f32(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, *,
                     options: LoweringOptions) -> ir.Value:
        f32 = lb.element_type("f32")
        return build(spec, lb.convert(grad_output, f32), lb.convert(weight, f32), options=options)

    return build_in_f32
