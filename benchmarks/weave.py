"""How the phases of a strided grad_input reach its positions on the GPU:
woven into the [q, s] position grid and cut to grad_input's size (a copy
where s does not divide it), or written straight into grad_input's own
positions by one elementwise op that reads each phase at (i floordiv s);
for 1x1 kernels, also the single phase inserted with stride into zeros.

    ./dev python -m benchmarks.weave prepare .bench-weave    # here
    python3 benchmarks/run_on_gpu.py .bench-weave results.json   # there
    ./dev python -m benchmarks.weave report results.json     # here
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Iterator

import patterns.convolution_backward_phases as phases

from . import modules
from .gpu import print_variant_table
from .strided_gpu import RULE_SHAPES, STRIDED
from .shapes import Shape

SHAPES = [s for s in (*STRIDED, *RULE_SHAPES) if s.groups == 1]


@contextlib.contextmanager
def placement(weave: str, single_insert: bool) -> Iterator[None]:
    saved = phases.WEAVE, phases.SINGLE_PHASE_INSERT
    phases.WEAVE, phases.SINGLE_PHASE_INSERT = weave, single_insert
    try:
        yield
    finally:
        phases.WEAVE, phases.SINGLE_PHASE_INSERT = saved


def variants(shape: Shape) -> Iterator[tuple[str, str, bool, str]]:
    """(name, form, insert a single phase with stride, weave)."""
    forms = ("per-phase",) if shape.kernel == 1 else ("per-phase", "col2im")
    for form in forms:
        if shape.kernel == 1:
            yield "insert", form, True, "grid"
            yield "grid", form, False, "grid"
        else:
            yield f"{form}-grid", form, True, "grid"
        yield (f"{form}-positions" if shape.kernel > 1 else "positions"), form, False, "positions"


def prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, shape in enumerate(SHAPES):
        for name, form, single_insert, weave in variants(shape):
            with placement(weave, single_insert):
                text = modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", form)
            manifest.append(modules.compiled_entry(folder, text, "cuda", shape=shape.name, mask="grad_input",
                                                   variant=name, vmfb=f"w{index}-{name}.vmfb",
                                                   inputs=modules.input_specs(shape)))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    command, path = sys.argv[1], Path(sys.argv[2])
    prepare(path) if command == "prepare" else print_variant_table(path, SHAPES)
