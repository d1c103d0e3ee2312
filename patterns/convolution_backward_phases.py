"""aten.convolution_backward with a strided grad_input, computed without
touching the zeros a scatter would insert (stride-phase decomposition).

Positions of grad_input split by residue `(i + p) mod s` per dim; each
residue class is a stride-1 contraction over the un-scattered grad_output
with its own reversed sub-kernel (`geometry.grad_input_phases`). Each phase
result is inserted with stride s at positions `q*s + r` of a grid that
starts at `-p`, then cropped. (A `[q, residue]` grid filled by unit-stride
inserts and reshaped was tried first: IREE 3.13 folds the unit dims of such
an insert onto the wrong destination dims and drops rows.)
An empty phase (stride > kernel, or gcd(stride, dilation) > 1) emits no
contraction; its positions keep the grid's zeros. A 1x1 kernel has one
non-empty phase: its contraction runs on grad_output as it is and only the
result is scattered.
"""

from __future__ import annotations

import itertools
from typing import Optional

from torch_mlir import ir
from torch_mlir.rewrite import PatternRewriter

from iree_bwdconv import geometry, gradients
from iree_bwdconv import linalg_builders as lb
from iree_bwdconv.linalg_builders import PARALLEL, REDUCTION
from iree_bwdconv.spec import ConvBackwardSpec

ROOT = "torch.aten.convolution_backward"
BENEFIT = 2  # preferred over the direct form wherever it applies


def _phase_contraction(
    spec: ConvBackwardSpec, dy: ir.Value, weight: ir.Value, phases: tuple[geometry.Phase, ...]
) -> ir.Value:
    """dx_r[n,g,c,m] = sum_{f,j} dy[n,g,f,dy_start + m + D*j] * taps[g,f,c,j] in f32."""
    r, groups = spec.spatial_rank, spec.groups
    c_in = spec.in_channels // groups
    taps = lb.select_taps(weight, {
        3 + axis: (ph.first_tap + (ph.taps - 1) * ph.tap_step, ph.tap_step, ph.taps)
        for axis, ph in enumerate(phases)
    })
    low = [0, 0, 0] + [-ph.dy_start for ph in phases]
    high = [0, 0, 0] + [ph.dy_start + ph.dy_length - o for ph, o in zip(phases, spec.output_spatial)]
    window = lb.pad_or_crop(dy, low, high)

    num = 4 + 2 * r
    n, g, c, *rest = lb.dims(num)
    m, f, j = rest[:r], rest[r], rest[r + 1 :]
    maps = [
        lb.affine_map(num, [n, g, f, *(mi + ji * ph.tap_dilation for mi, ji, ph in zip(m, j, phases))]),
        lb.affine_map(num, [g, f, c, *j]),
        lb.affine_map(num, [n, g, c, *m]),
    ]
    batch = lb.sizes_of(dy)[0]
    init = lb.zeros([batch, groups, c_in, *(ph.count for ph in phases)], lb.element_type(gradients.ACCUMULATOR))
    return lb.contraction(window, taps, init, maps, [PARALLEL] * (3 + r) + [REDUCTION] * (1 + r))


def grad_input_phases(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value) -> ir.Value:
    r, groups = spec.spatial_rank, spec.groups
    c_in, f_out = spec.in_channels // groups, spec.out_channels // groups
    per_dim = [
        geometry.grad_input_phases(i, k, s, p, d)
        for i, k, s, p, d in zip(spec.input_spatial, spec.kernel, spec.stride, spec.padding, spec.dilation)
    ]
    rows = [geometry.phase_grid_length(i, s, p) for i, s, p in zip(spec.input_spatial, spec.stride, spec.padding)]
    dy = lb.expand_dim(grad_output, 1, (groups, f_out))
    w = lb.expand_dim(weight, 0, (groups, f_out))
    batch = lb.sizes_of(grad_output)[0]
    grid_dims = [q * s for q, s in zip(rows, spec.stride)]
    grid = lb.zeros([batch, groups, c_in, *grid_dims], lb.element_type(gradients.ACCUMULATOR))
    for phases in itertools.product(*per_dim):
        if any(ph.is_empty for ph in phases):
            continue
        result = _phase_contraction(spec, dy, w, phases)
        offsets = [0, 0, 0] + [ph.first_q * s + ph.residue for ph, s in zip(phases, spec.stride)]
        grid = lb.insert_strided(result, grid, offsets, [1, 1, 1, *spec.stride])
    grid = lb.collapse_dims(grid, 1)
    positions = lb.extract(grid, [0, 0, *spec.padding], [batch, spec.in_channels, *spec.input_spatial])
    return lb.convert(positions, lb.element_type(spec.dtype))


def rewrite(op: ir.Operation, rewriter: PatternRewriter) -> Optional[str]:
    """Replace the op; return None when rewritten, else the reason it was not."""
    spec, why_not = gradients.check_convolution_backward(op)
    if spec is None:
        return why_not
    if spec.transposed:
        return "transposed=True: grad_input is already a strided convolution without zeros"
    if all(s == 1 for s in spec.stride):
        return "stride 1 in every dim: there are no inserted zeros to avoid"
    if not spec.output_mask[0]:
        return "grad_input is not asked for"
    gradients.replace_convolution_backward(op, rewriter, spec, grad_input_phases)
    return None
