"""The 1x1 grad_input's GEMM on the H100 by operand order, weight layout
and position dims: the evidence behind `contraction_forms.weight_first_gemm`.

Variants, each `dx[n,c,o] = sum_f w[f,c] dy[n,f,o]` in f32, rounded, and
(with a stride, `-insert`) inserted with stride into zeros:
- `dy-first`: grad_output is the first operand (a convolution's order);
- `weight-first`: the weight [c, f] first, transposed in the IR, which
  IREE folds back into the GEMM's map;
- `weight-kept`: the same, the transpose kept behind IREE's barrier
  (`benchmarks.barriers`), as the lowering emitted it until 2026-11-24
  (it now gathers the tap by flat index, `tap_tables.one_tap`);
and `-flat` where the positions are one dim (the GEMM alone, no insert).

    ./dev python -m benchmarks.operand_order prepare .bench-order      # here
    python3 benchmarks/run_on_gpu.py .bench-order results.json         # there: times
    python3 benchmarks/check_on_gpu.py .bench-order                    # there: numbers
    ./dev python -m benchmarks.operand_order report results.json       # here
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from torch_mlir import ir

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.builders.linalg_builders import PARALLEL, REDUCTION

from . import barriers, modules
from .gemm_1x1 import ONE_BY_ONE, _module, _placed
from .gpu import iree_matmul_entry, print_variant_table
from .shapes import Shape


def _gemm(shape: Shape, dy: ir.Value, w: ir.Value, order: str, flat: bool) -> ir.Value:
    """[n, c, oh, ow] in the shape's dtype."""
    n, _, oh, ow = lb.sizes_of(dy)
    source = forms.collapse_range(dy, 2, 4) if flat else dy
    positions = lb.sizes_of(source)[2:]
    init = lb.zeros([n, shape.c, *positions], lb.element_type("f32"))
    weight = forms.collapse_range(w, 1, 4)  # [f, c]
    if order == "dy-first":
        num = 3 + len(positions)
        n_, c, *o, f = lb.dims(num)
        maps = [lb.affine_map(num, [n_, f, *o]), lb.affine_map(num, [f, c]), lb.affine_map(num, [n_, c, *o])]
        out = lb.contraction(source, weight, init, maps, [PARALLEL] * (num - 1) + [REDUCTION])
    else:
        taps = forms.transpose(weight, [1, 0])
        out = forms.weight_first_gemm(barriers.mark(taps) if order == "weight-kept" else taps, source, init)
    out = lb.convert(out, lb.element_type(shape.dtype))
    return forms.expand_trailing(out, [oh, ow]) if flat else out


def variants(shape: Shape) -> dict[str, str]:
    out = {"ours": modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda")}
    for order in ("dy-first", "weight-first", "weight-kept"):
        for flat in (False, True):
            if flat and shape.stride > 1:
                name = f"{order}-flat"  # the GEMM alone: its result has no stride
                body = lambda dy, w, o=order: _gemm(shape, dy, w, o, True)
            elif not flat:
                name = f"{order}-insert"
                body = lambda dy, w, o=order: _placed(shape, dy, _gemm(shape, dy, w, o, shape.stride == 1))
            else:
                continue
            out[name] = barriers.insert_barriers(_module(shape, body))
    return out


def _case(shape: Shape, name: str) -> dict:
    """A check_on_gpu.py case: the module's result is grad_input."""
    dy, x, w = modules.example_tensors(shape)
    return dict(name=name, form=name, kind="backward", dtype=shape.dtype,
                shapes=dict(dy=list(dy.shape), x=list(x.shape), w=list(w.shape)),
                arguments=list(modules.arguments(shape, modules.GRAD_INPUT_ONLY)), results=["grad_input"])


def prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest, cases = [], []
    for index, shape in enumerate(ONE_BY_ONE):
        for name, text in variants(shape).items():
            vmfb = f"o{index}-{name}"
            entry = modules.compiled_entry(folder, text, "cuda", shape=shape.name, mask="grad_input",
                                           variant=name, vmfb=vmfb + ".vmfb", inputs=modules.input_specs(shape))
            manifest.append(entry)
            if "compile_error" not in entry and not name.endswith("-flat"):
                cases.append(_case(shape, vmfb))
        manifest.append(iree_matmul_entry(folder, shape, f"o{index}-iree-matmul.vmfb"))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (folder / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    command, path = sys.argv[1], Path(sys.argv[2])
    prepare(path) if command == "prepare" else print_variant_table(path, ONE_BY_ONE)
