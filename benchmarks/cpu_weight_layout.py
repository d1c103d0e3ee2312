"""The layout of the CPU's grad_weight im2col gather: rows of positions
into the named matmul, or columns-first with both operands read along the
reduction (`gradients.im2col_columns_first`), beside torch eager, on the
CPU shapes of `benchmarks/cpu.py` (f32, two threads), interleaved rounds.

    ./dev python -m benchmarks.cpu_weight_layout [ROUNDS] [SHAPE-NAME-PART]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path
from unittest import mock

import torch

from iree_bwdconv import gradients, pipeline, targets
from iree_bwdconv.functional import spec_of

from . import cpu, modules

GRAD_WEIGHT = (False, True, False)


def compiled(folder: Path, shape, columns_first: bool) -> Path:
    path = folder / f"{'columns-first' if columns_first else 'rows'}.vmfb"
    with mock.patch.object(gradients, "im2col_columns_first", lambda spec: columns_first):
        path.write_bytes(pipeline.iree_compile(modules.lowered_uncached(shape, GRAD_WEIGHT), "cpu"))
    return path


def main(rounds: int, match: str) -> int:
    torch.set_num_threads(2)
    print("| shape | eager ms | rows (named matmul) ms | columns-first ms | rows / columns-first | picked |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in cpu.SHAPES:
            if match not in shape.name:
                continue
            forms = {first: compiled(Path(tmp), shape, first) for first in (False, True)}
            samples: dict[str, list[float]] = {"eager": [], "rows": [], "first": []}
            for _ in range(rounds):
                samples["eager"].append(cpu.eager_ms(shape, GRAD_WEIGHT))
                samples["rows"].append(cpu.iree_ms(forms[False], shape))
                samples["first"].append(cpu.iree_ms(forms[True], shape))
            med = {k: statistics.median(v) for k, v in samples.items()}
            rule = "columns-first" if picked(shape) else "rows"
            print(f"| {shape.name} | {med['eager']:.2f} | {med['rows']:.2f} | {med['first']:.2f} | "
                  f"{med['rows'] / med['first']:.2f} | {rule} |", flush=True)
    return 0


def picked(shape) -> bool:
    """Whether the lowering's rule takes columns-first for `shape`."""
    tensors = modules.example_tensors(shape)
    with targets.lowering_for("cpu"):
        return gradients.im2col_columns_first(spec_of(*tensors, *modules.arguments(shape, GRAD_WEIGHT)))


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, sys.argv[2] if len(sys.argv) > 2 else ""))
