"""Two classes of strided layer against upstream on the GPU, every member
in one run: depthwise layers at stride 2 with kernels 3 to 7 wide, and
1x1 stride-2 f16 layers whose channels are and are not multiples of 8.
Each layer's data gradient alone and all three gradients, ours as the
rule picks (and, for 1x1, the linalg GEMM the kernel replaces), upstream
(IREE's own torch input) and torch eager; the depthwise layers' data
gradient also in each form the lowering has, forced.

    ./dev python -m benchmarks.classes_gpu prepare .bench-classes [PART ...]  # here (layers named with a PART)
    python3 benchmarks/run_on_gpu.py .bench-classes results.json          # there
    ./dev python -m benchmarks.classes_gpu report results.json            # here
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import modules
from .gpu import _variants
from .shapes import Shape

# MobileNet and EfficientNet's downsampling depthwise layers, widened to
# every odd and even width from 3 to 7; channels a multiple of 8 and not.
DEPTHWISE = tuple(
    Shape(f"dw{k}x{k} s2 n32 c{c} 56x56", 32, c, c, (56, 56), k, 2, (k - 1) // 2, groups=c)
    for c in (144, 100) for k in range(3, 8))

# ResNet-style projections; the channels of input and output each a
# multiple of 8 or not, narrow and wide.
ONE_BY_ONE_F16 = tuple(
    Shape(f"1x1 s2 n32 c{c} k{k} 56x56", 32, c, k, (56, 56), 1, 2, 0)
    for c, k in ((64, 128), (60, 120), (256, 512), (252, 504), (255, 512), (256, 510), (100, 200), (36, 72)))

SHAPES = (*DEPTHWISE, *ONE_BY_ONE_F16)
MASKS = (("grad_input", modules.GRAD_INPUT_ONLY), ("all", modules.ALL_GRADS))


# The data gradient's forms, each forced on the depthwise layers.
FORMS = ("per-phase", "col2im", "sub-pixel", "direct")


def variants(shape: Shape, mask: tuple[bool, bool, bool]) -> dict[str, tuple[str, tuple[str, ...]]]:
    found = _variants(shape, mask, forced_forms=False)
    if shape.groups > 1 and mask == modules.GRAD_INPUT_ONLY:
        found.update({f"ours-{form}": (modules.ours(shape, mask, "cuda", form), ()) for form in FORMS})
    return found


def prepare(folder: Path, only: tuple[str, ...] = ()) -> None:
    """Every layer, or those whose name holds one of `only`."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, shape in enumerate(SHAPES):
        if only and not any(part in shape.name for part in only):
            continue
        for mask_name, mask in MASKS:
            for variant, (text, flags) in variants(shape, mask).items():
                manifest.append(modules.compiled_entry(
                    folder, text, "cuda", flags, shape=shape.name, mask=mask_name, variant=variant,
                    vmfb=f"c{index}-{mask_name}-{variant}.vmfb", inputs=modules.input_specs(shape)))
            manifest.append(modules.eager_entry(shape, mask_name))
            (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def report(results_path: Path) -> None:
    table: dict[tuple[str, str], dict[str, dict]] = {}
    for r in json.loads(results_path.read_text()):
        table.setdefault((r["shape"], r["mask"]), {})[r["variant"]] = r

    def cell(row: dict, name: str) -> str:
        r = row.get(name, {})
        return f"{r['median_ms']:.3f}" if "median_ms" in r else ("error" if "error" in r else "-")

    names = ("ours-auto", *(f"ours-{form}" for form in FORMS), "upstream", "torch-eager")
    for mask_name, _ in MASKS:
        print(f"\n### {mask_name} (median ms)\n")
        print("| layer | " + " | ".join(names) + " | upstream / ours |")
        print("|---|" + "---|" * (len(names) + 1))
        for shape in SHAPES:
            row = table.get((shape.name, mask_name), {})
            ours, upstream = (row.get(n, {}).get("median_ms") for n in ("ours-auto", "upstream"))
            ratio = f"{upstream / ours:.2f}" if ours and upstream else "-"
            print(f"| {shape.name} | " + " | ".join(cell(row, n) for n in names) + f" | {ratio} |")


if __name__ == "__main__":
    command, path = sys.argv[1], Path(sys.argv[2])
    prepare(path, tuple(sys.argv[3:])) if command == "prepare" else report(path)
