"""Are the GPU's numbers right? Compiles grad_input and grad_weight of a set
of layers for CUDA, each in the form the lowering picks or a forced one, for
`check_on_gpu.py` to run on the H100 against torch's float64 gradients
(and, optionally, under compute-sanitizer's memcheck). CI has no GPU, so
this is how the GPU's code is checked.

    ./dev python -m benchmarks.gpu_check prepare .bench-check      # here
    python3 benchmarks/check_on_gpu.py .bench-check [memcheck]     # there
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Iterator, NamedTuple

import torch

import patterns.convolution_backward_phases as phases
from iree_bwdconv import functional, pipeline


class Case(NamedTuple):
    name: str
    n: int
    c: int
    k: int
    hw: int
    kernel: int
    stride: int
    padding: int
    groups: int
    form: str  # "auto": the rule's
    dtype: str


CASES = [
    Case(f"{name}_{dtype}", *sizes, dtype)
    for dtype in ("f32", "f16")
    for name, *sizes in (
        ("1x1_s2_g4", 8, 64, 128, 28, 1, 2, 0, 4, "auto"),
        ("1x1_s2_g4_direct", 8, 64, 128, 28, 1, 2, 0, 4, "direct"),
        ("1x1_s2", 8, 64, 128, 28, 1, 2, 0, 1, "auto"),
        ("1x1_s2_g32", 32, 256, 256, 100, 1, 2, 0, 32, "auto"),
        ("3x3_s2_g32", 4, 256, 256, 50, 3, 2, 1, 32, "auto"),
        ("3x3_s2_g32_per_phase", 4, 256, 256, 50, 3, 2, 1, 32, "per-phase"),
        ("dw3x3_s2", 8, 64, 64, 56, 3, 2, 1, 64, "auto"),
        ("3x3_s2_c64", 8, 64, 64, 25, 3, 2, 1, 1, "auto"),
        ("3x3_s2_c64_col2im", 8, 64, 64, 25, 3, 2, 1, 1, "col2im"),
        ("3x3_s2_c64_direct", 8, 64, 64, 25, 3, 2, 1, 1, "direct"),
        ("3x3_s2_c3", 2, 3, 32, 224, 3, 2, 1, 1, "auto"),
        ("3x3_s2_c256", 8, 256, 256, 50, 3, 2, 1, 1, "auto"),
        ("3x3_s1_c64", 8, 64, 64, 28, 3, 1, 1, 1, "auto"),
        ("1x1_s1", 8, 64, 128, 28, 1, 1, 0, 1, "auto"),
    )
]

_DTYPES = {"f32": torch.float32, "f16": torch.float16}


@contextlib.contextmanager
def _form(form: str) -> Iterator[None]:
    saved = os.environ.get(phases.FORM_VARIABLE)
    os.environ[phases.FORM_VARIABLE] = form
    functional.clear_cache()
    try:
        yield
    finally:
        os.environ.pop(phases.FORM_VARIABLE)
        if saved is not None:
            os.environ[phases.FORM_VARIABLE] = saved
        functional.clear_cache()


def prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        out = (case.hw + 2 * case.padding - case.kernel) // case.stride + 1
        dtype = _DTYPES[case.dtype]
        dy = torch.zeros(case.n, case.k, out, out, dtype=dtype)
        x = torch.zeros(case.n, case.c, case.hw, case.hw, dtype=dtype)
        w = torch.zeros(case.k, case.c // case.groups, case.kernel, case.kernel, dtype=dtype)
        spec = functional.spec_of(dy, x, w, None, [case.stride] * 2, [case.padding] * 2, [1, 1], False,
                                  [0, 0], case.groups, [True, True, False])
        with _form(case.form):
            mlir = functional.lowered(spec, target="cuda")
        (folder / f"{case.name}.vmfb").write_bytes(pipeline.iree_compile(mlir, "cuda"))
        print(case.name, flush=True)
    (folder / "cases.json").write_text(json.dumps([c._asdict() for c in CASES], indent=1))


if __name__ == "__main__":
    prepare(Path(sys.argv[2]))
