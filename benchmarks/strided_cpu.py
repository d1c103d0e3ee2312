"""The evidence for the CPU's strided grad_input rule: each form the
lowering can emit (the col2im form, per-phase convolutions, the direct form
over zero-inserted grad_output) against torch eager, on the strided layers
of the CPU sample, ResNet-18/50 and the demo CNN, f32, grad_input only.

    ./dev python -m benchmarks.strided_cpu [SHAPE-NAME-PART]

Every module is compiled first; then each round times every form and eager
in turn (IREE: iree-benchmark-module's median; eager: median of 3 calls),
and the table gives the median over ROUNDS rounds, so that the drift of
this shared machine hits every column alike.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

import torch

from iree_bwdconv.compiler import pipeline

from . import cpu, modules
from .shapes import Shape

FORMS = ("col2im", "per-phase", "direct")
ROUNDS = 5

SHAPES = tuple(s for s in cpu.SHAPES if s.stride > 1 and s.kernel > 1) + (
    Shape("R18 7x7 s2 n4 c3 k64 64x64 (stem)", 4, 3, 64, (64, 64), 7, 2, 3, dtype="f32"),
    Shape("R18 3x3 s2 n4 c64 k128 16x16", 4, 64, 128, (16, 16), 3, 2, 1, dtype="f32"),
    Shape("R18 3x3 s2 n4 c128 k256 8x8", 4, 128, 256, (8, 8), 3, 2, 1, dtype="f32"),
    Shape("R18 3x3 s2 n4 c256 k512 4x4", 4, 256, 512, (4, 4), 3, 2, 1, dtype="f32"),
    Shape("R50 3x3 s2 n2 c128 k128 56x56", 2, 128, 128, (56, 56), 3, 2, 1, dtype="f32"),
    Shape("demo 3x3 s2 n16 c16 k32 16x16", 16, 16, 32, (16, 16), 3, 2, 1, dtype="f32"),
    Shape("demo depthwise 3x3 s2 n16 c32 k32 8x8", 16, 32, 32, (8, 8), 3, 2, 1, groups=32, dtype="f32"),
    Shape("3x3 s3 n2 c32 k32 45x45", 2, 32, 32, (45, 45), 3, 3, 1, dtype="f32"),
)


def compile_form(shape: Shape, form: str, directory: Path) -> Path:
    path = directory / f"{form}.vmfb"
    path.write_bytes(pipeline.iree_compile(modules.ours(shape, modules.GRAD_INPUT_ONLY, "cpu", form), "cpu"))
    return path


def main(argv: list[str]) -> int:
    torch.set_num_threads(2)
    wanted = argv[0] if argv else ""
    columns = " | ".join(f"{form} ms" for form in FORMS)
    print(f"| shape | eager ms | {columns} | best form | col2im / direct | col2im / eager |")
    print("|---|---|" + "---|" * len(FORMS) + "---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in (s for s in SHAPES if wanted in s.name):
            modules_ = {form: compile_form(shape, form, Path(tmp)) for form in FORMS}
            samples: dict[str, list[float]] = {name: [] for name in ("eager", *FORMS)}
            for _ in range(ROUNDS):
                samples["eager"].append(cpu.eager_ms(shape, modules.GRAD_INPUT_ONLY))
                for form, path in modules_.items():
                    samples[form].append(cpu.iree_ms(path, shape))
            med = {name: statistics.median(values) for name, values in samples.items()}
            best = min(FORMS, key=med.__getitem__)
            times = " | ".join(f"{med[form]:.2f}" for form in FORMS)
            print(f"| {shape.name} | {med['eager']:.2f} | {times} | {best} | "
                  f"{med['col2im'] / med['direct']:.2f} | {med['col2im'] / med['eager']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
