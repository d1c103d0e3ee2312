"""geometry against brute-force index enumeration, over every small 1-D
configuration (the n-D helpers map the 1-D ones over dims)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from iree_bwdconv import geometry

KERNELS, STRIDES, DILATIONS, PADDINGS, SIZES = range(1, 5), range(1, 5), range(1, 4), range(0, 4), range(1, 9)


def configs():
    for k, s, d, p, n in itertools.product(KERNELS, STRIDES, DILATIONS, PADDINGS, SIZES):
        if geometry.conv_output_size(n, k, s, p, d) > 0:
            yield k, s, d, p, n


def brute_output_size(n, k, s, p, d) -> int:
    """Windows whose every tap lies inside the padded input."""
    return sum(1 for o in range(n + 2 * p) if o * s + (k - 1) * d <= n + 2 * p - 1)


def brute_grad_input(dy, w, n, s, p, d):
    """dx[i] by scattering every product of the forward definition."""
    dx = [0] * n
    for o, k in itertools.product(range(len(dy)), range(len(w))):
        i = o * s + k * d - p
        if 0 <= i < n:
            dx[i] += dy[o] * w[k]
    return dx


def brute_grad_weight(x, dy, k_size, s, p, d):
    dw = [0] * k_size
    for o, k in itertools.product(range(len(dy)), range(k_size)):
        i = o * s + k * d - p
        if 0 <= i < len(x):
            dw[k] += x[i] * dy[o]
    return dw


def ints(rng: random.Random, count: int) -> list[int]:
    return [rng.randint(-5, 5) for _ in range(count)]


@pytest.mark.parametrize("k, s, d, p, n", list(configs()))
def test_conv_output_size_counts_windows(k, s, d, p, n):
    assert geometry.conv_output_size(n, k, s, p, d) == brute_output_size(n, k, s, p, d)


@pytest.mark.parametrize("k, s, d, p, n", list(configs()))
def test_direct_grad_input_from_scatter_placement(k, s, d, p, n):
    rng = random.Random(hash((k, s, d, p, n)))
    o_size = geometry.conv_output_size(n, k, s, p, d)
    dy, w = ints(rng, o_size), ints(rng, k)
    place = geometry.scatter_placement(n, o_size, k, s, p, d)
    # Exactly the grad_output elements that reach some input position are kept.
    reaching = [o for o in range(o_size) if any(0 <= o * s + t * d - p < n for t in range(k))]
    landing = [o for o in range(o_size) if 0 <= o * s - p + d * (k - 1) < place.length]
    assert list(range(place.first, place.last)) == landing
    assert set(reaching) <= set(landing)
    buf = [0] * place.length
    for j, o in enumerate(range(place.first, place.last)):
        buf[place.offset + j * s] = dy[o]
    direct = [sum(buf[i + t * d] * w[k - 1 - t] for t in range(k)) for i in range(n)]
    assert direct == brute_grad_input(dy, w, n, s, p, d)


@pytest.mark.parametrize("k, s, d, p, n", list(configs()))
def test_grad_weight_window_is_exact(k, s, d, p, n):
    rng = random.Random(hash((n, k, s, d, p)))
    o_size = geometry.conv_output_size(n, k, s, p, d)
    x, dy = ints(rng, n), ints(rng, o_size)
    low, high = geometry.window_padding(n, o_size, k, s, p, d)
    padded = [0] * low + x[: n + min(high, 0)] + [0] * max(high, 0)
    last_read = (o_size - 1) * s + (k - 1) * d
    assert len(padded) == last_read + 1, "the padded source must span exactly the reads"
    windowed = [sum(padded[o * s + t * d] * dy[o] for o in range(o_size)) for t in range(k)]
    assert windowed == brute_grad_weight(x, dy, k, s, p, d)


@pytest.mark.parametrize("k, s, d, p, n", list(configs()))
def test_transposed_output_size_is_the_adjoint(k, s, d, p, n):
    """With output_padding < stride, the forward conv maps Y back to I."""
    for op_ in range(s):
        y = geometry.transposed_output_size(n, k, s, p, d, op_)
        if y > 0:
            assert geometry.conv_output_size(y, k, s, p, d) == n


def test_transposed_grad_input_is_a_strided_conv():
    """dx of a transposed conv reads dy at i*s + k*d - p (brute force)."""
    rng = random.Random(7)
    for k, s, d, p, n in configs():
        for op_ in range(max(s, d)):
            y = geometry.transposed_output_size(n, k, s, p, d, op_)
            if y <= 0:
                continue
            dy, w = ints(rng, y), ints(rng, k)
            low, high = geometry.window_padding(y, n, k, s, p, d)
            padded = [0] * low + dy[: y + min(high, 0)] + [0] * max(high, 0)
            got = [sum(padded[i * s + t * d] * w[t] for t in range(k)) for i in range(n)]
            # Forward of the transposed conv: y[i*s + k*d - p] += x[i] * w[k].
            expected = [sum(dy[i * s + t * d - p] * w[t] for t in range(k) if 0 <= i * s + t * d - p < y)
                        for i in range(n)]
            assert got == expected


def test_reads_only_padding_means_no_read_is_inside():
    """Against the reads listed one by one, for any number of windows (a
    transposed convolution's are its input's length, not the forward
    output size): reads may miss the source below it, beyond it, or both."""
    for k, s, d, p, n in itertools.product(KERNELS, STRIDES, DILATIONS, PADDINGS, SIZES):
        for windows in range(1, 6):
            inside = any(0 <= o * s + t * d - p < n for o in range(windows) for t in range(k))
            assert geometry.reads_only_padding(n, windows, k, s, p, d) == (not inside)


def test_nd_helpers_map_over_dims():
    assert geometry.conv_output_size_nd((8, 9), (3, 1), (2, 3), (1, 0), (1, 1)) == (4, 3)
    assert geometry.transposed_output_size_nd((4,), (3,), (2,), (1,), (1,), (1,)) == (8,)
    lows, highs = geometry.window_padding_nd((8, 9), (4, 3), (3, 1), (2, 3), (1, 0), (1, 1))
    assert lows == (1, 0) and highs == (0, -2)


@pytest.mark.parametrize("k, s, d, p, n", list(configs()))
def test_phases_compute_grad_input_exactly(k, s, d, p, n):
    """Every position is computed by exactly its residue's phase; empty phases
    are exactly the positions no tap reaches; no phase is dropped."""
    rng = random.Random(hash((s, k, d, p, n)))
    o_size = geometry.conv_output_size(n, k, s, p, d)
    dy, w = ints(rng, o_size), ints(rng, k)
    expected = brute_grad_input(dy, w, n, s, p, d)
    phases = geometry.grad_input_phases(n, k, s, p, d)
    assert [ph.residue for ph in phases] == list(range(s))
    got = [None] * n
    read = lambda o: dy[o] if 0 <= o < o_size else 0  # noqa: E731
    for ph in phases:
        for m in range(ph.count):
            i = (ph.first_q + m) * s + ph.residue - p
            assert i == ph.first_position + m * s  # where the pattern inserts the phase's rows
            assert 0 <= i < n and got[i] is None, "phases must partition the positions"
            got[i] = sum(read(ph.dy_start + m + j * ph.tap_dilation) * w[tap]
                         for j, tap in enumerate(ph.tap_indices))
        if ph.taps:  # its own rows, as a window: what the pattern uses for a single live phase
            assert ph.grid_window(ph.count, ph.first_q) == (ph.dy_start, ph.dy_length)
        if ph.taps == 0:  # an empty phase: no tap reaches its positions at all
            assert all((t * d - ph.residue) % s for t in range(k))
        if not ph.reads_dy(o_size):  # skipped by the pattern: must be all zeros
            assert all(got[(ph.first_q + m) * s + ph.residue - p] == 0 for m in range(ph.count))
    assert got == expected
    grid = geometry.phase_grid_length(n, s, p)
    assert grid * s >= n + p and (grid - 1) * s < n + p


@pytest.mark.parametrize("k, s, d, p, n", list(configs()))
def test_a_one_tap_phase_cut_to_its_reads_inside_dy_leaves_only_zeros_out(k, s, d, p, n):
    """`one_tap_inside`: the cut phase's positions get what the whole
    phase gives them, reading dy inside alone; the positions cut away get
    zero from the whole phase. A phase of more taps is left as it is."""
    rng = random.Random(hash((s, k, d, p, n, "inside")))
    o_size = geometry.conv_output_size(n, k, s, p, d)
    dy, w = ints(rng, o_size), [rng.randint(1, 9) for _ in range(k)]
    read = lambda o: dy[o] if 0 <= o < o_size else 0  # noqa: E731
    for ph in geometry.grad_input_phases(n, k, s, p, d):
        cut = geometry.one_tap_inside(ph, o_size)
        if ph.taps != 1:
            assert cut == ph
            continue
        whole = {ph.first_position + m * s: read(ph.dy_start + m) * w[ph.first_tap] for m in range(ph.count)}
        kept = {cut.first_position + m * s: dy[cut.dy_start + m] * w[cut.first_tap] for m in range(cut.count)}
        assert all(0 <= cut.dy_start + m < o_size for m in range(cut.count))
        assert set(kept) <= set(whole) and all(kept[i] == whole[i] for i in kept)
        assert all(whole[i] == 0 for i in set(whole) - set(kept))
        assert cut.count == sum(0 <= ph.dy_start + m < o_size for m in range(ph.count))


@pytest.mark.parametrize("k, s, d, p, n", list(configs()))
def test_phases_over_the_whole_grid_compute_grad_input_exactly(k, s, d, p, n):
    """Each non-empty phase computed for every position-grid row from its
    position window, interleaved as grid[q*s + rho] and cut to its first n,
    is grad_input (the form the pattern emits: no zero-filled grad_input, no
    strided writes, no crop at the start)."""
    rng = random.Random(hash((k, s, d, p, n, "grid")))
    o_size = geometry.conv_output_size(n, k, s, p, d)
    dy, w = ints(rng, o_size), ints(rng, k)
    read = lambda o: dy[o] if 0 <= o < o_size else 0  # noqa: E731
    rows = geometry.position_grid_length(n, s)
    assert rows * s >= n and (rows - 1) * s < n
    grid = [0] * (rows * s)
    phases = geometry.grad_input_phases(n, k, s, p, d)
    assert sorted(ph.position_residue for ph in phases) == list(range(s))
    for ph in phases:
        if ph.is_empty:
            continue
        start, length = ph.position_window(rows)
        assert length == rows + (ph.taps - 1) * ph.tap_dilation
        for q in range(rows):
            grid[q * s + ph.position_residue] = sum(read(start + q + j * ph.tap_dilation) * w[tap]
                                                    for j, tap in enumerate(ph.tap_indices))
    assert grid[:n] == brute_grad_input(dy, w, n, s, p, d)


@pytest.mark.parametrize("k, s, d, p, n", list(configs()))
def test_col2im_sums_compute_grad_input_exactly(k, s, d, p, n):
    """The col2im form: dy times every tap of the reversed kernel over the
    phases' common span, then each phase adding its taps' products from
    there (reversed, tap and dy index both grow with j), woven and cut."""
    rng = random.Random(hash((k, s, d, p, n, "col2im")))
    o_size = geometry.conv_output_size(n, k, s, p, d)
    dy, w = ints(rng, o_size), ints(rng, k)
    read = lambda o: dy[o] if 0 <= o < o_size else 0  # noqa: E731
    rows = geometry.position_grid_length(n, s)
    live = [ph for ph in geometry.grad_input_phases(n, k, s, p, d) if ph.reads_dy(o_size)]
    grid = [0] * (rows * s)
    if live:
        start, length = geometry.phases_span(live, rows)
        for ph in live:  # the span holds every window it was made from
            window_start, window_length = ph.position_window(rows)
            assert start <= window_start and window_start + window_length <= start + length
        products = [[read(start + u) * w[k - 1 - t] for u in range(length)] for t in range(k)]  # Z[k', u]
        for ph in live:
            first = geometry.reversed_first_tap(ph, k)
            offset = ph.position_window(rows)[0] - start
            for q in range(rows):
                grid[q * s + ph.position_residue] = sum(
                    products[first + j * ph.tap_step][offset + q + j * ph.tap_dilation] for j in range(ph.taps))
    assert grid[:n] == brute_grad_input(dy, w, n, s, p, d)


def test_phases_span_needs_a_phase():
    empty = geometry.Phase(residue=1, taps=0, first_tap=0, tap_step=2, tap_dilation=1, first_q=0, count=3, dy_start=0,
                           stride=2, padding=0)
    with pytest.raises(ValueError, match="non-empty"):
        geometry.phases_span([empty], 4)


@pytest.mark.parametrize("k, s, d", [(3, 2, 1), (1, 2, 1), (2, 3, 1), (3, 2, 2), (6, 3, 1), (3, 6, 1)])
def test_phase_tap_sets(k, s, d):
    """Each tap serves exactly one residue: taps are neither lost nor doubled."""
    phases = geometry.grad_input_phases(16, k, s, 1, d)
    served = sorted(t for ph in phases for t in ph.tap_indices)
    assert served == list(range(k))
    for ph in phases:
        assert all((t * d - ph.residue) % s == 0 for t in ph.tap_indices)


def test_span_padding():
    assert geometry.span_padding(10, -2, 14) == (2, 2)
    assert geometry.span_padding(10, 3, 4) == (-3, -3)


@pytest.mark.parametrize("k, s, d, p, n", [c for c in configs() if (c[2] // __import__("math").gcd(c[1], c[2])) == 1])
def test_subpixel_form_computes_grad_input_exactly(k, s, d, p, n):
    rng = random.Random(hash((p, s, d, k, n)))
    o_size = geometry.conv_output_size(n, k, s, p, d)
    dy, w = ints(rng, o_size), ints(rng, k)
    form = geometry.subpixel_form(n, k, s, p, d)
    read = lambda o: dy[o] if 0 <= o < o_size else 0  # noqa: E731
    tap = lambda r, u: (lambda t: w[t] if 0 <= t < k else 0)(form.tap_base[r] - form.tap_step * u)  # noqa: E731
    got = {}
    for q in range(form.rows):
        for r in range(s):
            i = q * s + r - p
            got[i] = sum(read(form.dy_start + q + u) * tap(r, u) for u in range(form.window))
    assert [got[i] for i in range(n)] == brute_grad_input(dy, w, n, s, p, d)
    assert form.window == max(ph.taps for ph in geometry.grad_input_phases(n, k, s, p, d)) or s > k


def test_subpixel_form_refuses_unaligned_phases():
    with pytest.raises(ValueError, match="not aligned"):
        geometry.subpixel_form(9, 3, 2, 1, 3)


@pytest.mark.parametrize("length", [1, 7, 96, 196, 1000, 25088])
@pytest.mark.parametrize("outputs", [1, 27 * 32, 1 << 14])
@pytest.mark.parametrize("target, min_chunk", [(1 << 12, 1), (1 << 22, 64), (1 << 22, 512)])
def test_reduction_split_is_the_best_divisor(length, outputs, target, min_chunk):
    split = geometry.reduction_split(length, outputs, target, min_chunk)
    fits = [d for d in range(1, length + 1)
            if length % d == 0 and (d == 1 or (d * outputs <= max(target, outputs) + outputs - 1
                                               and length // d >= min_chunk))]
    assert split == max(fits)


def test_window_reads_source_against_the_reads() -> None:
    """Against the reads listed one by one, for every small configuration."""
    for source, kernel, stride, padding, dilation in itertools.product(range(1, 6), range(1, 4), range(1, 4),
                                                                          range(0, 3), range(1, 3)):
        for windows in range(1, source + 3):
            reads = [o * stride + k * dilation - padding for o in range(windows) for k in range(kernel)]
            expected = kernel == 1 and reads == list(range(source))
            assert geometry.window_reads_source(source, windows, kernel, stride, padding, dilation) == expected


@pytest.mark.parametrize("length", [1, 7, 97, 784, 1568, 6272, 25088])
@pytest.mark.parametrize("max_chunk", [1, 5, 392, 1024, 100000])
@pytest.mark.parametrize("min_chunk", [1, 4, 256])
def test_fewest_chunks_is_the_smallest_divisor_that_fits(length, max_chunk, min_chunk):
    split = geometry.fewest_chunks(length, max_chunk, min_chunk)
    fits = [d for d in range(1, length + 1) if length % d == 0 and min_chunk <= length // d <= max_chunk]
    assert split == (1 if length <= max_chunk or not fits else min(fits))


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_padded_taps_is_the_smallest_window_that_divides(rank: int) -> None:
    """Against every window up to twice the kernel in each dim: the result
    contains the kernel, divides when any window within the growth does,
    and no dividing window within the growth has fewer taps."""
    for channels in (1, 2, 3, 5, 16):
        for kernel in itertools.product((1, 2, 3, 5, 7), repeat=rank):
            for multiple, growth in ((16, 4 / 3), (8, 1.5), (4, 1.0)):
                got = geometry.padded_taps(channels, kernel, multiple, growth)
                taps = math.prod(kernel)
                fits = [w for w in itertools.product(*(range(k, 2 * k + 1) for k in kernel))
                        if math.prod(w) <= taps * growth and channels * math.prod(w) % multiple == 0]
                assert all(g >= k for g, k in zip(got, kernel)) and len(got) == rank
                if channels * taps % multiple == 0 or not fits:
                    assert got == kernel
                else:
                    assert channels * math.prod(got) % multiple == 0
                    assert math.prod(got) == min(math.prod(w) for w in fits)


def test_widened_last_length_is_the_least_that_divides() -> None:
    """Against counting up from the last length: the first that makes
    `prod` a multiple, the other lengths untouched; nothing widened beyond
    the growth."""
    for lengths in ((5,), (113, 113), (471, 726), (3, 4, 7), (64, 1), (2, 3, 5), (8, 17)):
        for multiple in (1, 4, 64, 128):
            last = next(n for n in itertools.count(lengths[-1]) if math.prod(lengths[:-1]) * n % multiple == 0)
            assert geometry.widened_last_length(lengths, multiple) == (*lengths[:-1], last)
            for growth in (1.0, 1.25, 2.0):
                got = geometry.widened_last_length(lengths, multiple, growth)
                assert got == ((*lengths[:-1], last) if last <= lengths[-1] * growth else lengths)


def test_live_spans_hold_every_live_window() -> None:
    """Per dim, the span starts at the first read of any live phase there
    and ends at the last (2-D: 3x3 stride 2 and 5x2 stride 3)."""
    per_dim = [geometry.grad_input_phases(9, 3, 2, 1, 1), geometry.grad_input_phases(11, 2, 3, 0, 1)]
    rows = [geometry.position_grid_length(9, 2), geometry.position_grid_length(11, 3)]
    live = [phases for phases in itertools.product(*per_dim) if not any(ph.is_empty for ph in phases)]
    spans = geometry.live_spans(live, rows)
    for axis, (start, length) in enumerate(spans):
        windows = {phases[axis].position_window(rows[axis]) for phases in live}
        assert start == min(s for s, _ in windows)
        assert start + length == max(s + n for s, n in windows)


def test_live_phases_write_every_position_where_their_counts_add_up() -> None:
    """Against the positions themselves: the live combinations (2-D, one
    phase per dim, each with taps and reading dy) write every grad_input
    position exactly where `writes_every_position` says, and none twice."""
    rng = random.Random(0)
    dims = list(configs())
    for _ in range(400):
        pair = [rng.choice(dims) for _ in range(2)]
        per_dim = [geometry.grad_input_phases(n, k, s, p, d) for k, s, d, p, n in pair]
        outputs = [geometry.conv_output_size(n, k, s, p, d) for k, s, d, p, n in pair]
        live = [phases for phases in itertools.product(*per_dim)
                if not any(ph.is_empty or not ph.reads_dy(o) for ph, o in zip(phases, outputs))]
        written = [tuple(ph.first_position + m * ph.stride for ph, m in zip(phases, ms))
                   for phases in live for ms in itertools.product(*(range(ph.count) for ph in phases))]
        assert len(written) == len(set(written))
        sizes = [n for *_, n in pair]
        every = set(itertools.product(*(range(n) for n in sizes)))
        assert set(written) <= every
        assert geometry.writes_every_position(live, sizes) == (set(written) == every)


def test_one_tap_means_one_tap_along_every_dim() -> None:
    per_dim = [geometry.grad_input_phases(8, 3, 2, 1, 1), geometry.grad_input_phases(8, 2, 2, 0, 1)]
    assert [geometry.one_tap(phases) for phases in itertools.product(*per_dim)] == [False, False, True, True]


def test_a_window_slides_along_no_dim_where_each_dim_has_one_tap_or_one_output():
    for k, s, d, p, n in configs():
        out = geometry.conv_output_size(n, k, s, p, d)
        reads = {(o, tap): o * s + tap * d for o in range(out) for tap in range(k)}
        # the read index follows one loop alone: a 1x1 kernel's (taps fixed) or channels' (one output)
        one_loop = len({o for o, _ in reads}) == 1 or len({tap for _, tap in reads}) == 1
        assert geometry.slides_no_window([k], [out]) == one_loop
    assert geometry.slides_no_window([3, 1], [1, 6]) and not geometry.slides_no_window([3, 1], [2, 6])
    assert geometry.slides_no_window([1, 1, 1], [4, 5, 6]) and not geometry.slides_no_window([1, 3], [1, 2])


@pytest.mark.parametrize("k, s, d, n", [(k, s, d, n) for k in (1, 2, 3, 4) for s in (1, 2, 3) for d in (1, 2)
                                        for n in (1, 3, 5)])
def test_transposed_from_insertion_finds_every_zero_inserted_buffer(k, s, d, n):
    """Every buffer of zeros with `n` elements `s` apart, convolved at
    stride 1: where `transposed_from_insertion` names a transposed
    convolution, that convolution (by its definition, brute force, over the
    data and zeros up to the grad_output its convolution makes) gives the
    same numbers; where it names none, no padding and output_padding do."""
    rng = random.Random(hash((k, s, d, n)))
    dy, w = ints(rng, n), ints(rng, k)
    for offset in range(0, d * (k - 1) + 3):
        for length in range(offset + s * (n - 1) + 1, offset + s * (n - 1) + 1 + d * (k - 1) + s + 3):
            buf = [0] * length
            for j in range(n):
                buf[offset + j * s] = dy[j]
            outputs = length - d * (k - 1)
            found = geometry.transposed_from_insertion(offset, n, length, k, s, d)
            def rows(p):  # the grad_output of the convolution a transposed one of padding p transposes
                return geometry.conv_output_size(outputs, k, s, p, d) if outputs >= 1 else 0

            matching = [(p, op) for p in range(0, d * (k - 1) + 1) for op in range(length)
                        if outputs >= 1 and geometry.transposed_output_size(n, k, s, p, d, op) == outputs
                        and rows(p) >= n
                        and [sum(buf[i + t * d] * w[k - 1 - t] for t in range(k)) for i in range(outputs)]
                        == brute_grad_input(dy + [0] * (rows(p) - n), w, outputs, s, p, d)
                        and d * (k - 1) - p == offset]
            if found is None:
                assert not matching, (offset, length)
            else:
                assert found in matching, (offset, length, found, matching)
