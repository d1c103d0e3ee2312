"""The 1x1 grad_input kernel on the H100 against the linalg GEMM it replaced
(the per-phase form, forced) and IREE's own matmul of the same GEMM: every
1x1 layer of the benchmark's shapes, layers of 16 to 96 input channels
(the narrow and middle tiles), at stride 1, and more that the kernel
writes in whole 2 x 2 blocks or in pairs. Where it writes either, also its
form that stores only values into zeros ("values-only"). With `tiles`, also the
kernel compiled with each tile of `CANDIDATE_TILES`, with `sweep` with
each of `SWEEP_TILES`, with `middle` layers of 64-127 channels with
`OLD_PAIRS_MIDDLE_TILE` (all three need Triton, as
`iree_bwdconv/kernels/generate.py` does).

    ./dev python -m benchmarks.kernel_1x1 prepare .bench-kernel [tiles|sweep|middle] [MATCH]  # here
    cd benchmarks && python3 run_on_gpu.py ../.bench-kernel results.json              # there
    cd benchmarks && python3 host_time_on_gpu.py ../.bench-kernel gpu.json .          # there: GPU time per call
    ./dev python -m benchmarks.kernel_1x1 report results.json [gpu.json]              # here

The report has a column per layer and a row per variant: its median call
over IREE's matmul's, then (with gpu.json) its GPU busy time over the
matmul's, the tables of docs/performance-journal.md.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from pathlib import Path
from typing import Iterator, Optional, Sequence
from unittest import mock

from iree_bwdconv.kernels import catalog

from . import modules
from .forms import RESNET50_H100
from .gpu import grad_input_entries
from .shapes import SHAPES, Shape

# Layers of fewer channels than the wide tile: seed 003's c32 layer with
# other channel counts, and ResNet-like ones; one at stride 1.
NARROW = (
    Shape("1x1 s2 n4 c16 k224 470x725", 4, 16, 224, (470, 725), 1, 2, 0, dtype="bf16"),
    Shape("1x1 s2 n4 c64 k224 470x725", 4, 64, 224, (470, 725), 1, 2, 0, dtype="bf16"),
    Shape("1x1 s2 n4 c96 k224 470x725", 4, 96, 224, (470, 725), 1, 2, 0, dtype="bf16"),
    Shape("1x1 s2 n32 c64 k256 56x56", 32, 64, 256, (56, 56), 1, 2, 0),
    Shape("1x1 s1 n32 c64 k256 56x56", 32, 64, 256, (56, 56), 1, 1, 0),
    Shape("1x1 s2 n32 c96 k384 28x28", 32, 96, 384, (28, 28), 1, 2, 0),
)
# Layers whose grad_input is exactly twice dy's size at stride 2, beside
# the projection: the kernel writes them in whole 2 x 2 blocks.
BLOCKS = (
    Shape("R50 1x1 s2 n32 c512 k1024 28x28 (projection)", 32, 512, 1024, (28, 28), 1, 2, 0),
    Shape("1x1 s2 n32 c128 k256 56x56", 32, 128, 256, (56, 56), 1, 2, 0),
    Shape("1x1 s2 n32 c256 k512 112x112", 32, 256, 512, (112, 112), 1, 2, 0),
    Shape("R18 1x1 s2 n32 c64 k128 56x56 (projection)", 32, 64, 128, (56, 56), 1, 2, 0),
    Shape("R18 1x1 s2 n32 c128 k256 28x28 (projection)", 32, 128, 256, (28, 28), 1, 2, 0),
)
# Layers the kernel writes in pairs, beside the benchmark's with rows of odd
# length: ResNet-50's last projection (rows of 7), and seed 003's c32 layer
# 720 wide, its rows even (the narrow tile writes no blocks).
PAIRS = (
    Shape("R50 1x1 s2 n32 c1024 k2048 14x14 (projection)", 32, 1024, 2048, (14, 14), 1, 2, 0),
    Shape("1x1 s2 n4 c32 k224 470x720", 4, 32, 224, (470, 720), 1, 2, 0, dtype="bf16"),
    Shape("1x1 s2 n32 c64 k256 14x14", 32, 64, 256, (14, 14), 1, 2, 0),
    Shape("1x1 s2 n32 c96 k192 50x50", 32, 96, 192, (50, 50), 1, 2, 0),
)
LAYERS = (*(s for s in (*SHAPES, *RESNET50_H100) if s.kernel == 1 and s.dtype != "f32"), *NARROW, *BLOCKS, *PAIRS)
# (channels, positions, depth, warps, stages): the tiles the kernel had
# until the wide and middle tiles of docs/performance-journal.md's "Smaller tiles
# for the 1x1 kernel": stop 28's wide tile, and the narrow tile, which
# layers of 64-127 channels took. Stop 29 also tried (32, 256, 32, 4, 3) and
# (32, 512, 16, 8, 3) on few channels ("A narrow tile for few channels").
CANDIDATE_TILES = ((128, 128, 32, 8, 3), (32, 128, 32, 4, 4))
# The tiles stop 30 swept ("Smaller tiles for the 1x1 kernel"): on layers
# of 128 or more channels, then on fewer.
SWEEP_TILES = ((128, 64, 32, 4, 4), (128, 64, 32, 4, 3), (128, 64, 64, 4, 3), (64, 64, 32, 4, 4),
               (128, 32, 32, 4, 4), (256, 64, 32, 8, 3), (128, 64, 32, 8, 4))
SWEEP_NARROW_TILES = ((32, 64, 32, 2, 4), (32, 128, 32, 2, 4), (64, 64, 32, 4, 4), (32, 64, 64, 2, 3))
# The middle tile the pairs form had until it took its own ("Pairs of a
# value and a zero"), for `middle`: the other forms' middle tile.
OLD_PAIRS_MIDDLE_TILE = catalog.MIDDLE_TILE


def tile_name(tile: Sequence[int]) -> str:
    return "tile-{}x{}x{}-w{}-s{}".format(*tile)


@contextlib.contextmanager
def kernel_tile(folder: Path, tile: Sequence[int]) -> Iterator[None]:
    """Lowerings inside the block link the kernel compiled with `tile`
    (its PTX written into `folder`), in the form of the shipped variant it
    replaces."""
    from iree_bwdconv.kernels import generate  # imports Triton

    def variant(dtype: str, arguments: Sequence[int]) -> catalog.Variant:
        positions = arguments[catalog.ARGUMENTS.index("OHW")]
        ptx, entry = generate.compile_variant(dtype, catalog.row_alignment(positions), tuple(tile),
                                              catalog.form(arguments))
        name = f"{tile_name(tile)}-{entry['ptx']}".replace("-", "_")
        path = folder / name
        path.write_text(ptx.replace(entry["ptx"].removesuffix(".ptx"), path.stem))
        return catalog.Variant(path.stem, path, tuple(entry["workgroup_size"]), entry["shared_memory"],
                               tile[0], tile[1])

    with mock.patch.object(catalog, "variant", variant):
        yield


@contextlib.contextmanager
def values_only() -> Iterator[None]:
    """Lowerings inside the block take the kernel's form that stores only
    values, into zeros, where they would write whole 2 x 2 blocks or pairs."""
    with mock.patch.object(catalog, "form", lambda arguments: ""):
        yield


TILE_MODES = ("tiles", "sweep", "middle")


def _tiles_for(shape: Shape, tiles: str) -> Sequence[Sequence[int]]:
    if tiles == "tiles":
        return CANDIDATE_TILES
    if tiles == "sweep":
        return SWEEP_TILES if shape.c >= catalog.WIDE_TILE[0] else SWEEP_NARROW_TILES
    if tiles == "middle":
        return (OLD_PAIRS_MIDDLE_TILE,) if catalog.MIDDLE_TILE[0] <= shape.c < catalog.WIDE_TILE[0] else ()
    return ()


def prepare(folder: Path, tiles: str = "", match: str = "") -> None:
    """Every layer, or those whose name `match` finds; `tiles` "tiles",
    "sweep" or "middle" adds the kernel compiled with other tiles."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, shape in enumerate(LAYERS):
        if not re.search(match, shape.name):
            continue
        mask = modules.GRAD_INPUT_ONLY
        texts = {"ours": modules.ours(shape, mask, "cuda"), "linalg-gemm": modules.ours(shape, mask, "cuda", "per-phase")}
        with values_only():
            values = modules.lowered_uncached(shape, mask, "cuda")
        if values != texts["ours"]:
            texts["values-only"] = values
        for tile in _tiles_for(shape, tiles):
            with kernel_tile(folder, tile):
                texts[tile_name(tile)] = modules.lowered_uncached(shape, mask, "cuda")
        manifest += grad_input_entries(folder, f"k{index}", shape, texts)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def report(results_path: Path, gpu_path: Optional[Path] = None) -> None:
    """Per layer and variant, ours / IREE's matmul: the median call, then
    the GPU's busy time per call where `gpu_path` has it."""
    calls: dict[str, dict[str, float]] = {}
    for r in json.loads(results_path.read_text()):
        if r.get("median_ms"):
            calls.setdefault(r["shape"], {})[r["variant"]] = r["median_ms"]
    busy: dict[str, dict[str, float]] = {}
    for r in json.loads(gpu_path.read_text()) if gpu_path else ():
        busy.setdefault(r["shape"], {})[r["variant"]] = r["gpu_busy_us"]
    shapes = [s.name for s in LAYERS if "iree-matmul" in calls.get(s.name, {})]
    names = sorted({v for s in shapes for v in calls[s]} - {"ours", "iree-matmul"})

    def cell(shape: str, name: str) -> str:
        if name not in calls[shape]:
            return "-"
        ratio = f"{calls[shape][name] / calls[shape]['iree-matmul']:.2f}"
        gpu = busy.get(shape, {})
        return ratio + (f" / {gpu[name] / gpu['iree-matmul']:.2f}" if name in gpu and "iree-matmul" in gpu else "")

    print("| variant | " + " | ".join(shapes) + " |")
    print("|---|" + "---|" * len(shapes))
    matmul = [f"{calls[s]['iree-matmul']:.3f}" + (f" / {busy[s]['iree-matmul']:.0f}" if s in busy else "")
              for s in shapes]
    print(f"| IREE matmul, ms{' / GPU us' if busy else ''} | " + " | ".join(matmul) + " |")
    for name in ("ours", *names):
        print(f"| {name} | " + " | ".join(cell(s, name) for s in shapes) + " |")


if __name__ == "__main__":
    command, path, rest = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    if command == "prepare":
        kind = next((word for word in rest if word in TILE_MODES), "")
        match = [word for word in rest if word != kind]
        prepare(path, kind, match[0] if match else "")
    else:
        report(path, Path(rest[0]) if rest else None)
