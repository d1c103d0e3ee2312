"""The phases of a strided grad_input with the contraction first (col2im):
grad_output times every tap of the kernel as one matmul, then each phase
adds up its own taps' products.

    Z[n, c, k', u] = sum_f w'[f, c, k'] * dy[n, f, start + u]        (one matmul)
    dx_r[n, c, q]  = sum_j Z[n, c, k'_r + j*step, u_r + q + j*D]    (a windowed sum per phase)

where w' is the kernel reversed (`geometry.reversed_first_tap`), `start`
the first element of dy that any phase reads (`geometry.phases_span`; zero
outside dy) and `u_r` where phase r's own window starts in that span. The
matmul multiplies no inserted zero: its work is the forward convolution's
over the span, whatever the stride and kernel. What per-phase convolutions
did instead, a few taps each over the channels, is here one matmul with a
reduction over the output channels and `c * taps` columns; the phases are
left only additions: one slice of Z per tap, summed elementwise. On the
CPU the matmul is one named matmul over every image's span (`taps_first`);
on GPU targets a matmul per image that shares the taps
(`taps_first_per_image`), which reads dy in its own layout.

The parts are woven into grad_input by the phase
pattern, as per-phase convolutions are.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv import geometry
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.builders.gradients import ACCUMULATOR
from iree_bwdconv.builders.linalg_builders import PARALLEL, REDUCTION
from iree_bwdconv.spec import ConvBackwardSpec

Phases = tuple[geometry.Phase, ...]

# The matmul's columns (grad_output positions of the span, flattened) are
# padded with zeros to a multiple of this. IREE 3.13's CPU tiling takes
# tile sizes that divide a dim: the R18 stem's 1369 columns (37^2) ran its
# batch matmul at 10 GMAC/s (6.5 ms), padded to 1408 in 0.44 ms.
MATMUL_COLUMNS = 64
# GPU targets widen the last dim of the span instead, so that each image's
# columns are a multiple of this without a second pad: the n5 c3 940x1450
# layer's matmul ran in 143 us against 223 unaligned on the H100 (471x726
# widened to 471x768). Not beyond a quarter more columns: a small span's
# matmul would mostly multiply zeros.
GPU_IMAGE_COLUMNS = 64
GPU_MAX_COLUMN_GROWTH = 1.25


def phase_sums(
    spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, live: Sequence[Phases], rows: Sequence[int],
    *, images_first: bool
) -> dict[tuple[int, ...], ir.Value]:
    """{position residues: dx_r[n, c, *rows] in f32} for each live phase
    combination, each computed over every row of the position grid."""
    spans = geometry.live_spans(live, rows)
    products = (taps_first_per_image if images_first else taps_first)(spec, grad_output, weight, spans)
    return {tuple(ph.position_residue for ph in phases): _phase_sum(spec, products, phases, spans, rows, images_first)
            for phases in live}


def _span_window(spec: ConvBackwardSpec, grad_output: ir.Value, spans: Sequence[tuple[int, int]]) -> ir.Value:
    """[n, g, f, u]: the span of dy, zero outside dy, positions flattened."""
    r, groups = spec.spatial_rank, spec.groups
    window = forms.collapse_range(lb.window(grad_output, spans), 2, 2 + r)  # [n, g*f, u]
    return lb.expand_dim(window, 1, (groups, spec.out_channels_per_group))


def _reversed_taps(spec: ConvBackwardSpec, weight: ir.Value) -> ir.Value:
    """[g, c*k', f]: the kernel reversed, taps-first."""
    r, groups = spec.spatial_rank, spec.groups
    reversed_ = lb.expand_dim(lb.flip(weight, range(2, 2 + r)), 0, (groups, spec.out_channels_per_group))
    return forms.collapse_range(forms.transpose(reversed_, [0, 2, *range(3, 3 + r), 1]), 1, 2 + r)


def taps_first_per_image(
    spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, spans: Sequence[tuple[int, int]]
) -> ir.Value:
    """Z[n, g, c, *k', *u] (GPU targets): as `taps_first`, but a matmul per
    image that shares the taps, so dy is read in its own layout: laying it
    out [f, n*u] was a transpose that took 252 us of the MobileNet stem's
    614 on the H100 (its matmul 36); the whole layer ran 1.6x-2.8x faster
    on 5 of 7 narrow layers, the same on the other two."""
    groups, c_in = spec.groups, spec.in_channels_per_group
    sizes = geometry.widened_last_length([size for _, size in spans], GPU_IMAGE_COLUMNS, GPU_MAX_COLUMN_GROWTH)
    spans = [(start, size) for (start, _), size in zip(spans, sizes)]
    window = _span_window(spec, grad_output, spans)  # [n, g, f, u]
    taps = _reversed_taps(spec, weight)  # [g, m, f]
    batch, _, _, length = lb.sizes_of(window)
    n, g, m, u, f = lb.dims(5)
    maps = [lb.affine_map(5, [g, m, f]), lb.affine_map(5, [n, g, f, u]), lb.affine_map(5, [n, g, m, u])]
    init = lb.zeros([batch, groups, c_in * math.prod(spec.kernel), length], lb.element_type(ACCUMULATOR))
    products = lb.contraction(taps, window, init, maps, [PARALLEL] * 4 + [REDUCTION])
    products = forms.expand_trailing(products, sizes)  # [n, g, m, u..]
    return lb.expand_axis(products, 2, [c_in, *spec.kernel])  # [n, g, c, k'.., u..]


def taps_first(
    spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, spans: Sequence[tuple[int, int]]
) -> ir.Value:
    """Z[g, c, *k', n, *u] (the CPU): the span of dy (zero outside dy) times
    every tap of the reversed kernel, summed over the output channels of c's
    group, in f32: one named matmul (a batch matmul over groups) whose
    columns are every image's span. dy goes channels-first, [g, f, n, u],
    which for one image is its own layout; the weight is never copied per
    image (broadcasting it to a batch matmul over images copied 19 MB for
    ResNet-18's c256 k512 layer, slower than its whole direct form)."""
    groups = spec.groups
    c_in = spec.in_channels_per_group
    batch = lb.sizes_of(grad_output)[0]
    window = _span_window(spec, grad_output, spans)  # [n, g, f, u]
    if batch == 1:
        window = lb.collapse_dims(window, 0)  # [g, f, u]
    else:
        window = forms.collapse_range(forms.transpose(window, [1, 2, 0, 3]), 2, 4)  # [g, f, n*u]
    length = math.prod(n for _, n in spans)
    total = lb.sizes_of(window)[2]
    if isinstance(total, int):
        columns = -(-total // MATMUL_COLUMNS) * MATMUL_COLUMNS
        window = lb.pad(window, [0, 0, 0], [0, 0, columns - total])
    taps = _reversed_taps(spec, weight)  # [g, c*k', f]
    rows = c_in * math.prod(spec.kernel)
    if groups == 1:  # a plain matmul, not a batch of one
        taps, window = lb.collapse_dims(taps, 0), lb.collapse_dims(window, 0)
    init = lb.zeros([*lb.sizes_of(taps)[:-1], lb.sizes_of(window)[-1]], lb.element_type(ACCUMULATOR))
    products = forms.matmul(taps, window, init, named=True)  # [(g,) c*k', n*u]
    if groups == 1:
        products = lb.expand_dim(products, 0, (1, rows))
    products = lb.extract(products, [0, 0, 0], [groups, rows, total])
    products = lb.expand_dim(lb.expand_dim(products, 2, (batch, length)), 1, (c_in, rows // c_in))
    products = forms.expand_trailing(products, [n for _, n in spans])  # [g, c, k', n, u..]
    return lb.expand_axis(products, 2, spec.kernel)  # [g, c, k'.., n, u..]


def _phase_sum(
    spec: ConvBackwardSpec, products: ir.Value, phases: Phases, spans: Sequence[tuple[int, int]], rows: Sequence[int],
    images_first: bool,
) -> ir.Value:
    """dx_r[n, c, q] = sum_j Z[g, c, k'_r + j*step, n, u_r + q + j*D] (n first
    in Z where `images_first`), each term an exact slice of Z (an operand
    longer than its reads breaks once IREE folds a unit loop dim,
    docs/architecture.md)."""
    r = spec.spatial_rank
    first_taps = [geometry.reversed_first_tap(ph, k) for ph, k in zip(phases, spec.kernel)]
    starts = [ph.position_window(n)[0] - span_start for ph, n, (span_start, _) in zip(phases, rows, spans)]
    sizes = lb.sizes_of(products)
    batch, groups, c_in = (sizes[0], sizes[1], sizes[2]) if images_first else (sizes[2 + r], sizes[0], sizes[1])

    def z_index(image: Any, group_channel: list, taps: list, positions: Sequence) -> list:
        """An index (or size, or map result) of Z in its layout."""
        if images_first:
            return [image, *group_channel, *taps, *positions]
        return [*group_channel, *taps, image, *positions]

    # One operand per tap, each the slice of Z that tap reads, added in one
    # elementwise op: as a reduction over the taps (a sum pooling's form)
    # IREE's CPU code ran the 2x2 taps' sums of the demo CNN's layer 3x
    # slower than the matmul before them.
    reads = []
    for j in itertools.product(*(range(ph.taps) for ph in phases)):
        tap_offsets = [first + ji * ph.tap_step for first, ji, ph in zip(first_taps, j, phases)]
        position_offsets = [start + ji * ph.tap_dilation for start, ji, ph in zip(starts, j, phases)]
        reads.append(lb.extract(products, z_index(0, [0, 0], tap_offsets, position_offsets),
                                z_index(batch, [groups, c_in], [1] * r, rows)))
    num = 3 + r
    n, g, c, *q = lb.dims(num)
    zero = ir.AffineConstantExpr.get(0)
    read_map = lb.affine_map(num, z_index(n, [g, c], [zero] * r, q))
    out = tensor.EmptyOp([batch, groups, c_in, *rows], lb.element_type(ACCUMULATOR)).result

    @linalg.generic(reads, [out], [read_map] * len(reads) + [ir.AffineMap.get_identity(num)], [PARALLEL] * num)
    def result(*args):
        total = args[0]
        for value in args[1:-1]:
            total = arith.addf(total, value)
        return total

    return lb.collapse_dims(result, 1)

