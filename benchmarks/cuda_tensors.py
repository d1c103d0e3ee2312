"""torch tensors on the GPU through the project's runtime: compiles a few
layers' gradients for CUDA for `cuda_tensors_on_gpu.py`, which calls them
through `runtime.LoadedModule` with the tensors on cuda:0 (they cross into
IREE by DLPack) and with the same tensors on the CPU (copied through host
arrays), checks both against each other and torch's float64 results, and
times both. CI has no GPU, so this is how that path is checked.

    ./dev python -m benchmarks.cuda_tensors prepare .bench-cuda-tensors     # here
    PYTHONPATH=. python3 benchmarks/cuda_tensors_on_gpu.py .bench-cuda-tensors results.json   # there
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from . import modules
from .forms import RESNET50_H100
from .shapes import SHAPES, Shape


def _named(part: str, shapes: tuple[Shape, ...]) -> Shape:
    return next(s for s in shapes if part in s.name)


# (shape, dtype, gradients): every dtype, grad_input alone and all three,
# results from a few MB to 115 MB.
LAYERS = (
    (_named("projection", RESNET50_H100), "f16", modules.ALL_GRADS),
    (_named("R50 3x3 s1 n32 c128", RESNET50_H100), "f32", modules.ALL_GRADS),
    (_named("c896 k2016", SHAPES), "bf16", modules.GRAD_INPUT_ONLY),
    (_named("Retinanet", SHAPES), "f16", modules.GRAD_INPUT_ONLY),
)


def prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, (shape, dtype, mask) in enumerate(LAYERS):
        shape = dataclasses.replace(shape, dtype=dtype)
        spec = dict(n=shape.n, c=shape.c, k=shape.k, hw=shape.hw, kernel=shape.kernel, stride=shape.stride,
                    padding=shape.padding, groups=shape.groups, dtype=shape.dtype, output_mask=list(mask))
        manifest.append(modules.compiled_entry(
            folder, modules.ours(shape, mask, "cuda"), "cuda", shape=shape.name, variant="ours",
            mask="all" if all(mask) else "grad_input", vmfb=f"t{index}.vmfb", spec=spec))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    if sys.argv[1:2] != ["prepare"] or len(sys.argv) != 3:
        sys.exit(__doc__)
    prepare(Path(sys.argv[2]))
