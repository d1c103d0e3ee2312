"""Which dispatches IREE 3.13 pads to its MMA tiles on CUDA, for the layers
of a random draw (`gpu_random_check.draws`). Where a row or column dim's
last tile is partial, the threads of its missing rows read the row just
past the operand (`overread_repro.py`), and memcheck flags the read where
that operand ends its allocation (docs/performance-journal.md,
"Reads past an operand's end"). Static: compiled here to IREE's executable
configurations, nothing runs.

    ./dev python -m benchmarks.padded_mma SEED COUNT [FAMILY ...]

Prints each layer with a padded dispatch, its dispatches and their
`padding`, then how many layers had one.
"""

from __future__ import annotations

import re
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Sequence

from iree_bwdconv import functional
from iree_bwdconv.compiler import pipeline

from .gpu_compile_sweep import spec_of
from .gpu_random_check import draws

_FUNCTION = re.compile(r"func\.func @(\w+)\(")
_PADDING = re.compile(r"padding = \[([0-9, ]+)\]")


def padded_dispatches(configurations: str) -> list[tuple[str, str]]:
    """(dispatch, padding) of each MMA lowering configuration with a
    `padding`, in IREE's executable-configurations text."""
    found, function = [], None
    for line in configurations.splitlines():
        if named := _FUNCTION.search(line):
            function = named.group(1)
        padding = _PADDING.search(line)
        if padding and "mma_kind" in line:
            found.append((function, padding.group(1)))
    return found


def _layer(layer: dict) -> tuple[str, list[tuple[str, str]]]:
    spec = spec_of(layer, layer["mask"])
    mlir = functional.lowered(spec, (layer["k"],), "cuda")
    return layer["name"], padded_dispatches(pipeline.iree_compile_to(mlir, "cuda", "executable-configurations"))


def main(seed: int, count: int, families: Sequence[str]) -> None:
    layers = draws(seed, count, families)
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(_layer, layers))
    for name, found in results:
        if found:
            print(name, " ".join(f"{dispatch} [{padding}]" for dispatch, padding in found), flush=True)
    print(f"{sum(bool(found) for _, found in results)} of {len(results)} layers have a padded MMA dispatch")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:] or ("kernel", "layer"))
