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
that insert: `plan.grad_input.woven_axes`); on the CPU it is a named matmul between transposes
(`contraction_forms.im2col_matmul`), woven with zeros.
"""

from __future__ import annotations

from typing import Optional

from torch_mlir import ir
from torch_mlir.rewrite import PatternRewriter

from iree_bwdconv.builders import col2im, gradients, replacement, tap_tables
from iree_bwdconv.compiler import dispatch_regions
from iree_bwdconv import geometry
from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.builders.linalg_builders import PARALLEL, REDUCTION
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import Plan, plan as plan_of
from iree_bwdconv.plan.rules import RULES
from iree_bwdconv.plan.grad_input import live_phases, position_residues
from iree_bwdconv.spec import ConvBackwardSpec

ROOT = "torch.aten.convolution_backward"
NAME = "convolution_backward_phases"
BENEFIT = 2  # the plan decides which pattern matches; the benefit only orders the tries


def _phase_contraction(
    spec: ConvBackwardSpec, window: ir.Value, weight: ir.Value, phases: tuple[geometry.Phase, ...], rows: list[int],
    table: Optional[ir.Value] = None, *, one_tap_gemm: bool
) -> ir.Value:
    """dx_r[n,g,c,q] = sum_{f,j} window[n,g,f,q + D*j] * T_r[g,c,f,j] in f32
    for `rows` rows, where `window` is the part of dy the phase reads for
    them (`lb.window`) and T_r the phase's own reversed sub-kernel (the
    weight itself for a 1x1 kernel), as a convolution (`contraction_forms.conv`).
    Without groups, dy is [n,f,..] and the result [n,c,..]. A phase of one
    tap is a GEMM with the weight first instead where `one_tap_gemm`
    (`plan.grad_input.phase_one_tap_gemm`; an ungrouped one's weight from
    `tap_tables.one_tap`): the convolution-shaped 1-tap phase was the part
    of this form IREE 3.13's CUDA code computed wrongly in f16, and grouped
    ones where they are stored in place.

    Without `table` each phase gathers its own taps. A `table` from
    `tap_tables.all_tap_tables` is a contiguous block of one buffer: slicing one
    shared table of every tap instead left a non-contiguous slice inside the
    contraction's dispatch, which IREE 3.13's CUDA backend fails to
    bufferize (5x5 stride 2)."""
    r, groups = spec.spatial_rank, spec.groups
    c_in = spec.in_channels_per_group
    channels = [groups, c_in] if groups > 1 else [c_in]
    init = lb.zeros([lb.sizes_of(window)[0], *channels, *rows], lb.element_type(gradients.ACCUMULATOR))
    gemm = one_tap_gemm and geometry.one_tap(phases)
    if table is not None:  # [c, f] for an ungrouped weight-first GEMM, else the convolution's [(g,) c, f, *j]
        if ir.RankedTensorType(table.type).rank == 2:
            return forms.weight_first_gemm(table, window, init)
        if gemm:
            return forms.weight_first_gemm(_without_tap_dims(table, r), window, init)
        return forms.conv(window, table, init, [1] * r, [ph.tap_dilation for ph in phases])
    if gemm and groups == 1:
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
    if gemm:
        return forms.weight_first_gemm(_without_tap_dims(taps, r), window, init)
    return forms.conv(window, taps, init, [1] * r, [ph.tap_dilation for ph in phases])


def _without_tap_dims(taps: ir.Value, r: int) -> ir.Value:
    """A one-tap phase's table [(g,) c, f, 1...] as the weight-first GEMM's
    [(g,) c, f]: its `r` unit tap dims merged into f."""
    for _ in range(r):
        taps = lb.collapse_dims(taps, ir.RankedTensorType(taps.type).rank - 2)
    return taps


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


def grad_input_phases(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, *, plan: Plan) -> ir.Value:
    """Every live phase over the whole position grid, woven into it by one
    elementwise op; a single live phase is inserted with stride into a zero
    grad_input instead. `plan.grad_input` says how each part is built."""
    r, groups = spec.spatial_rank, spec.groups
    f_out = spec.out_channels_per_group
    choice = plan.grad_input
    live, rows = live_phases(spec)
    if not live:
        return gradients.zeros_like_input(spec, grad_output)
    dy = lb.expand_dim(grad_output, 1, (groups, f_out)) if groups > 1 else grad_output
    w = lb.expand_dim(weight, 0, (groups, f_out))
    lead = ir.RankedTensorType(dy.type).rank - r
    dtype = lb.element_type(spec.dtype)
    batch = lb.sizes_of(grad_output)[0]
    if choice.one_matmul:
        (phases,) = live
        window = lb.window(grad_output, [ph.position_window(n) for ph, n in zip(phases, rows)])
        part = forms.im2col_matmul(window, weight, [1] * r, lb.element_type(gradients.ACCUMULATOR))
        return _weave(spec, {position_residues(phases): part}, batch, choice.gather_weave)
    if len(live) == 1:
        # One live phase (a 1x1 kernel): its own rows alone go into a zero
        # grad_input with stride s. On the H100 this ran 1.85 ms against the
        # grid weave's 3.07 and a gather into grad_input's layout 2.9
        # (1x1 s2 n32 c1024 k2048 50x50), on the CPU 0.45 against 0.53.
        (phases,) = live
        counts = [ph.count for ph in phases]
        window = lb.window(dy, [ph.grid_window(ph.count, ph.first_q) for ph in phases])
        if choice.weight_first:
            part = _weight_first_part(spec, window, w, counts)
        else:
            part = _phase_contraction(spec, window, w, phases, counts, one_tap_gemm=choice.one_tap_gemm)
        dx = lb.zeros(lb.sizes_of(part)[:lead] + list(spec.input_spatial), dtype)
        offsets = [ph.first_position for ph in phases]
        strides = _insert_strides(spec, counts)
        axes = list(choice.woven_axes)
        if axes:
            rooms = [i - o for i, o in zip(spec.input_spatial, offsets)]
            part = _woven_along(part, axes, strides, rooms, dtype)
            strides = [1] * r
        dx = lb.insert_strided(lb.convert(part, dtype), dx, [0] * lead + offsets, [1] * lead + strides)
        return lb.collapse_dims(dx, 1) if groups > 1 else dx
    if choice.stored_in_place:
        return _stored_in_place(spec, dy, w, live, plan)
    windows = _phase_windows(spec, dy, live, rows)
    tables = tap_tables.all_tap_tables(spec, w, live) if choice.one_table else [None] * len(live)
    parts = {}
    for phases, window, table in zip(live, windows, tables):
        window, taps, table = _widened_where_planned(phases, window, w, table, plan)
        parts[position_residues(phases)] = _phase_contraction(spec, window, taps, phases, rows, table,
                                                              one_tap_gemm=choice.one_tap_gemm)
    return _weave(spec, parts, batch, choice.gather_weave)


def _widened_where_planned(phases: tuple[geometry.Phase, ...], window: ir.Value, weight: ir.Value,
                           table: Optional[ir.Value], plan: Plan) -> tuple[ir.Value, ir.Value, Optional[ir.Value]]:
    """The phase's window, weight and tap table, in f32 where the plan widens the phase."""
    if position_residues(phases) not in plan.grad_input.widened_phases:
        return window, weight, table
    f32 = lb.element_type("f32")
    return lb.convert(window, f32), lb.convert(weight, f32), None if table is None else lb.convert(table, f32)


def _stored_in_place(spec: ConvBackwardSpec, dy: ir.Value, weight: ir.Value, live: list[tuple[geometry.Phase, ...]],
                     plan: Plan) -> ir.Value:
    """Each live phase over its own positions alone, read from a window of
    dy padded for it alone, rounded and inserted with the stride into
    grad_input, the insert marked to be one dispatch with all that computes
    it (`dispatch_regions`): no weave, and no padded span of dy in memory.
    grad_input starts uninitialized where the phases write all of it, as
    zeros where positions no phase reaches are left."""
    r = spec.spatial_rank
    lead = ir.RankedTensorType(dy.type).rank - r
    dtype = lb.element_type(spec.dtype)
    live = _one_tap_phases_inside(spec, live)
    if not live:
        return gradients.zeros_like_input(spec, dy)
    written = geometry.writes_every_position(live, spec.input_spatial)
    tables = tap_tables.all_tap_tables(spec, weight, live) if plan.grad_input.one_table else [None] * len(live)
    dx = None
    for phases, table in zip(live, tables):
        counts = [ph.count for ph in phases]
        window = lb.window(dy, [ph.grid_window(ph.count, ph.first_q) for ph in phases])
        window, taps, table = _widened_where_planned(phases, window, weight, table, plan)
        part = _phase_contraction(spec, window, taps, phases, counts, table, one_tap_gemm=plan.grad_input.one_tap_gemm)
        if dx is None:
            dx = (lb.empty if written else lb.zeros)(lb.sizes_of(part)[:lead] + list(spec.input_spatial), dtype)
        offsets = [ph.first_position for ph in phases]
        strides = _insert_strides(spec, counts)
        dx = lb.insert_strided(lb.convert(part, dtype), dx, [0] * lead + offsets, [1] * lead + strides)
        dx.owner.attributes[dispatch_regions.MARK] = ir.UnitAttr.get()
    return lb.collapse_dims(dx, 1) if spec.groups > 1 else dx


def _one_tap_phases_inside(spec: ConvBackwardSpec,
                           live: list[tuple[geometry.Phase, ...]]) -> list[tuple[geometry.Phase, ...]]:
    """`live` with each phase of one tap (a weight-first GEMM on GPUs) cut
    to the rows whose tap reads inside dy (`geometry.one_tap_inside`), and
    left out where none does: the rows cut away read only padding, and
    grad_input's zeros hold them. IREE 3.13's CUDA code for such a GEMM in
    its region stored wrong values in the rows of its window's padding
    (IREE fault `cuda_padded_gemm_store`)."""
    cut = []
    for phases in live:
        if geometry.one_tap(phases):
            phases = tuple(geometry.one_tap_inside(ph, n) for ph, n in zip(phases, spec.output_spatial))
            if any(ph.count == 0 for ph in phases):
                continue
        cut.append(phases)
    return cut


def _insert_strides(spec: ConvBackwardSpec, counts: list[int]) -> list[int]:
    """The strides of a phase's insert into grad_input: a dim of one row
    takes no step (IREE's CUDA code failed on a strided insert of one row
    fused into the f16 GEMM: 1-D, size 5, stride 3 or 4)."""
    return [1 if q == 1 else s for s, q in zip(spec.stride, counts)]


def grad_input_col2im(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, *, plan: Plan) -> ir.Value:
    """Every live phase summed from one taps-first matmul (`col2im`), woven
    into the grid as per-phase convolutions are."""
    live, rows = live_phases(spec)
    if not live:
        return gradients.zeros_like_input(spec, grad_output)
    parts = col2im.phase_sums(spec, grad_output, weight, live, rows, images_first=plan.grad_input.images_first)
    return _weave(spec, parts, lb.sizes_of(grad_output)[0], plan.grad_input.gather_weave)


def _weave(spec: ConvBackwardSpec, parts: dict[tuple[int, ...], ir.Value], batch: lb.Size, gather: bool) -> ir.Value:
    """The phases, keyed by position residue, woven into grad_input: by a
    gather where `gather` (per-phase on GPU targets), else into the position grid,
    collapsed to positions q*s + rho and cut to grad_input's size (nothing
    to cut where the strides divide it). The gather reads each phase's
    element once where the grid weave reads every phase (9 at stride 3 in
    2-D: 600 us of 920 on the H100) and needs no cut; col2im keeps the
    grid, into which IREE fuses col2im's sums of taps (the gather left them
    a dispatch per phase: 1.4x slower on the narrow layers)."""
    r = spec.spatial_rank
    if gather:
        dx = forms.interleave_by_gather(parts, spec.stride, spec.input_spatial, lb.element_type(spec.dtype))
        return lb.collapse_dims(dx, 1) if ir.RankedTensorType(dx.type).rank == 3 + r else dx
    grid = forms.interleave(parts, spec.stride, lb.element_type(spec.dtype))
    lead = ir.RankedTensorType(grid.type).rank - 2 * r
    for axis in range(r):  # [.., q, s, ..] -> [.., q*s, ..]
        grid = lb.collapse_dims(grid, lead + axis)
    if lead == 3:  # [n, g, c, ..]: per-phase parts keep the group dim
        grid = lb.collapse_dims(grid, 1)
    return lb.extract(grid, [0] * (2 + r), [batch, spec.in_channels, *spec.input_spatial])


def grad_input_subpixel(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, *, plan: Plan) -> ir.Value:
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


def rewrite(op: ir.Operation, rewriter: PatternRewriter, *, options: LoweringOptions) -> Optional[str]:
    """Replace the op where its plan picks a strided form; return None when
    rewritten, else the reason it was not."""
    spec, why_not = replacement.check_convolution_backward(op)
    if spec is None:
        return why_not
    plan = plan_of(spec, options)
    if plan.pattern != NAME:
        if plan.grad_input is None:
            return "grad_input is not asked for: the convolution_backward pattern lowers the others"
        rule = next(name for name in plan.rules if RULES[name].gradient == "grad_input")
        return f"the plan's grad_input form is {plan.grad_input.form} ({rule}: {RULES[rule].says})"
    replacement.replace_convolution_backward(op, rewriter, plan, builder(plan))
    return None


def builder(plan: Plan) -> replacement.GradInputBuilder:
    """The builder of the plan's strided grad_input form, on operands
    widened to f32 where the plan says."""
    build = BUILDERS[plan.grad_input.form]
    return _in_f32(build) if plan.grad_input.in_f32 else build


def _in_f32(build: replacement.GradInputBuilder) -> replacement.GradInputBuilder:
    """`build` on grad_output and weight widened to f32. The forms round to
    the spec's dtype where they write grad_input (the weave, or the phase
    inserted with stride), so grad_input is never held in f32."""
    def build_in_f32(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, *, plan: Plan) -> ir.Value:
        f32 = lb.element_type("f32")
        return build(spec, lb.convert(grad_output, f32), lb.convert(weight, f32), plan=plan)

    return build_in_f32


BUILDERS = {"sub-pixel": grad_input_subpixel, "col2im": grad_input_col2im, "per-phase": grad_input_phases}
