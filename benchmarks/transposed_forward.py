"""Strided transposed convolutions, forward: the static work of ours (the
plan's grad_input forms, `iree_bwdconv/patterns/convolution_transposed.py`) against
torch-mlir's lowering (zeros inserted between the input's elements), in
the flow IR of a target: multiply-adds executed over useful, and dispatches.

    ./dev python -m benchmarks.transposed_forward [--target gfx942] [--dtype f16]
    ./dev python -m benchmarks.transposed_forward --prepare FOLDER   # CUDA f16 modules for run_on_gpu.py
        [--forms sub-pixel,col2im] [--layers gan_k4_s2_p1]       # forced forms beside the plan's
        [--woven]                                                # and the phases woven, not stored in place

`--prepare` compiles, for each layer (2-D and 3-D), ours, torch-mlir's linalg and
IREE's own torch input (plain iree-compile) for CUDA, and writes the
manifest that `python3 benchmarks/run_on_gpu.py FOLDER RESULTS.json` times
on the GPU machine beside eager (cuDNN).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch

from iree_bwdconv import geometry, lowering, multiply_adds
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.spec import layer_spec

_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
_CONV = {2: torch.nn.ConvTranspose2d, 3: torch.nn.ConvTranspose3d}


@dataclass(frozen=True)
class Layer:
    name: str
    c_in: int
    c_out: int
    sizes: tuple[int, ...]
    kernel: int
    stride: int
    padding: int
    output_padding: int = 0
    groups: int = 1


# Decoder layers: U-Net's and FPN's upsampling (k2 s2, k4 s2 p1, k3 s2 p1 op1), 3-D, grouped.
LAYERS = (
    Layer("unet_k2_s2", 128, 64, (32, 32), 2, 2, 0),
    Layer("gan_k4_s2_p1", 64, 32, (32, 32), 4, 2, 1),
    Layer("fpn_k3_s2_p1_op1", 256, 128, (16, 16), 3, 2, 1, 1),
    Layer("3d_k4_s2_p1", 32, 16, (8, 8, 8), 4, 2, 1),
    Layer("3d_k3_s2_p1_op1", 32, 16, (8, 8, 8), 3, 2, 1, 1),
    Layer("grouped_k4_s2_p1_g4", 64, 64, (32, 32), 4, 2, 1, groups=4),
)
BATCH = 8
GPU_BATCH = 32  # timed on the H100: enough work that launches do not dominate


def _module(layer: Layer, dtype: str, batch: int = BATCH) -> tuple[torch.nn.Module, torch.Tensor]:
    conv = _CONV[len(layer.sizes)](layer.c_in, layer.c_out, layer.kernel, stride=layer.stride, padding=layer.padding,
                                   output_padding=layer.output_padding, groups=layer.groups, bias=False)
    return conv.to(_DTYPES[dtype]), torch.zeros(batch, layer.c_in, *layer.sizes, dtype=_DTYPES[dtype])


def _useful(layer: Layer, out_sizes: tuple[int, ...], dtype: str) -> int:
    rank = len(layer.sizes)
    spec = layer_spec(BATCH, layer.c_out, layer.c_in, out_sizes, (layer.kernel,) * rank, (layer.stride,) * rank,
                      (layer.padding,) * rank, groups=layer.groups, dtype=dtype, output_mask=(True, False, False))
    return multiply_adds.useful(spec)


def _lowered(conv: torch.nn.Module, x: torch.Tensor, options: LoweringOptions, ours: bool) -> str:
    """The linalg of `conv`, with or without our transposed pattern."""
    from benchmarks import modules

    if ours:
        return lowering.lower(conv, x, target=options)
    with modules.without_pattern("convolution_transposed"):
        return lowering.lower(conv, x, target=options)


def eager_entry(layer: Layer, dtype: str) -> dict:
    """A manifest entry that times the layer in torch eager (cuDNN) on the GPU machine."""
    eager = dict(n=GPU_BATCH, c=layer.c_in, k=layer.c_out, hw=list(layer.sizes), kernel=layer.kernel,
                 stride=layer.stride, padding=layer.padding, output_padding=layer.output_padding,
                 groups=layer.groups, dtype=dtype, transposed=True)
    return dict(shape=layer.name, mask="forward", variant="torch-eager", eager=eager)


def prepare(folder: Path, dtype: str = "f16", forms: Sequence[str] = (), names: Sequence[str] = (),
            woven: bool = False) -> None:
    """`forms`: grad_input forms forced besides the plan's ("ours-FORM");
    `names`: only these layers; `woven`: ours with its phases woven by a
    gather too, as before they were stored in place ("ours, woven")."""
    from benchmarks import modules

    folder.mkdir(parents=True, exist_ok=True)
    options = LoweringOptions(target="cuda")
    manifest = []
    for layer in LAYERS:
        if names and layer.name not in names:
            continue
        conv, x = _module(layer, dtype, GPU_BATCH)
        inputs = ["x".join(map(str, x.shape)) + f"x{dtype}"]
        texts = {"ours": (_lowered(conv, x, options, True), ()),
                 "torch-mlir": (_lowered(conv, x, options, False), ()),
                 "upstream": (str(lowering.import_module(conv, x)), modules.UPSTREAM_FLAGS)}
        for form in forms:
            forced = dataclasses.replace(options, grad_input_form=form)
            texts[f"ours-{form}"] = (_lowered(conv, x, forced, True), ())
        if woven:
            with modules.weave("per-phase", "gather"):
                texts["ours, woven"] = (_lowered(conv, x, options, True), ())
        for variant, (text, flags) in texts.items():
            manifest.append(modules.compiled_entry(folder, text, "cuda", flags, shape=layer.name, mask="forward",
                                                   variant=variant, vmfb=f"{layer.name}-{variant}.vmfb",
                                                   inputs=inputs))
        manifest.append(eager_entry(layer, dtype))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", default="gfx942", choices=("cpu", "gfx942", "cuda"))
    parser.add_argument("--dtype", default="f16", choices=tuple(_DTYPES))
    parser.add_argument("--prepare", type=Path, metavar="FOLDER", help="compile CUDA modules for run_on_gpu.py")
    parser.add_argument("--forms", default="", help="with --prepare: grad_input forms to force besides the plan's "
                                                     "(comma-separated: per-phase, sub-pixel, col2im, direct)")
    parser.add_argument("--layers", default="", help="with --prepare: only these layers (comma-separated names)")
    parser.add_argument("--woven", action="store_true", help="with --prepare: ours with its phases woven by a gather too")
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare, args.dtype, [f for f in args.forms.split(",") if f],
                [n for n in args.layers.split(",") if n], args.woven)
        return 0
    options = LoweringOptions(target=args.target)
    print(f"{args.target}, {args.dtype}, batch {BATCH}: multiply-adds executed / useful, dispatches in flow IR")
    print("| layer | ours executed/useful | torch-mlir executed/useful | ours dispatches | torch-mlir dispatches |")
    print("|---|---|---|---|---|")
    for layer in LAYERS:
        conv, x = _module(layer, args.dtype)
        out_sizes = tuple(geometry.transposed_output_size(n, layer.kernel, layer.stride, layer.padding, 1,
                                                          layer.output_padding) for n in layer.sizes)
        useful = _useful(layer, out_sizes, args.dtype)
        row = [layer.name]
        counts = []
        for ours in (True, False):
            text = _lowered(conv, x, options, ours)
            row.append(f"{multiply_adds.executed(text) / useful:.3f}")
            flow = pipeline.iree_compile_to(text, args.target, "flow")
            counts.append(str(multiply_adds.in_flow(flow).dispatches))
        print("| " + " | ".join(row + counts) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
