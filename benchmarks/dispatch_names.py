"""What IREE saw in each form of benchmarks/forms.py: the names IREE gives
its dispatches (conv_..., matmul_..., matmul_like_..., generic_...,
transpose_..., slow_memcpy) after flow-level compilation for a target.

    ./dev python -m benchmarks.dispatch_names [cuda|cpu|gfx942]
"""

from __future__ import annotations

import re
import sys
import warnings

from iree_bwdconv.compiler import pipeline

from . import cpu, forms
from .shapes import SHAPES

_EXPORT = re.compile(r"flow\.executable\.export public @\S*?dispatch_\d+_(\S+?)[ (]")
_SIZES = re.compile(r"_\d+(x\d+)*(_[a-z0-9]+(x[a-z0-9]+)*)?$")


def dispatch_kinds(text: str, target: str, flags: tuple[str, ...]) -> list[str]:
    """Dispatch names without their sizes and element types, in order."""
    flow = pipeline.iree_compile_to(text, target, "flow", flags)
    return [_SIZES.sub("", name) for name in _EXPORT.findall(flow)]


def main(target: str) -> int:
    shapes = cpu.SHAPES if target == "cpu" else (*SHAPES, *forms.RESNET50_H100)
    print("| shape | gradient | ours | upstream | named-conv | named-matmul |")
    print("|---|---|---|---|---|---|")
    for shape in shapes:
        for gradient in forms.MASKS:
            cells = {name: ", ".join(dispatch_kinds(text, target, flags))
                     for name, (text, flags) in forms.variants(shape, gradient, target).items()}
            row = [cells.get(name, "-") for name in ("ours", "upstream", "named-conv", "named-matmul")]
            print(f"| {shape.name} | {gradient} | " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    warnings.filterwarnings("ignore", category=FutureWarning)
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "cuda"))
