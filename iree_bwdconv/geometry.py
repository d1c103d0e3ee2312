"""Index arithmetic of convolution gradients, for any number of spatial dims.

Pure Python over sequences of ints: no MLIR, no torch. Every size, padding
and offset that the rewrite patterns put into IR comes from here, so that
this module alone carries the arithmetic that vendor libraries got wrong
(see docs/architecture.md). Per-dim functions take ints; the `*_nd` helpers
map them over sequences.

One spatial dim of the forward convolution reads
    y[o] = sum_k x[o*s + k*d - p] * w[k],   0 <= o < O,
and a transposed convolution is its adjoint with respect to x.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Iterator, Sequence


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a forward convolution (may be <= 0 for bad input)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def transposed_output_size(
    size: int, kernel: int, stride: int, padding: int, dilation: int, output_padding: int
) -> int:
    """Output length of a transposed convolution of an input of length `size`."""
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1


def span_padding(source: int, start: int, length: int) -> tuple[int, int]:
    """(low, high) that turn a tensor of length `source` into exactly its
    elements `start .. start+length-1`, zeros where those fall outside it.
    A negative amount crops instead of padding."""
    return -start, start + length - source


def window_padding(
    source: int, windows: int, kernel: int, stride: int, padding: int, dilation: int
) -> tuple[int, int]:
    """(low, high) padding of a tensor of length `source` that is read at
    `o*stride + k*dilation - padding` for `o < windows`, `k < kernel`, such
    that the padded tensor, read at `o*stride + k*dilation`, spans exactly
    the reads: low = padding, and a negative high crops the tail that no
    read reaches.

    Exactness matters: once IREE folds a unit loop dim, `o*s + k*d` becomes
    a plain `k`, and an operand longer than K would then define the loop's
    range (seen as "inferred ... dimension to be 6, but found 4").
    """
    last_read = (windows - 1) * stride + (kernel - 1) * dilation
    return span_padding(source, -padding, last_read + 1)


def reads_only_padding(
    source: int, windows: int, kernel: int, stride: int, padding: int, dilation: int
) -> bool:
    """True when no read `o*s + k*d - p` (o < windows, k < kernel) lands in
    [0, source): every product has a padding zero, below the source or
    beyond it, and both gradients are zero. Tap by tap: its reads step by
    s from k*d - p, and the first at or past 0 must be in the source."""
    for k in range(kernel):
        first = k * dilation - padding
        o = max(0, _ceil_div(-first, stride))
        if o < windows and first + o * stride < source:
            return False
    return True


def slides_no_window(kernel: Sequence[int], output_sizes: Sequence[int]) -> bool:
    """Whether a convolution slides its window along no dim: each dim has
    one tap or one output position. Folded to their unit dims, its loops
    are a 1x1 kernel's (one output position: the taps read fixed rows, a
    reduction like the channels')."""
    return all(k == 1 or o == 1 for k, o in zip(kernel, output_sizes))


def windowless_reads(kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
                     output_sizes: Sequence[int]) -> tuple[list[int], list[int]]:
    """For a convolution that slides its window along no dim
    (`slides_no_window`): per dim, the step between the input rows it reads
    and their count, from row 0 of its (padded) input. One tap: the output
    positions, a stride apart; one output position: the taps, a dilation
    apart. Over those rows the convolution has no stride and no dilation."""
    steps = [s if k == 1 else d for k, s, d in zip(kernel, stride, dilation)]
    rows = [o if k == 1 else k for k, o in zip(kernel, output_sizes)]
    return steps, rows


def window_reads_source(
    source: int, windows: int, kernel: int, stride: int, padding: int, dilation: int
) -> bool:
    """True when the kernel has one tap and its reads o*s - p, over the
    windows o in order, are the source positions 0 .. source-1: an im2col
    gather along this dim would copy the source as it is."""
    return kernel == 1 and padding == 0 and windows == source and (stride == 1 or source == 1)


@dataclass(frozen=True)
class ScatterPlacement:
    """Where grad_output lands in the zero-inserted, padded buffer that the
    direct grad_input form convolves with the reversed kernel.

    Elements `first..last-1` of grad_output (the others fall entirely into
    the padding and touch no input position) go to `offset + j*stride`,
    `j = 0..last-first-1`, in a zero buffer of length `length`.
    """

    first: int
    last: int
    offset: int
    length: int


def scatter_placement(
    input_size: int, output_size: int, kernel: int, stride: int, padding: int, dilation: int
) -> ScatterPlacement:
    """Placement for `dx[i] = sum_k buf[i + d*k] * w[K-1-k]`, `0 <= i < I`.

    Grad_output element o contributes to input position `o*s - p + k*d`, so
    it sits at `buf[o*s - p + d*(K-1)]`; the buffer spans every read,
    `[0, I + d*(K-1))`.
    """
    low = dilation * (kernel - 1) - padding
    length = input_size + dilation * (kernel - 1)
    first = max(0, _ceil_div(-low, stride))
    last = min(output_size, (length - 1 - low) // stride + 1)
    last = max(first, last)
    return ScatterPlacement(first=first, last=last, offset=low + first * stride, length=length)


def conv_output_size_nd(
    sizes: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
) -> tuple[int, ...]:
    return tuple(map(conv_output_size, sizes, kernel, stride, padding, dilation))


def transposed_output_size_nd(
    sizes: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    output_padding: Sequence[int],
) -> tuple[int, ...]:
    return tuple(
        map(transposed_output_size, sizes, kernel, stride, padding, dilation, output_padding)
    )


def window_padding_nd(
    source: Sequence[int],
    windows: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Per-dim `window_padding`, returned as (lows, highs); highs may be < 0."""
    pairs = list(map(window_padding, source, windows, kernel, stride, padding, dilation))
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def scatter_placement_nd(
    input_size: Sequence[int],
    output_size: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
) -> tuple[ScatterPlacement, ...]:
    return tuple(map(scatter_placement, input_size, output_size, kernel, stride, padding, dilation))



def transposed_from_insertion(
    offset: int, inserted: int, length: int, kernel: int, stride: int, dilation: int
) -> tuple[int, int] | None:
    """(padding, output_padding) of the transposed convolution that a
    buffer of `length` zeros holding `inserted` elements at
    `offset + j*stride`, convolved at stride 1 with `kernel` taps `dilation`
    apart, computes; None where it is not one (an offset past the kernel's
    reach, or no window at all). The inverse of `scatter_placement` where
    every element is placed: `buf[o*s - p + d*(K-1)]` puts the first at
    `d*(K-1) - p`, and the buffer ends `d*(K-1) - p + output_padding` rows
    after the last. With an output_padding of a stride or more (StableHLO's
    padding allows any), the convolution it transposes has more grad_output
    rows (`conv_output_size`) than the buffer holds data: zeros."""
    padding = dilation * (kernel - 1) - offset
    after_last = length - (offset + stride * (inserted - 1) + 1)
    output_padding = after_last - offset
    if inserted < 1 or padding < 0 or output_padding < 0 or length - dilation * (kernel - 1) < 1:
        return None
    return padding, output_padding


@dataclass(frozen=True)
class Phase:
    """One residue class of grad_input positions along one dim.

    Positions `i = (first_q + m)*stride + residue - padding`, `m < count`, get
    `dx[i] = sum_{j < taps} dy[dy_start + m + j*tap_dilation] * w[first_tap + (taps-1-j)*tap_step]`:
    a stride-1 convolution of the un-scattered dy (reads outside it are zero)
    with the phase's taps in reverse order. `taps == 0` is an empty phase:
    those positions get zeros and no contraction.
    """

    residue: int
    taps: int
    first_tap: int
    tap_step: int
    tap_dilation: int
    first_q: int
    count: int
    dy_start: int
    stride: int
    padding: int

    @property
    def is_empty(self) -> bool:
        return self.taps == 0 or self.count == 0

    @property
    def last_tap(self) -> int:
        """The kernel tap the contraction reads first (its taps reversed)."""
        return self.first_tap + (self.taps - 1) * self.tap_step

    @property
    def tap_indices(self) -> tuple[int, ...]:
        """Kernel taps in the order the contraction reads them (reversed)."""
        return tuple(self.last_tap - j * self.tap_step for j in range(self.taps))

    def reads_dy(self, output_size: int) -> bool:
        """Whether the phase's dy window overlaps dy at all (of length
        `output_size`); if not, every product reads padding and the phase's
        positions are zero, like an empty phase's."""
        return not self.is_empty and self.dy_start < output_size and self.dy_start + self.dy_length > 0

    @property
    def dy_length(self) -> int:
        """Elements of dy (from dy_start, zero outside dy) the phase reads."""
        return self.count + (self.taps - 1) * self.tap_dilation if self.taps else 0

    def grid_window(self, rows: int, first_row: int = 0) -> tuple[int, int]:
        """(start, length) of the dy window (zero outside dy) that computes the
        phase for grid rows first_row <= q < first_row + rows, e.g. every row
        of the grid (`phase_grid_length`), not only its own `count` rows: row
        q reads `dy[start + (q - first_row) + j*tap_dilation]`. Rows beyond the
        phase's own hold positions outside [0, I) or reading only padding
        (zero), and are cropped or are right as they are."""
        return self.dy_start - self.first_q + first_row, rows + (self.taps - 1) * self.tap_dilation

    @property
    def first_position(self) -> int:
        """The phase's first position `first_q*stride + residue - padding`
        in grad_input; the others follow every `stride`."""
        return self.first_q * self.stride + self.residue - self.padding

    @property
    def position_residue(self) -> int:
        """rho = i mod s of the phase's positions i: its column of the
        position grid (`position_grid_length`)."""
        return (self.residue - self.padding) % self.stride

    def position_window(self, rows: int) -> tuple[int, int]:
        """`grid_window` for position-grid rows 0 <= q < rows, which hold
        positions i = q*s + position_residue. Row 0 holds i = rho, which is
        the phase's own row (rho + p) // s of i + p = q*s + r."""
        return self.grid_window(rows, (self.position_residue + self.padding) // self.stride)


def grad_input_phases(
    input_size: int, kernel: int, stride: int, padding: int, dilation: int
) -> tuple[Phase, ...]:
    """The `stride` phases of grad_input along one dim, by residue r of
    `i + p` modulo s. Tap k serves residue r iff `k*d = r (mod s)`; with
    g = gcd(d, s) those are `k = k0 + j*(s/g)`, and residues that are not
    multiples of g have none (docs/architecture.md derives the rest)."""
    g = math.gcd(dilation, stride)
    step, tap_dilation = stride // g, dilation // g
    phases = []
    for r in range(stride):
        first_q = _ceil_div(padding - r, stride)
        last_q = (input_size - 1 + padding - r) // stride
        count = max(0, last_q - first_q + 1)
        k0 = next((k for k in range(step) if (k * dilation - r) % stride == 0), None)
        if k0 is None or k0 >= kernel:
            phases.append(Phase(r, 0, 0, step, tap_dilation, first_q, count, 0, stride, padding))
            continue
        taps = _ceil_div(kernel - k0, step)
        t0 = (k0 * dilation - r) // stride
        # m = 0 with the last tap (j = taps-1 in forward order) reads the lowest dy index.
        dy_start = first_q - t0 - (taps - 1) * tap_dilation
        phases.append(Phase(r, taps, k0, step, tap_dilation, first_q, count, dy_start, stride, padding))
    return tuple(phases)


def phases_span(phases: Sequence[Phase], rows: int) -> tuple[int, int]:
    """(start, length) of the dy window (zero outside dy) that all of the
    non-empty `phases` read over `rows` position-grid rows: the union of
    their `position_window`s. The col2im form multiplies dy by every tap once
    over this window and the per-phase form pads it once; each phase reads
    its own part from there."""
    windows = [ph.position_window(rows) for ph in phases if not ph.is_empty]
    if not windows:
        raise ValueError("phases_span needs a non-empty phase")
    start = min(s for s, _ in windows)
    return start, max(s + n for s, n in windows) - start


def live_spans(live: Sequence[Sequence[Phase]], rows: Sequence[int]) -> list[tuple[int, int]]:
    """Per dim, the `phases_span` of the phases that `live` (combinations of
    one phase per dim) use there, over that dim's `rows`."""
    return [phases_span([phases[axis] for phases in live], n) for axis, n in enumerate(rows)]


def one_tap(phases: Sequence[Phase]) -> bool:
    """Whether a combination of phases (one per dim) reads one tap of the
    kernel: a 1x1 convolution over its positions."""
    return all(ph.taps == 1 for ph in phases)


def one_tap_inside(phase: Phase, output_size: int) -> Phase:
    """A phase of one tap cut to the positions whose tap reads inside dy
    (of length `output_size`): the others read only padding and are zero.
    Count 0 where none does; a phase of more taps as it is."""
    if phase.taps != 1:
        return phase
    first = max(0, -phase.dy_start)
    last = min(phase.count, output_size - phase.dy_start)
    if last <= first:
        return dataclasses.replace(phase, count=0)
    return dataclasses.replace(phase, first_q=phase.first_q + first, count=last - first,
                               dy_start=phase.dy_start + first)


def writes_every_position(live: Sequence[Sequence[Phase]], input_sizes: Sequence[int]) -> bool:
    """Whether the `live` combinations of phases (one per dim) write every
    grad_input position between them, leaving none that only zeros fill.
    Their positions are disjoint, so counting them is enough."""
    return sum(math.prod(ph.count for ph in phases) for phases in live) == math.prod(input_sizes)


def reversed_first_tap(phase: Phase, kernel: int) -> int:
    """Where the phase's first read (j = 0) finds its tap in the kernel
    reversed (`k' = K-1-k`); read j finds it at `+ j*tap_step`. Reversed, the
    tap index grows with j as the dy index does, so an indexing map reads
    both with positive coefficients (IREE mis-sizes tiles of maps with a
    negative one)."""
    return kernel - 1 - phase.tap_indices[0]


def phase_grid_length(input_size: int, stride: int, padding: int) -> int:
    """Rows q of the [q, residue] grid that holds positions `i + p` (the
    sub-pixel form's); the grid is flattened to `q*s + r` and cropped to
    `[p, p + I)`."""
    return _ceil_div(input_size + padding, stride)


def position_grid_length(input_size: int, stride: int) -> int:
    """Rows q of the position grid [q, rho] that holds grad_input positions
    `i = q*s + rho`: flattened, it needs no crop at its start, and none at
    all where s divides I (a crop is a copy of its own on IREE's GPU code)."""
    return _ceil_div(input_size, stride)


@dataclass(frozen=True)
class SubPixel:
    """All phases of one dim as one stride-1 contraction (the sub-pixel form).

    For q < rows and every residue r: `dx[q*s + r - p] = sum_{u < window}
    dy[dy_start + q + u] * tap(r, u)`, with `tap(r, u) = w[k]`,
    `k = tap_base[r] - tap_step*u`, and zero where k is outside [0, K) (an
    empty residue has a tap_base that is never inside). Positions outside
    [0, I) are computed and cropped. Needs dilation/gcd(dilation, stride) = 1:
    otherwise phases read dy at different alignments and no common window
    exists without extra zeros.
    """

    rows: int
    window: int
    dy_start: int
    tap_base: tuple[int, ...]
    tap_step: int


def subpixel_form(input_size: int, kernel: int, stride: int, padding: int, dilation: int) -> SubPixel:
    phases = grad_input_phases(input_size, kernel, stride, padding, dilation)
    if any(ph.tap_dilation != 1 for ph in phases):
        raise ValueError(f"dilation {dilation} and stride {stride}: phases are not aligned")
    live = [ph for ph in phases if ph.taps]
    # t0 of a phase: how far back its first tap reads, dy[q - t0 - j].
    t0 = {ph.residue: ph.first_q - ph.dy_start - (ph.taps - 1) for ph in live}
    e_min = min(t0[ph.residue] for ph in live)
    e_max = max(t0[ph.residue] + ph.taps - 1 for ph in live)
    step = phases[0].tap_step
    base = tuple(
        ph.first_tap + (e_max - t0[ph.residue]) * step if ph.taps else -1 for ph in phases
    )
    return SubPixel(
        rows=phase_grid_length(input_size, stride, padding),
        window=e_max - e_min + 1,
        dy_start=-e_max,
        tap_base=base,
        tap_step=step,
    )


def reduction_split(length: int, outputs: int, target_partials: int, min_chunk: int) -> int:
    """How many partial sums to split a reduction of `length` terms into
    (split-K), for a result of `outputs` elements: a divisor of `length`, so
    that every chunk is a contiguous run of the same size, as close to
    `target_partials / outputs` as it can be without a chunk shorter than
    `min_chunk` terms. 1 means: do not split.

    A weight gradient is a few thousand outputs, each a sum over every
    batch and output position; one thread block per output tile leaves
    most of a GPU idle and runs the whole sum serially in each."""
    if length <= 0 or outputs <= 0:
        return 1
    wanted = min(_ceil_div(target_partials, outputs), length // max(min_chunk, 1))
    return max((d for d in _divisors(length) if d <= wanted), default=1)


def fewest_chunks(length: int, max_chunk: int, min_chunk: int) -> int:
    """The fewest equal contiguous chunks a reduction of `length` terms
    splits into with each between `min_chunk` and `max_chunk` terms long:
    the smallest divisor d of `length` with min_chunk <= length / d <=
    max_chunk. 1 (no split) when `length` fits one chunk or no divisor
    gives such chunks."""
    if length <= max_chunk:
        return 1
    return min((d for d in _divisors(length) if min_chunk <= length // d <= max_chunk), default=1)


def _divisors(length: int) -> Iterator[int]:
    """Every divisor of `length` (> 0), in no particular order."""
    for small in range(1, math.isqrt(length) + 1):
        if length % small == 0:
            yield from {small, length // small}


def padded_taps(channels: int, kernel: Sequence[int], multiple: int, max_growth: float) -> tuple[int, ...]:
    """A kernel window at least as large as `kernel` in every dim whose
    `channels * prod(window)` im2col columns are a multiple of `multiple`,
    with the fewest taps, and at most `max_growth` times the taps of
    `kernel`; `kernel` itself when it already divides, or when no window
    within that growth does. The taps beyond `kernel` compute columns that
    are dropped: they read the input where no real tap does (zero-padded)."""
    kernel = tuple(kernel)
    taps = math.prod(kernel)
    if (channels * taps) % multiple == 0:
        return kernel
    bound = taps * max_growth
    ranges = [range(k, int(bound // (taps // k)) + 1) for k in kernel]
    fits = [w for w in itertools.product(*ranges)
            if math.prod(w) <= bound and (channels * math.prod(w)) % multiple == 0]
    return min(fits, key=lambda w: (math.prod(w), w), default=kernel)


def widened_last_length(lengths: Sequence[int], multiple: int, max_growth: float = math.inf) -> tuple[int, ...]:
    """`lengths` with the last one widened the least so that `prod(lengths)`
    is a multiple of `multiple`; `lengths` as they are where that would grow
    the last one more than `max_growth` times."""
    step = multiple // math.gcd(math.prod(lengths[:-1]), multiple)
    last = _ceil_div(lengths[-1], step) * step
    return (*lengths[:-1], last) if last <= lengths[-1] * max_growth else tuple(lengths)


def taps_inside(positions: int, bound: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Pairs (window position p < `positions`, tap k < `kernel`) whose read
    `p*stride - padding + k*dilation` falls inside `0 .. bound-1`: the
    products of one dim that touch no padding."""
    return sum(1 for p in range(positions) for k in range(kernel)
               if 0 <= p * stride - padding + k * dilation < bound)
