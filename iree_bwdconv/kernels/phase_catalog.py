"""The CUDA kernel that computes a strided grad_input (or a strided
transposed convolution's forward) by stride phases, grouped or not, in
f16/bf16, all phases in one launch (`phase_grad_input.py`, its Triton
source). The package ships its PTX for sm_80, one variant per tile and
dtype; `generate.py` rewrites them. Pure Python, like `catalog`: it picks
a variant and computes the kernel's arguments.
"""

from __future__ import annotations

from typing import Sequence

if __package__:
    from iree_bwdconv import geometry
    from iree_bwdconv.kernels import catalog
else:  # `generate.py` imports the catalogs from this folder, without the package (and needs no geometry)
    import catalog

KERNEL = "phase_grad_input"
# The i32 arguments after the three buffers (w [G*KG, CG, KH, KW], dy
# [n, G*KG, OH, OW], dx [n, G*CG, H, W], written whole), in the kernel's order.
ARGUMENTS = ("G", "CG", "KG", "H", "W", "OH", "OW", "KH", "KW", "S_H", "S_W", "P_H", "P_W")
DTYPES = catalog.DTYPES
# Tile configs by grad_input channels a group: (BLOCK_C, BLOCK_Q, BLOCK_K,
# warps, stages); a group takes the widest whose channel block it fills.
# The plan gives it at most 32 channels a group (`Tuning.phase_kernel_max_group_channels`).
TILES = ((32, 128, 16, 4, 2), (16, 128, 16, 4, 2))
VARIANTS = tuple((tile, dtype) for tile in TILES for dtype in DTYPES)
# Offsets inside one image are 32-bit in the kernel.
MAX_IMAGE_ELEMENTS = catalog.MAX_IMAGE_ELEMENTS
# The grid's z is images x groups x phases; CUDA allows 65535.
MAX_GRID_Z = 65535


def variant_name(dtype: str, block_channels: int) -> str:
    return f"{KERNEL}_c{block_channels}_{dtype}"


def tile(channels_per_group: int) -> tuple[int, int, int, int, int]:
    return next((t for t in TILES if channels_per_group >= t[0]), TILES[-1])


def variant(dtype: str, arguments: Sequence[int]) -> catalog.Variant:
    """The kernel for `dtype` and a layer of these `arguments`."""
    return catalog.variant_by_name(variant_name(dtype, tile(_named(arguments)["CG"])[0]))


def _named(arguments: Sequence[int]) -> dict[str, int]:
    return dict(zip(ARGUMENTS, arguments, strict=True))


def arguments(
    groups: int, in_channels: int, out_channels: int, input_size: Sequence[int], output_size: Sequence[int],
    kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
) -> tuple[int, ...]:
    """The kernel's i32 arguments, in `ARGUMENTS` order, for dx [n, in_channels,
    *input_size] from dy [n, out_channels, *output_size] (1-D as one row)."""
    (h, w), (oh, ow), (kh, kw) = (catalog.as_2d(s) for s in (input_size, output_size, kernel))
    (s_h, s_w), (p_h, p_w) = catalog.as_2d(stride), catalog.as_2d(padding)
    if len(input_size) == 1:
        s_h, p_h = 1, 0
    return (groups, in_channels // groups, out_channels // groups, h, w, oh, ow, kh, kw, s_h, s_w, p_h, p_w)


def largest_phase(arguments: Sequence[int]) -> int:
    """Positions of phase (0, 0), the largest: the grid's x covers them."""
    a = _named(arguments)
    return geometry.position_grid_length(a["H"], a["S_H"]) * geometry.position_grid_length(a["W"], a["S_W"])


def grid_z(batch: int, arguments: Sequence[int]) -> int:
    a = _named(arguments)
    return batch * a["G"] * a["S_H"] * a["S_W"]


def image_elements(arguments: Sequence[int]) -> int:
    """The most elements of one image among dy and dx (the kernel's offsets
    inside an image are 32-bit)."""
    a = _named(arguments)
    return a["G"] * max(a["CG"] * a["H"] * a["W"], a["KG"] * a["OH"] * a["OW"])

