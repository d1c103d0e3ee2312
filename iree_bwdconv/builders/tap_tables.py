"""The reversed taps a stride-phase contraction reads, gathered from the
weight: per phase (`tap_table`, `one_tap`) or every phase's in one op
(`all_tap_tables`, GPU targets)."""

from __future__ import annotations

import itertools
import math
from typing import Callable

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from iree_bwdconv import geometry
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.builders.linalg_builders import PARALLEL
from iree_bwdconv.spec import ConvBackwardSpec


def unflatten(position: ir.Value, sizes: list[int]) -> list[ir.Value]:
    """The row-major indices over `sizes` of a flat `position` (index values)."""
    index_type = ir.IndexType.get()
    indices = []
    for size in reversed(sizes):
        step = arith.constant(index_type, size)
        indices.append(arith.remui(position, step))
        position = arith.divui(position, step)
    return indices[::-1]


def one_tap(weight: ir.Value, tap: list[int]) -> ir.Value:
    """T[c, f] = w[0, f, c, *tap]: one tap of an ungrouped kernel ([1, f, c,
    *k]), row-major for `contraction_forms.weight_first_gemm`.

    It is gathered by a flat index decoded in the op's body, so that IREE
    3.13 keeps it a dispatch of its own: a copy with the tap in its
    indexing map, or a gather with (c, f) as its indices, IREE folds into
    the GEMM's map, and its CUDA configuration then tiles the GEMM by 8
    positions (5.5 ms against 2.9 on a 1x1 c512 100x100 layer). Keeping
    it behind `util.optimization_barrier` cost a host wait between two
    submissions on every call instead (docs/performance-journal.md, "Taps without
    a barrier")."""
    source = lb.collapse_dims(weight, 0)  # [f, c, *k]
    f_out, c_in = lb.sizes_of(source)[:2]
    out = tensor.EmptyOp([c_in * f_out], ir.RankedTensorType(source.type).element_type).result
    index_type = ir.IndexType.get()

    @linalg.generic([], [out], [ir.AffineMap.get_identity(1)], [PARALLEL])
    def flat(_):
        c, f = unflatten(linalg.IndexOp(0).result, [c_in, f_out])
        return tensor.extract(source, [f, c, *(arith.constant(index_type, k) for k in tap)])

    return lb.expand_axis(flat, 0, [c_in, f_out])


def all_tap_tables(spec: ConvBackwardSpec, weight: ir.Value, live: list[tuple[geometry.Phase, ...]]) -> list[ir.Value]:
    """Every live phase's reversed taps, gathered by one op into one flat
    buffer (a dispatch of its own, as `one_tap` is) that holds each
    phase's table as a contiguous block: `[c, f]` for an ungrouped phase
    of one tap (the weight-first GEMM's operand), else `[(g,) c, f, *j]`,
    the convolution's filter. A gather per phase was a dispatch per phase on
    IREE's GPU code (`tap_table`, `one_tap`), and GPU calls pay for each
    dispatch: Retinanet's grad_input took 0.31-0.33 ms on the H100 with one
    table against 0.47-0.54 with a table per phase (docs/performance-journal.md,
    "One tap table"). Kernels 5 or more wide keep a table per phase, which
    ran 1.04x-1.18x faster on four of the five such layers measured."""
    g, f_out, c_in = lb.sizes_of(weight)[:3]
    shapes = []
    for phases in live:
        taps = [ph.taps for ph in phases]
        if spec.groups == 1 and geometry.one_tap(phases):
            shapes.append([c_in, f_out])
        else:
            shapes.append(([g] if spec.groups > 1 else []) + [c_in, f_out] + taps)
    index_type = ir.IndexType.get()
    const = lambda v: arith.constant(index_type, v)  # noqa: E731

    def taps_of(block: int, local: ir.Value) -> list[ir.Value]:
        phases = live[block]
        # [g, c, f, *j] of this phase; a missing dim reads 0.
        dims = [g if spec.groups > 1 else 1, c_in, f_out, *(ph.taps for ph in phases)]
        gi, ci, fi, *ji = unflatten(local, dims)
        # Reversed taps: tap j of a phase reads k = last_tap - j * step (`Phase.tap_indices`).
        ks = [arith.subi(const(ph.last_tap), arith.muli(j, const(ph.tap_step))) for ph, j in zip(phases, ji)]
        return [gi, fi, ci, *ks]

    elem = ir.RankedTensorType(weight.type).element_type
    return gather_blocks(shapes, elem, taps_of, lambda indices: tensor.extract(weight, indices))


def gather_blocks(
    shapes: list[list[int]], elem: ir.Type, indices_of: Callable[[int, ir.Value], list[ir.Value]],
    read: Callable[[list[ir.Value]], ir.Value],
) -> list[ir.Value]:
    """One gather over a flat buffer that holds a contiguous block of each
    of `shapes`, returned as one tensor per block: the element at flat
    position `local` of block `b` is `read(indices_of(b, local))`. Decoding
    a flat index in the body is what keeps such a gather a dispatch of its
    own in IREE 3.13 (`one_tap`); a contiguous block per consumer keeps
    each consumer's operand whole."""
    sizes = [math.prod(shape) for shape in shapes]
    offsets = list(itertools.accumulate([0] + sizes[:-1]))
    out = tensor.EmptyOp([sum(sizes)], elem).result
    index_type = ir.IndexType.get()

    @linalg.generic([], [out], [ir.AffineMap.get_identity(1)], [PARALLEL])
    def flat(_):
        position = linalg.IndexOp(0).result
        chosen: list[ir.Value] = []
        for block, offset in enumerate(offsets):
            offset_value = arith.constant(index_type, offset)
            candidate = indices_of(block, arith.subi(position, offset_value))
            if block == 0:
                chosen = candidate
            else:
                here = arith.cmpi(arith.CmpIPredicate.uge, position, offset_value)
                chosen = [arith.select(here, new, old) for new, old in zip(candidate, chosen)]
        return read(chosen)

    return [lb.expand_axis(lb.extract(flat, [offset], [size]), 0, shape)
            for shape, size, offset in zip(shapes, sizes, offsets)]


def tap_table(
    weight: ir.Value, bases: list[tuple[int, ...]], steps: list[int], windows: list[int],
    kernel: tuple[int, ...], residue_dims: bool = True, channels_first: bool = False,
) -> ir.Value:
    """T[g,f,c,*r,*u] = w[g,f,c,*k] with `k = bases[dim][r] - steps[dim]*u` per
    dim, and 0 where any k falls outside the kernel. One gather serves every
    phase of the sub-pixel form; a per-phase gather has one base per dim and
    no residue dims (T[g,f,c,*u]), and with channels_first is laid out
    T[g,c,f,*u], the filter layout of a convolution producing c."""
    src = ir.RankedTensorType(weight.type)
    rank = len(bases)
    index_type = ir.IndexType.get()
    residues = [len(b) for b in bases] if residue_dims else []
    g, f, c = lb.sizes_of(weight)[:3]
    sizes = ([g, c, f] if channels_first else [g, f, c]) + residues + list(windows)
    out = tensor.EmptyOp(sizes, src.element_type).result
    identity = ir.AffineMap.get_identity(len(sizes))
    const = lambda v: arith.constant(index_type, v)  # noqa: E731
    first_window = 3 + len(residues)

    @linalg.generic([], [out], [identity], [PARALLEL] * len(sizes))
    def result(_):
        indices = [linalg.IndexOp(axis).result for axis in ((0, 2, 1) if channels_first else range(3))]
        valid = None
        for dim in range(rank):
            u = linalg.IndexOp(first_window + dim).result
            residue = linalg.IndexOp(3 + dim).result if residue_dims else None
            base = const(bases[dim][0])
            for r, b in enumerate(bases[dim][1:], start=1):
                is_r = arith.cmpi(arith.CmpIPredicate.eq, residue, const(r))
                base = arith.select(is_r, const(b), base)
            k = arith.subi(base, arith.muli(u, const(steps[dim])))
            inside = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, k, const(0)),
                                arith.cmpi(arith.CmpIPredicate.slt, k, const(kernel[dim])))
            valid = inside if valid is None else arith.andi(valid, inside)
            indices.append(arith.select(inside, k, const(0)))
        value = tensor.extract(weight, indices)
        return arith.select(valid, value, arith.constant(src.element_type, 0.0))

    return result
