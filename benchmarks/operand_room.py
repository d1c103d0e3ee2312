"""What $IREE_BWDCONV_OPERAND_ROOM costs on CUDA: each shape's module of
all three gradients (and of grad_input alone) as the lowering emits it
and with room after its f16/bf16 contraction operands
(`iree_bwdconv.compiler.operand_room`), timed side by side by `run_on_gpu.py`.

    ./dev python -m benchmarks.operand_room prepare DIR [MATCH]   # here
    python3 benchmarks/run_on_gpu.py DIR DIR/results.json        # there
    ./dev python -m benchmarks.operand_room table DIR/results.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from iree_bwdconv.compiler import operand_room

from . import modules
from .gpu import ALL_SHAPES
from .shapes import Shape

MASKS = {"grad_input": modules.GRAD_INPUT_ONLY, "all": modules.ALL_GRADS}


def _half(shape: Shape) -> bool:
    return shape.dtype in ("f16", "bf16")


def prepare(folder: Path, match: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, shape in enumerate(ALL_SHAPES):
        if not _half(shape) or not re.search(match, shape.name):
            continue
        for mask_name, mask in MASKS.items():
            usual = modules.ours(shape, mask, "cuda")
            for variant, text in (("usual", usual), ("room", operand_room.give(usual))):
                manifest.append(modules.compiled_entry(folder, text, "cuda", shape=shape.name, mask=mask_name,
                                                       variant=variant, vmfb=f"s{index}-{mask_name}-{variant}.vmfb",
                                                       inputs=modules.input_specs(shape)))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def table(results_path: Path) -> None:
    """Median ms of each module, and room's over the usual module's."""
    times: dict[tuple[str, str], dict[str, float]] = {}
    for record in json.loads(results_path.read_text()):
        if record.get("median_ms"):
            times.setdefault((record["shape"], record["mask"]), {})[record["variant"]] = record["median_ms"]
    print("| shape | gradients | usual ms | room ms | room / usual |")
    print("|---|---|---|---|---|")
    for (shape, mask), row in times.items():
        if "usual" in row and "room" in row:
            print(f"| {shape} | {mask} | {row['usual']:.3f} | {row['room']:.3f} | {row['room'] / row['usual']:.2f} |")


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
    else:
        table(Path(sys.argv[2]))
