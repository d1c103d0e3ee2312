"""H100 timings of the strided data gradient: ours vs upstream (IREE's own
torch input), plus torch eager (cuDNN) and, for 1x1 shapes, IREE's own
matmul of the same GEMM as the ceiling.

The GPU machine has no IREE compiler, so this runs in two halves:

    ./dev python -m benchmarks.gpu prepare .bench [auto] [MATCH]  # here: compile .vmfb files, write manifest.json
    python3 benchmarks/run_on_gpu.py .bench results.json   # there, with iree-base-runtime installed
    ./dev python -m benchmarks.gpu report results.json # here: the tables of docs/performance-journal.md
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Optional, Sequence

import torch

from iree_bwdconv import lowering
from iree_bwdconv.compiler import pipeline
from iree_bwdconv import options as lowering_options

from . import modules
from .forms import RESNET50_H100
from .shapes import SHAPES, Shape

# Issue 3's shapes, then issue 5's ResNet-50 sample at n32.
ALL_SHAPES = (*SHAPES, *RESNET50_H100)


class MatMul(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def _variants(shape: Shape, mask, forced_forms: bool = True) -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (MLIR text, extra iree-compile flags): upstream, ours as the
    rule picks, and (`forced_forms`) each strided grad_input form."""
    out = {"upstream": (modules.raw_torch(shape, mask), modules.UPSTREAM_FLAGS)}
    forms = ["auto"]
    if forced_forms and mask == modules.GRAD_INPUT_ONLY and shape.stride > 1 and shape.kernel > 1:
        forms += ["per-phase", "sub-pixel", "col2im"]
    if shape.stride > 1 and shape.kernel == 1:
        forms += ["per-phase"]  # the linalg GEMM, which the kernel replaces in f16/bf16
    for form in forms:
        out[f"ours-{form}"] = (modules.ours(shape, mask, "cuda", form), ())
    return out


def iree_matmul_entry(folder: Path, shape: Shape, vmfb: str) -> dict:
    """IREE's own matmul of a 1x1 grad_input's GEMM ([n*o, k] x [k, c]),
    compiled into folder/vmfb: the ceiling of the 1x1 forms. Its manifest entry."""
    m = shape.n * shape.out_hw[0] * shape.out_hw[1]
    a, b = torch.zeros(m, shape.k, dtype=shape.torch_dtype), torch.zeros(shape.k, shape.c, dtype=shape.torch_dtype)
    cuda = lowering_options.from_environment("cuda")
    (folder / vmfb).write_bytes(pipeline.iree_compile(lowering.lower(MatMul(), a, b, target=cuda), "cuda"))
    return dict(shape=shape.name, mask="grad_input", variant="iree-matmul", vmfb=vmfb,
                inputs=[f"{m}x{shape.k}x{shape.dtype}", f"{shape.k}x{shape.c}x{shape.dtype}"])


def grad_input_entries(folder: Path, stem: str, shape: Shape, texts: dict[str, str]) -> list[dict]:
    """Manifest entries of one 1x1 shape's grad_input modules, each text
    compiled for CUDA into folder/STEM-NAME.vmfb, then IREE's own matmul of its GEMM."""
    entries = [modules.compiled_entry(folder, text, "cuda", shape=shape.name, mask="grad_input", variant=name,
                                      vmfb=f"{stem}-{name}.vmfb", inputs=modules.input_specs(shape))
               for name, text in texts.items()]
    return [*entries, iree_matmul_entry(folder, shape, f"{stem}-iree-matmul.vmfb")]


def print_variant_table(results_path: Path, shapes: Sequence[Shape], names: Optional[Sequence[str]] = None) -> None:
    """One row per shape, one column per variant (all of them unless `names`), median ms."""
    results = json.loads(results_path.read_text())
    table: dict[str, dict[str, Optional[float]]] = {}
    for r in results:
        table.setdefault(r["shape"], {})[r["variant"]] = r.get("median_ms")
    names = list(names or sorted({r["variant"] for r in results}))
    print("| shape | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for shape in shapes:
        row = table.get(shape.name, {})
        print(f"| {shape.name} | " + " | ".join(f"{row[n]:.3f}" if row.get(n) else "-" for n in names) + " |")


def prepare(folder: Path, forced_forms: bool = True, match: str = "") -> None:
    """Every shape, or those whose name `match` (a regular expression) finds."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, shape in enumerate(ALL_SHAPES):
        if not re.search(match, shape.name):
            continue
        for mask_name, mask in (("grad_input", modules.GRAD_INPUT_ONLY), ("all", modules.ALL_GRADS)):
            for variant, (text, flags) in _variants(shape, mask, forced_forms).items():
                manifest.append(modules.compiled_entry(folder, text, "cuda", flags, shape=shape.name, mask=mask_name,
                                                       variant=variant, vmfb=f"s{index}-{mask_name}-{variant}.vmfb",
                                                       inputs=modules.input_specs(shape)))
        if shape.kernel == 1:
            manifest.append(iree_matmul_entry(folder, shape, f"s{index}-grad_input-iree-matmul.vmfb"))
        manifest.append(modules.eager_entry(shape, "grad_input"))
        manifest.append(modules.eager_entry(shape, "all"))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def report(results_path: Path) -> None:
    results = json.loads(results_path.read_text())
    table: dict[tuple[str, str], dict[str, float]] = {}
    for r in results:
        table.setdefault((r["shape"], r["mask"]), {})[r["variant"]] = r.get("median_ms")
    for mask in ("grad_input", "all"):
        variants = sorted({v for (s, m), row in table.items() if m == mask for v in row})
        print(f"\n### {mask} (median ms)\n")
        print("| shape | " + " | ".join(variants) + " | upstream / ours-auto |")
        print("|---|" + "---|" * (len(variants) + 1))
        for shape in ALL_SHAPES:
            row = table.get((shape.name, mask), {})
            if not row:
                continue
            cells = [f"{row[v]:.3f}" if row.get(v) else "-" for v in variants]
            ratio = f"{row['upstream'] / row['ours-auto']:.2f}" if row.get("ours-auto") and row.get("upstream") else "-"
            print(f"| {shape.name} | " + " | ".join(cells) + f" | {ratio} |")


def report_runs(results_paths: Sequence[Path]) -> None:
    """The 1x1 tables of docs/performance-journal.md: a row per shape and run (a,
    b, ...), ours against IREE's matmul, the linalg GEMM (the per-phase
    form forced), eager and upstream."""
    runs: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for tag, path in zip("abcdefgh", results_paths):
        for r in json.loads(path.read_text()):
            runs.setdefault((r["shape"], r["mask"]), {}).setdefault(tag, {})[r["variant"]] = r.get("median_ms")

    def ms(value: Optional[float]) -> str:
        return f"{value:.3f}" if value else "-"

    def ratio(top: Optional[float], bottom: Optional[float]) -> str:
        return f"{top / bottom:.2f}" if top and bottom else "-"

    for mask in ("grad_input", "all"):
        matmul = mask == "grad_input"
        print(f"\n### {mask} (median ms)\n")
        print("| shape | run |" + (" IREE matmul |" if matmul else "") + " ours | linalg GEMM | torch eager | upstream "
              "| upstream / ours |" + (" ours / matmul |" if matmul else ""))
        print("|---|---|" + "---|" * (7 if matmul else 5))
        for shape in ALL_SHAPES:
            for i, (tag, row) in enumerate(runs.get((shape.name, mask), {}).items()):
                ours = row.get("ours-auto")
                cells = [ms(row.get("iree-matmul"))] if matmul else []
                cells += [ms(ours), ms(row.get("ours-per-phase")), ms(row.get("torch-eager")), ms(row.get("upstream")),
                          ratio(row.get("upstream"), ours)]
                cells += [ratio(ours, row.get("iree-matmul"))] if matmul else []
                print(f"| {shape.name if i == 0 else ''} | {tag} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    # prepare PATH [auto] [MATCH]: with "auto", ours only as the rule picks (no
    # forced forms); with MATCH, only the shapes whose name it finds (a regex).
    # report RESULTS...: one file, a table per gradient mask; several, a row
    # per run.
    command, path, rest = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    if command == "prepare":
        prepare(path, rest[:1] != ["auto"], rest[1] if len(rest) > 1 else "")
    elif rest:
        report_runs([path, *map(Path, rest)])
    else:
        report(path)
