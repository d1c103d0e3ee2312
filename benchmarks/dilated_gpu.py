"""Strided grad_input of dilated layers on GPU targets, the evidence for
`plan.grad_input.computes_in_f32` where gcd(stride, dilation)
> 1 leaves a grouped layer one live phase of several taps: the rule's
pick (that phase in f16/bf16) against the same form widened whole to f32
(the rule until 2026-11-26), upstream and torch eager; with a layer whose
phases mix one and two taps (s2 d3) and an ungrouped one beside them.

    ./dev python -m benchmarks.dilated_gpu prepare .bench-dilated          # here
    python3 benchmarks/run_on_gpu.py .bench-dilated results.json           # there
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from unittest import mock

import torch

from iree_bwdconv import functional, lowering
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import grad_input as gi
from iree_bwdconv.plan import targets
from iree_bwdconv.plan.tuning import Tuning
from iree_bwdconv.spec import ConvBackwardSpec

from . import gpu_check, modules

# name, n, c, k, hw, kernel, stride, padding, groups, dilation, dtype
LAYERS = (
    ("3x3 s2 d2 g32 n32 c256 100x100", 32, 256, 256, 100, 3, 2, 2, 32, 2, "f16"),
    ("3x3 s2 d2 g32 n32 c256 100x100", 32, 256, 256, 100, 3, 2, 2, 32, 2, "bf16"),
    ("3x3 s2 d2 g4 n32 c64 56x56", 32, 64, 64, 56, 3, 2, 2, 4, 2, "f16"),
    ("dw3x3 s2 d2 n32 c256 56x56", 32, 256, 256, 56, 3, 2, 2, 256, 2, "f16"),
    ("3x3 s2 d3 g4 n32 c64 57x57", 32, 64, 64, 57, 3, 2, 3, 4, 3, "f16"),
    ("3x3 s2 d2 n32 c64 56x56", 32, 64, 64, 56, 3, 2, 2, 1, 2, "f16"),
)


def _widened_whole(spec: ConvBackwardSpec, form: str, options: LoweringOptions, tuning: Tuning) -> bool:
    """The rule before 2026-11-26: grouped per-phase with one live phase in f32, whatever its taps."""
    one_live = len(gi.live_phases(spec)[0]) == 1
    grouped_phase = form == "per-phase" and spec.groups > 1 and one_live
    return targets.half_precision_on_gpu(options.target, spec.dtype) and (form == "sub-pixel" or grouped_phase)


def prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, (name, n, c, k, hw, kernel, stride, padding, groups, dilation, dtype) in enumerate(LAYERS):
        case = gpu_check.Case(name, n, c, k, hw, (kernel, kernel), stride, padding, groups, "auto", dtype,
                              dilation=dilation)
        shapes, arguments = gpu_check.shapes(case), gpu_check.arguments(case)
        arguments[-1] = [True, False, False]  # grad_input only
        tensors = {key: torch.zeros(size, dtype=gpu_check._DTYPES[dtype]) for key, size in shapes.items()}
        spec = functional.spec_of(tensors["dy"], tensors["x"], tensors["w"], *arguments)
        shape = f"{name} {dtype}"
        entry = dict(shape=shape, mask="grad_input", inputs=[
            "x".join(map(str, shapes[key])) + f"x{dtype}" for key in ("dy", "x", "w")])
        functional.clear_cache()
        variants = {"auto": functional.lowered(spec, target="cuda")}
        with mock.patch.object(gi, "computes_in_f32", _widened_whole):
            functional.clear_cache()
            variants["widened-whole"] = functional.lowered(spec, target="cuda")
        functional.clear_cache()
        upstream = str(lowering.import_module(functional.ConvolutionBackward(spec, None), *tensors.values()))
        for variant, text in variants.items():
            manifest.append(modules.compiled_entry(folder, text, "cuda", variant=variant,
                                                   vmfb=f"d{index}-{variant}.vmfb", **entry))
        manifest.append(modules.compiled_entry(folder, upstream, "cuda", modules.UPSTREAM_FLAGS, variant="upstream",
                                               vmfb=f"d{index}-upstream.vmfb", **entry))
        eager = dict(n=n, c=c, k=k, hw=(hw, hw), kernel=kernel, stride=stride, padding=padding, groups=groups,
                     dtype=dtype, dilation=dilation)
        manifest.append(dict(shape=shape, mask="grad_input", variant="torch-eager", eager=eager))
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    prepare(Path(sys.argv[2]))
