"""The layout of the CPU's grad_weight im2col gather: rows of positions
into the named matmul, or columns-first times grad_output channels-last,
split-K (`plan.grad_weight.columns_first`, `cpu_weight`), beside torch
eager, on the CPU shapes of `benchmarks/cpu.py` (f32, two threads),
interleaved rounds. Two more columns take columns-first apart: its matmul
as one sum (no split-K), and its window widened as rows widen it
(`plan.grad_weight.im2col_taps`; the same as columns-first where nothing widens).

    ./dev python -m benchmarks.cpu_weight_layout [ROUNDS] [SHAPE-NAME-PART]
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path
from unittest import mock

import torch

from iree_bwdconv.compiler import pipeline
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.functional import spec_of
from iree_bwdconv.plan import grad_weight as gw
from iree_bwdconv.plan import tuning as plan_tuning

from . import cpu, modules

GRAD_WEIGHT = (False, True, False)
WIDEN = gw.im2col_taps

# Each form: columns-first or not, then patches of the lowering it takes
# (those of `plan_tuning`: fields of the CPU's `Tuning` record).
FORMS = {
    "rows": (False, {}),
    "columns-first": (True, {}),
    "one sum": (True, {(plan_tuning, "max_chunk"): 1 << 62}),
    "widened": (True, {(gw, "im2col_taps"):
                       lambda spec, first, options, tuning: WIDEN(spec, False, options, tuning)}),
}


def compiled(folder: Path, shape, form: str) -> Path:
    columns_first, patches = FORMS[form]
    path = folder / f"{form.replace(' ', '-')}.vmfb"
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(gw, "columns_first", lambda spec, options, tuning: columns_first))
        for (owner, name), value in patches.items():
            if owner is plan_tuning:
                cpu_record = dataclasses.replace(plan_tuning.TUNING["cpu"], **{name: value})
                stack.enter_context(mock.patch.dict(plan_tuning.TUNING, {"cpu": cpu_record}))
            else:
                stack.enter_context(mock.patch.object(owner, name, value))
        path.write_bytes(pipeline.iree_compile(modules.lowered_uncached(shape, GRAD_WEIGHT), "cpu"))
    return path


def main(rounds: int, match: str) -> int:
    torch.set_num_threads(2)
    print("| shape | eager ms | " + " | ".join(f"{form} ms" for form in FORMS)
          + " | rows / columns-first | picked |")
    print("|---|" + "---|" * (len(FORMS) + 3))
    with tempfile.TemporaryDirectory() as tmp:
        for shape in cpu.SHAPES:
            if match not in shape.name:
                continue
            vmfbs = {form: compiled(Path(tmp), shape, form) for form in FORMS}
            samples: dict[str, list[float]] = {"eager": [], **{form: [] for form in FORMS}}
            for _ in range(rounds):  # interleaved, so drift hits all alike
                samples["eager"].append(cpu.eager_ms(shape, GRAD_WEIGHT))
                for form, vmfb in vmfbs.items():
                    samples[form].append(cpu.iree_ms(vmfb, shape))
            med = {k: statistics.median(v) for k, v in samples.items()}
            rule = "columns-first" if picked(shape) else "rows"
            cells = " | ".join(f"{med[k]:.2f}" for k in ("eager", *FORMS))
            print(f"| {shape.name} | {cells} | {med['rows'] / med['columns-first']:.2f} | {rule} |", flush=True)
    return 0


def picked(shape) -> bool:
    """Whether the lowering's rule takes columns-first for `shape`."""
    tensors = modules.example_tensors(shape)
    return gw.columns_first(spec_of(*tensors, *modules.arguments(shape, GRAD_WEIGHT)),
                            LoweringOptions(target="cpu"), plan_tuning.for_target("cpu"))


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, sys.argv[2] if len(sys.argv) > 2 else ""))
