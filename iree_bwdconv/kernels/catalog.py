"""Hand-written CUDA kernels that the lowering dispatches where IREE 3.13's
own code for a contraction stays far from its matmul (docs/performance-journal.md,
"A kernel of our own for the strided 1x1 GEMM").

One kernel so far: grad_input of an ungrouped 1x1 kernel at any stride, in
f16/bf16 (`strided_1x1_grad_input.py`, its Triton source), in three forms:
one stores the GEMM's values into a grad_input of zeros; at stride 2
without padding, the others write all of an unfilled grad_input, in whole
2 x 2 blocks where they fit, else in 32-bit pairs of a value and a zero
where every plane starts at a word (`form`). The package ships its PTX
for sm_80, one variant per form, tile (by input channels), dtype and
alignment of dy's rows, which Triton turns into 16-byte (8), 4-byte (2)
or 2-byte (1) loads; `generate.py` rewrites them. This module is pure
Python: it picks a variant and computes the kernel's arguments, and knows
nothing of MLIR.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

HERE = Path(__file__).parent
MANIFEST = HERE / "kernels.json"
KERNEL = "strided_1x1_grad_input"
# The i32 arguments after the three buffers (w, dy, dx; dx zero-filled, or
# unfilled where the kernel writes every position, and written in place),
# in the kernel's order.
ARGUMENTS = ("C", "K", "OHW", "OW", "H", "W", "S_H", "S_W", "P_H", "P_W")
DTYPES = {"f16": "fp16", "bf16": "bf16"}
# Divisibility of OHW hinted to Triton per variant; C is always hinted 8.
ROW_ALIGNMENTS = (8, 2, 1)
CHANNEL_MULTIPLE = 8
# Tile configs by input channels: (BLOCK_C, BLOCK_Q, BLOCK_K, warps, stages).
# 128 or more channels take the wide tile, 64-127 the middle one, fewer the
# narrow one. On the H100 the wide tile of 64 positions and 4 warps did the
# GPU's work 1.12x-1.36x faster than stop 28's 128 x 128 with 8 warps on
# every wide layer measured, and no other of seven tiles was faster on
# every one; the middle tile 1.05x-1.14x faster than the narrow one on
# layers of 64 and 96 channels (docs/performance-journal.md, "Smaller tiles for the
# 1x1 kernel").
WIDE_TILE = (128, 64, 32, 4, 4)
MIDDLE_TILE = (64, 64, 32, 4, 4)
NARROW_TILE = (32, 128, 32, 4, 4)
TILES = (WIDE_TILE, MIDDLE_TILE, NARROW_TILE)
# The pairs form's middle tile spans 128 positions: on two large layers of
# 64 and 96 channels its calls were 1.13x-1.21x faster than with 64 x 64,
# and level on two small ones (docs/performance-journal.md, "Pairs of a value and
# a zero").
PAIRS_MIDDLE_TILE = (64, 128, 32, 4, 4)
PAIRS_TILES = (WIDE_TILE, PAIRS_MIDDLE_TILE, NARROW_TILE)
# Positions a whole-block store spans (VEC): 4 or 2 positions, their 2 x 2
# blocks' rows 16 or 8 bytes. Other unpadded stride-2 layers (OW odd,
# grad_input a row or column short, the narrow tile) write pairs: a value
# and a zero in one 32-bit word, a word of zeros below it. On eight large
# layers they took 1.10x-1.50x less GPU time than the memset and values,
# the calls 1.00x-1.33x faster; on two small ones (about 10 us) the calls
# were level (docs/performance-journal.md, "Pairs of a value and a zero"). Blocks,
# where they fit, store wider.
BLOCK_VECTORS = (4, 2)
BLOCK_TILES = (WIDE_TILE, MIDDLE_TILE)
BLOCK_FORMS = {f"blocks_v{vector}": vector for vector in BLOCK_VECTORS}  # form name -> VEC
_FORM_OF_BLOCKS = {vector: form for form, vector in BLOCK_FORMS.items()}
PAIRS = "pairs"
# Every shipped variant: (tile, dtype, row alignment, form; "" for the form
# that stores values only). With OW a multiple of a block vector, OH*OW is
# even: blocks are never aligned to 1.
VARIANTS = (*((tile, dtype, alignment, "") for tile in TILES for dtype in DTYPES for alignment in ROW_ALIGNMENTS),
            *((tile, dtype, alignment, form) for tile in BLOCK_TILES for dtype in DTYPES
              for alignment in ROW_ALIGNMENTS[:2] for form in BLOCK_FORMS),
            *((tile, dtype, alignment, PAIRS) for tile in PAIRS_TILES for dtype in DTYPES
              for alignment in ROW_ALIGNMENTS))
# Offsets and sizes inside one image are 32-bit in the kernel.
MAX_IMAGE_ELEMENTS = 2**31 - 1
# The grid's z is the image; CUDA allows 65535.
MAX_IMAGES = 65535


@dataclass(frozen=True)
class Variant:
    name: str  # the PTX entry point
    ptx: Path
    workgroup_size: tuple[int, int, int]
    shared_memory: int  # bytes of dynamic shared memory per workgroup
    block_channels: int
    block_positions: int


def padded_channels(channels: int) -> int:
    """Input channels as the kernel reads them: rounded up to
    `CHANNEL_MULTIPLE`, the weight's rows zero-padded and grad_input cropped
    back where they are not (the hint Triton's loads of a weight row were
    built with)."""
    return -(-channels // CHANNEL_MULTIPLE) * CHANNEL_MULTIPLE


def variant_name(dtype: str, row_alignment: int, block_channels: int, form: str = "") -> str:
    return f"{KERNEL}{'_' + form if form else ''}_c{block_channels}_{dtype}_a{row_alignment}"


@functools.cache
def _manifest() -> dict:
    return json.loads(MANIFEST.read_text())


def row_alignment(positions: int) -> int:
    """The largest hinted alignment that dy's rows of `positions` elements keep."""
    return next(a for a in ROW_ALIGNMENTS if positions % a == 0)


def tile(channels: int, form: str = "") -> tuple[int, int, int, int, int]:
    """The tile config for grad_input of `channels` input channels in
    `form`: the widest whose channel block they fill."""
    tiles = PAIRS_TILES if form == PAIRS else TILES
    return next((t for t in tiles if channels >= t[0]), tiles[-1])


def _named(arguments: Sequence[int]) -> dict[str, int]:
    return dict(zip(ARGUMENTS, arguments, strict=True))


def _halved(a: dict[str, int]) -> bool:
    """Stride 2 without padding: dy's position (oh, ow) is grad_input's
    (2*oh, 2*ow)."""
    return (a["S_H"], a["S_W"], a["P_H"], a["P_W"]) == (2, 2, 0, 0)


def block_vector(arguments: Sequence[int]) -> int:
    """How many positions the kernel's whole-block stores span for a layer
    of these `arguments` (`ARGUMENTS` order); 0 where it writes no blocks.
    Blocks need stride 2 without padding, grad_input exactly twice dy's
    size (every block whole inside it), OW a multiple of the span (a span
    never crosses an image row), and the wide or middle tile."""
    a = _named(arguments)
    rows = a["OHW"] // a["OW"]
    if not _halved(a) or (a["H"], a["W"]) != (2 * rows, 2 * a["OW"]):
        return 0
    if tile(a["C"]) not in BLOCK_TILES:
        return 0
    return next((vector for vector in BLOCK_VECTORS if a["OW"] % vector == 0), 0)


def writes_pairs(arguments: Sequence[int]) -> bool:
    """Whether the kernel writes pairs for a layer of these `arguments`:
    stride 2 without padding where it writes no blocks, grad_input twice
    dy's size or one less along a dim (a forward input of odd size), and
    H*W even, so that every plane, and every position's pair, starts at a
    32-bit word."""
    a = _named(arguments)
    rows = a["OHW"] // a["OW"]
    if not _halved(a) or a["H"] not in (2 * rows - 1, 2 * rows) or a["W"] not in (2 * a["OW"] - 1, 2 * a["OW"]):
        return False
    return a["H"] * a["W"] % 2 == 0 and block_vector(arguments) == 0


def form(arguments: Sequence[int]) -> str:
    """What the kernel writes for a layer of these `arguments`: whole
    blocks ("blocks_v4", "blocks_v2"), pairs, or "" for values only, into
    zeros."""
    vector = block_vector(arguments)
    if vector:
        return _FORM_OF_BLOCKS[vector]
    return PAIRS if writes_pairs(arguments) else ""


def writes_every_position(arguments: Sequence[int]) -> bool:
    """Whether the kernel writes all of grad_input (then it needs no zero
    fill): at stride 1 every input position gets a value, and blocks and
    pairs cover it."""
    a = _named(arguments)
    return (a["S_H"], a["S_W"]) == (1, 1) or form(arguments) != ""


def variant(dtype: str, arguments: Sequence[int]) -> Variant:
    """The kernel for `dtype` and a layer of these `arguments`: its form,
    loads that suit dy rows of OHW positions, and a tile that suits C
    input channels."""
    a = _named(arguments)
    kind = form(arguments)
    return variant_by_name(variant_name(dtype, row_alignment(a["OHW"]), tile(a["C"], kind)[0], kind))


def variant_by_name(name: str) -> Variant:
    entry = _manifest()[name]
    return Variant(name, HERE / entry["ptx"], tuple(entry["workgroup_size"]), entry["shared_memory"],
                   entry["block"][0], entry["block"][1])


def as_2d(sizes: Sequence[int]) -> tuple[int, int]:
    """A 1-D or 2-D spatial size as the kernel's (H, W)."""
    if len(sizes) not in (1, 2):
        raise ValueError(f"spatial rank {len(sizes)}: the kernel takes 1-D and 2-D layers")
    return (1, sizes[0]) if len(sizes) == 1 else (sizes[0], sizes[1])


def arguments(
    in_channels: int, out_channels: int, input_size: Sequence[int], output_size: Sequence[int],
    stride: Sequence[int], padding: Sequence[int],
) -> tuple[int, ...]:
    """The kernel's i32 arguments, in `ARGUMENTS` order, for dx [n, C, *input_size]
    from dy [n, K, *output_size]."""
    (h, w), (oh, ow) = as_2d(input_size), as_2d(output_size)
    (s_h, s_w), (p_h, p_w) = as_2d(stride), as_2d(padding)
    if len(input_size) == 1:
        s_h, p_h = 1, 0
    return (in_channels, out_channels, oh * ow, ow, h, w, s_h, s_w, p_h, p_w)
