"""A seeded random sweep over the lowering's configuration space: rank,
stride, padding, dilation, groups, transposed, output_padding, output_mask,
dtype and a dynamic batch. Each draw is a valid convolution (its output is
non-empty) so every case exercises the lowering, not the validator."""

from __future__ import annotations

import random

from .registry import ConvBackwardCase, case

SEED = 20261122


def _draw(rng: random.Random, index: int) -> ConvBackwardCase:
    rank = rng.choice((1, 1, 2, 2, 2, 3))
    groups = rng.choice((1, 1, 2, 3))
    channels = groups * rng.randint(1, 3)
    out_channels = groups * rng.randint(1, 3)
    if rng.random() < 0.15:  # depthwise
        groups, channels, out_channels = channels, channels, channels * rng.choice((1, 2))
    transposed = rng.random() < 0.3
    max_size = {1: 14, 2: 9, 3: 6}[rank]
    kernel = tuple(rng.randint(1, 4 if rank < 3 else 3) for _ in range(rank))
    stride = tuple(rng.choice((1, 1, 2, 2, 3)) for _ in range(rank))
    dilation = tuple(rng.choice((1, 1, 1, 2)) for _ in range(rank))
    padding = tuple(rng.randint(0, 2) for _ in range(rank))
    output_padding = tuple(rng.randrange(max(s, d)) if transposed else 0 for s, d in zip(stride, dilation))
    sizes = []
    for k, s, p, d in zip(kernel, stride, padding, dilation):
        smallest = 1 if transposed else max(1, d * (k - 1) + 1 - 2 * p)
        sizes.append(rng.randint(smallest, max(smallest, max_size)))
    if transposed:  # a transposed conv's output must be non-empty too
        for axis, (n, k, s, p, d, op_) in enumerate(zip(sizes, kernel, stride, padding, dilation, output_padding)):
            while (n - 1) * s - 2 * p + d * (k - 1) + op_ + 1 <= 0:
                n += 1
            sizes[axis] = n
    mask = (False, False, False)
    while not any(mask):
        mask = tuple(rng.random() < 0.7 for _ in range(3))
    return case(
        (rng.randint(1, 3), channels, *sizes), out_channels, kernel,
        stride=stride, padding=padding, dilation=dilation, transposed=transposed,
        output_padding=output_padding, groups=groups, output_mask=mask,  # type: ignore[arg-type]
        dtype=rng.choice(("f32", "f32", "f16", "bf16")), bias=rng.random() < 0.5,
        dynamic_batch=rng.random() < 0.1, suffix=f"sweep{index}",
    )


def sweep(count: int, seed: int = SEED) -> list[ConvBackwardCase]:
    rng = random.Random(seed)
    return [_draw(rng, index) for index in range(count)]
