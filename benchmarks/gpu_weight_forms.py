"""The GPU's weight-gradient forms on strided f16 layers: one contraction
split by images against im2col + a split matmul, each forced, grad_weight
only; right (against float64, with `check_on_gpu.py`) and how fast (with
`run_on_gpu.py`). The evidence for `gradients.grad_weight_by_im2col`'s
strided f16/bf16 branch.

    ./dev python -m benchmarks.gpu_weight_forms prepare .bench-weight   # here
    python3 benchmarks/check_on_gpu.py .bench-weight                    # there
    python3 benchmarks/run_on_gpu.py .bench-weight results.json        # there
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Iterator

import torch

from iree_bwdconv import functional, gradients, pipeline

from . import gpu_check

# name, n, c, k, hw, kernel, stride, padding: ResNet-50's strided layers and
# a few smaller ones; one stride-1 control.
LAYERS = (
    ("3x3_s2_c64_56_n32", 32, 64, 64, 56, 3, 2, 1),
    ("3x3_s2_c128_56_n32", 32, 128, 128, 56, 3, 2, 1),
    ("3x3_s2_c256_28_n32", 32, 256, 256, 28, 3, 2, 1),
    ("3x3_s2_c256_50_n32", 32, 256, 256, 50, 3, 2, 1),
    ("3x3_s2_c64_25_n8", 8, 64, 64, 25, 3, 2, 1),
    ("1x1_s2_c256_56_n32", 32, 256, 512, 56, 1, 2, 0),
    ("1x1_s2_c64_28_n8", 8, 64, 128, 28, 1, 2, 0),
    ("7x7_s2_c3_224_n32", 32, 3, 64, 224, 7, 2, 3),
    ("3x3_s1_c64_56_n32", 32, 64, 64, 56, 3, 1, 1),
)
FORMS = {"contraction": lambda spec: False, "im2col": lambda spec: True}


@contextlib.contextmanager
def _weight_form(form: str) -> Iterator[None]:
    chosen = gradients.grad_weight_by_im2col
    gradients.grad_weight_by_im2col = FORMS[form]
    functional.clear_cache()
    try:
        yield
    finally:
        gradients.grad_weight_by_im2col = chosen
        functional.clear_cache()


def prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    cases, manifest = [], []
    for name, n, c, k, hw, kernel, stride, padding in LAYERS:
        for form in FORMS:
            case = gpu_check.Case(f"{name}_{form}", n, c, k, hw, (kernel, kernel), stride, padding, 1, form, "f16")
            shapes, arguments = gpu_check.shapes(case), gpu_check.arguments(case)
            arguments[-1] = [False, True, False]  # grad_weight only
            tensors = {key: torch.zeros(size, dtype=torch.float16) for key, size in shapes.items()}
            with _weight_form(form):
                mlir = functional.lowered(functional.spec_of(tensors["dy"], tensors["x"], tensors["w"], *arguments),
                                          target="cuda")
            (folder / f"{case.name}.vmfb").write_bytes(pipeline.iree_compile(mlir, "cuda"))
            cases.append(dict(case._asdict(), shapes=shapes, arguments=arguments, known_wrong=None,
                              results=["grad_weight"]))
            manifest.append(dict(shape=name, mask="grad_weight", variant=form, vmfb=f"{case.name}.vmfb",
                                 inputs=["x".join(map(str, shapes[key])) + "xf16" for key in ("dy", "x", "w")]))
            print(case.name, flush=True)
    (folder / "cases.json").write_text(json.dumps(cases, indent=1))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    prepare(Path(sys.argv[2]))
