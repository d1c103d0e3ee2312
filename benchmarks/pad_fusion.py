"""Whether IREE's pad handling changes the GPU's strided grad_input forms:
each phase reads a zero-padded window of grad_output, which IREE 3.13
lowers to a fill and a `slow_memcpy` dispatch of its own unless told to
fuse the pad into the convolution that reads it. grad_input only, for CUDA.

    ./dev python -m benchmarks.pad_fusion prepare .bench-pad       # here
    python3 benchmarks/run_on_gpu.py .bench-pad results.json       # there
    ./dev python -m benchmarks.pad_fusion report results.json      # here

`prepare-whole PATH` compiles ours, as the rule picks it, with pad fusion
for the issue-3 shapes and both gradient sets, to run beside
`benchmarks.gpu prepare PATH auto`; `prepare-forward PATH` compiles
forward convolutions (torch-mlir's pad and named convolution) with and
without it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from iree_bwdconv import lowering
from iree_bwdconv import options as lowering_options

from . import modules
from .forms import RESNET50_H100
from .gpu import print_variant_table
from .shapes import SHAPES as ISSUE_SHAPES
from .shapes import Shape
from .strided_gpu import RULE_SHAPES, STRIDED

SHAPES = [s for s in (*STRIDED, *RULE_SHAPES) if s.kernel > 1 and s.groups == 1]

FLAG_SETS = {
    "": (),
    "+fuse-pad": ("--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops",),
    "+pad-handling": ("--iree-flow-enable-pad-handling",),
}


def prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, shape in enumerate(SHAPES):
        for form in ("per-phase", "col2im", "direct"):
            text = modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda", form)
            for suffix, flags in FLAG_SETS.items():
                name = form + suffix
                manifest.append(modules.compiled_entry(folder, text, "cuda", flags, shape=shape.name,
                                                       mask="grad_input", variant=name,
                                                       vmfb=f"f{index}-{name}.vmfb", inputs=modules.input_specs(shape)))
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def prepare_whole(folder: Path) -> None:
    """Ours as the rule picks it, compiled with pad fusion, for each issue-3
    shape, grad_input alone and all three gradients (the weight gradients
    pad their input too), named as `benchmarks.gpu` names its entries so
    that the two runs' results merge into one table."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, shape in enumerate(ISSUE_SHAPES):
        for mask_name, mask in (("grad_input", modules.GRAD_INPUT_ONLY), ("all", modules.ALL_GRADS)):
            manifest.append(modules.compiled_entry(
                folder, modules.ours(shape, mask, "cuda"), "cuda", FLAG_SETS["+fuse-pad"], shape=shape.name,
                mask=mask_name, variant="ours-auto+fuse-pad", vmfb=f"s{index}-{mask_name}-ours-auto+fuse-pad.vmfb",
                inputs=modules.input_specs(shape)))
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


# Forward convolutions (torch-mlir's own form on GPU targets: a pad and a
# named convolution), f16: what pad fusion would do to the rest of a
# training graph. ResNet-50's padded layers and its strided 3x3 c128.
FORWARD_SHAPES = (*(s for s in RESNET50_H100 if s.kernel > 1), RULE_SHAPES[0])


class _Forward(torch.nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.stride, self.padding = shape.stride, shape.padding

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(x, w, None, self.stride, self.padding)


def prepare_forward(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, shape in enumerate(FORWARD_SHAPES):
        _, x, w = modules.example_tensors(shape)
        text = lowering.lower(_Forward(shape), x, w, target=lowering_options.from_environment("cuda"))
        for suffix, flags in (("", ()), ("+fuse-pad", FLAG_SETS["+fuse-pad"])):
            manifest.append(modules.compiled_entry(folder, text, "cuda", flags, shape=shape.name, mask="forward",
                                                   variant=f"forward{suffix}", vmfb=f"w{index}-forward{suffix}.vmfb",
                                                   inputs=modules.input_specs(shape)[1:]))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    # prepare|report PATH: the forms with each pad flag set; prepare-whole
    # PATH: ours with pad fusion on the issue-3 shapes, all gradients too;
    # prepare-forward PATH: forward convolutions with and without it.
    command, path = sys.argv[1], Path(sys.argv[2])
    if command == "prepare":
        prepare(path)
    elif command == "prepare-whole":
        prepare_whole(path)
    elif command == "prepare-forward":
        prepare_forward(path)
    else:
        print_variant_table(path, SHAPES)
