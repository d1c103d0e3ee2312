"""The GPU's weight-gradient forms on strided f16/bf16 layers: one
contraction split by images, im2col + a split matmul, and a stride-1
contraction per stride phase (`weight_phases`), each forced, grad_weight
only, beside upstream (timed, not checked); right (against float64, with
`check_on_gpu.py`) and how fast (with `run_on_gpu.py`). The evidence for
`gradients.half_precision_contraction_wrong` (the stride-phase form was
wrong too: `weight_phases`).

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
from unittest import mock

import torch

from iree_bwdconv import functional, gradients, lowering, pipeline

from . import gpu_check, modules, weight_phases

# name, n, c, k, hw, kernel, stride, padding(, dtype): ResNet-50's strided
# layers, a few smaller ones and the strided layers of issues 3 and 5; one
# stride-1 control.
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
    ("1x1_s2_c1024_50_n32", 32, 1024, 2048, 50, 1, 2, 0),
    ("1x1_s2_c512_100_n32", 32, 512, 1024, 100, 1, 2, 0),
    ("1x1_s2_c896_59x91_n12_bf16", 12, 896, 2016, (59, 91), 1, 2, 0, "bf16"),
    ("1x1_s2_c448_118x182_n10_bf16", 10, 448, 896, (118, 182), 1, 2, 0, "bf16"),
    ("5x5_s2_c128_40x175_n16", 16, 128, 256, (40, 175), 5, 2, 1),
    ("3x3_s2_c256_25_n32", 32, 256, 256, 25, 3, 2, 1),
    ("3x3_s2_c384_277x209_n1", 1, 384, 384, (277, 209), 3, 2, 1),
)
# form -> (grad_weight_by_im2col forced, the stride-phase form of `weight_phases` instead)
FORMS = {"contraction": (False, False), "im2col": (True, False), "stride-phase": (False, True)}


def _by_stride_phase(spec, grad_output, input_):
    return weight_phases.grad_weight(spec, grad_output, input_, gradients.grad_weight_contraction)


@contextlib.contextmanager
def _weight_form(form: str) -> Iterator[None]:
    by_im2col, by_phase = FORMS[form]
    builder = _by_stride_phase if by_phase else gradients.grad_weight
    with mock.patch.object(gradients, "grad_weight_by_im2col", lambda spec: by_im2col), \
            mock.patch.object(gradients, "grad_weight", builder):
        functional.clear_cache()
        try:
            yield
        finally:
            functional.clear_cache()


def prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    cases, manifest = [], []
    for name, n, c, k, hw, kernel, stride, padding, *dtype in LAYERS:
        dtype = dtype[0] if dtype else "f16"
        sizes = (hw, hw) if isinstance(hw, int) else hw
        layer = gpu_check.Case(name, n, c, k, sizes, (kernel, kernel), stride, padding, 1, "auto", dtype)
        shapes, arguments = gpu_check.shapes(layer), gpu_check.arguments(layer)
        arguments[-1] = [False, True, False]  # grad_weight only
        tensors = {key: torch.zeros(size, dtype=gpu_check._DTYPES[dtype]) for key, size in shapes.items()}
        spec = functional.spec_of(tensors["dy"], tensors["x"], tensors["w"], *arguments)
        inputs = ["x".join(map(str, shapes[key])) + f"x{dtype}" for key in ("dy", "x", "w")]
        for form in FORMS:
            case = layer._replace(name=f"{name}_{form}", form=form)
            with _weight_form(form):
                mlir = functional.lowered(spec, target="cuda")
            (folder / f"{case.name}.vmfb").write_bytes(pipeline.iree_compile(mlir, "cuda"))
            cases.append(dict(case._asdict(), shapes=shapes, arguments=arguments, known_wrong=None,
                              results=["grad_weight"]))
            manifest.append(dict(shape=name, mask="grad_weight", variant=form, vmfb=f"{case.name}.vmfb",
                                 inputs=inputs))
            print(case.name, flush=True)
        upstream = str(lowering.import_module(functional.ConvolutionBackward(spec, None), *tensors.values()))
        (folder / f"{name}_upstream.vmfb").write_bytes(
            pipeline.iree_compile(upstream, "cuda", modules.UPSTREAM_FLAGS))
        manifest.append(dict(shape=name, mask="grad_weight", variant="upstream", vmfb=f"{name}_upstream.vmfb",
                             inputs=inputs))
    (folder / "cases.json").write_text(json.dumps(cases, indent=1))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    prepare(Path(sys.argv[2]))
