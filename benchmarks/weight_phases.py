"""grad_weight of a strided convolution as stride-1 contractions, one per
residue class of the kernel's taps modulo the stride, as a GPU form to
measure (`gpu_weight_forms.py`, "stride-phase"); not the lowering's.

The taps `k = rho + j*s` of one dim (dilation 1) read the input at
`o*s + k = (o + j)*s + rho`: over the input's residue class `rho` they are
a stride-1 kernel. The classes are gathered into one buffer by one op
(over a flat index, a dispatch of its own in IREE 3.13, as
`tap_tables.one_tap`); each phase is the unstrided contraction
`gradients.grad_weight_contraction` over its class, and the phases' taps
are woven into the kernel by `contraction_forms.interleave_by_gather`. A
1x1 kernel has one phase: the input subsampled at the stride.

Right on the CPU (`tests/test_weight_phases.py`), wrong in f16/bf16 on the
H100 on every layer with a phase of one tap in some dim, as IREE 3.13's
CUDA code computes the 1x1 weight-gradient contraction itself
(docs/performance-journal.md, "Read first"), so the lowering keeps im2col.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Callable

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.plan import Plan
from iree_bwdconv.plan import grad_weight as gw
from iree_bwdconv.spec import ConvBackwardSpec
from iree_bwdconv.builders.tap_tables import gather_blocks, unflatten


@dataclass(frozen=True)
class WeightPhase:
    """The taps `residue + j*stride` (`j < taps`) of one kernel dim."""

    residue: int
    taps: int

    def source_length(self, windows: int) -> int:
        """Rows of the residue class that `windows` outputs read."""
        return windows + self.taps - 1


def weight_phases(kernel: int, stride: int) -> list[WeightPhase]:
    """One phase per residue a tap has modulo `stride` (none past the
    kernel: with stride > kernel the other residues are never read)."""
    return [WeightPhase(residue, -(-(kernel - residue) // stride)) for residue in range(min(stride, kernel))]


def _residue_classes(spec: ConvBackwardSpec, input_: ir.Value,
                     combos: list[tuple[WeightPhase, ...]]) -> list[ir.Value]:
    """Each phase's class of the input, `x_rho[n, c, q...] = x[n, c, q*s +
    rho - p]` per dim (zero outside x) for the rows its outputs read, each
    a block of one gather (`tap_tables.gather_blocks`: an exact operand for
    each contraction, where a slice of a larger block would leave a
    non-contiguous read in the contraction's dispatch)."""
    n, c, *size = lb.sizes_of(input_)
    shapes = [[n, c, *(ph.source_length(o) for ph, o in zip(phases, spec.output_spatial))] for phases in combos]
    elem = ir.RankedTensorType(input_.type).element_type
    index = ir.IndexType.get()
    const = lambda v: arith.constant(index, v)  # noqa: E731

    def reads_of(block: int, local: ir.Value) -> list[ir.Value]:
        image, channel, *q = unflatten(local, shapes[block])
        # Positions in the padded input: q*s + rho per dim.
        return [image, channel, *(arith.addi(arith.muli(q_a, const(s)), const(ph.residue))
                                  for q_a, s, ph in zip(q, spec.stride, combos[block]))]

    def read(indices: list[ir.Value]) -> ir.Value:
        image, channel, *reads = indices
        inside = None
        for position, p, length in zip(reads, spec.padding, size):
            within = arith.andi(arith.cmpi(arith.CmpIPredicate.uge, position, const(p)),
                                arith.cmpi(arith.CmpIPredicate.ult, position, const(p + length)))
            inside = within if inside is None else arith.andi(inside, within)
        # A read in the padding takes element 0 and is then replaced by zero.
        clamped = [arith.select(inside, arith.subi(position, const(p)), const(0))
                   for position, p in zip(reads, spec.padding)]
        return arith.select(inside, tensor.extract(input_, [image, channel, *clamped]), arith.constant(elem, 0.0))

    return gather_blocks(shapes, elem, reads_of, read)


# (spec, plain, windowed, rows, columns, split) -> dw: `gradients.grad_weight_contraction`.
Contraction = Callable[..., ir.Value]


def grad_weight(spec: ConvBackwardSpec, grad_output: ir.Value, input_: ir.Value, contraction: Contraction, *,
                plan: Plan) -> ir.Value:
    """dw[f, c, k] over every phase: each phase's taps `k = rho + j*s` per dim
    from the stride-1 `contraction` of dy with the input's class `rho`, split
    by images as the plan's rule splits that phase (`plan.grad_weight.image_split`)."""
    combos = list(itertools.product(*(weight_phases(k, s) for k, s in zip(spec.kernel, spec.stride))))
    classes = _residue_classes(spec, input_, combos)
    dy = lb.expand_dim(grad_output, 1, (1, spec.out_channels))  # [n, g, f, o...]
    c = spec.in_channels
    unit = (1,) * spec.spatial_rank
    longest = [ph.taps for ph in combos[0]]  # residue 0 has the most taps in every dim
    parts: dict[tuple[int, ...], ir.Value] = {}
    for phases, source in zip(combos, classes):
        taps = [ph.taps for ph in phases]
        # The phase as a layer of its own: its taps, stride 1.
        phase = dataclasses.replace(spec, weight_shape=(spec.out_channels, c, *taps), stride=unit)
        split = gw.image_split(phase, plan.options, plan.tuning)
        part = contraction(phase, dy, lb.expand_dim(source, 1, (1, c)), spec.out_channels, c, split)
        parts[tuple(ph.residue for ph in phases)] = lb.pad(part, [0] * (2 + len(taps)),
                                                           [0, 0] + [t - own for t, own in zip(longest, taps)])
    if len(parts) == 1:  # one phase per dim: its taps are the kernel's
        return next(iter(parts.values()))
    return forms.interleave_by_gather(parts, spec.stride, spec.kernel, lb.element_type(spec.dtype))
