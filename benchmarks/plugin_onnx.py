"""ONNX decoders through `iree-bwdconv-compile` against plain iree-compile
on the same file (`torch.onnx.export`, then `iree-import-onnx`): the
transposed forward layers of `transposed_forward`.

    ./dev python -m benchmarks.plugin_onnx            # static work, gfx942 flow IR, f16
    ./dev python -m benchmarks.plugin_onnx --cpu      # time on this CPU, f32, against eager too
    ./dev python -m benchmarks.plugin_onnx --prepare FOLDER   # CUDA f16 modules for run_on_gpu.py

Static: multiply-adds executed (every contraction of the flow IR) over
useful, and dispatches. CPU: median ms per call, the variants timed in
turns (`forward_cpu.median_ms`). `--prepare` compiles each 2-D layer at
batch 32 for CUDA both ways and writes the manifest that `python3
benchmarks/run_on_gpu.py FOLDER RESULTS.json` times on the GPU machine
beside eager (cuDNN).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import torch

from benchmarks.forward_cpu import median_ms
from benchmarks.transposed_forward import BATCH, GPU_BATCH, LAYERS, Layer, _module, _useful, eager_entry
from iree_bwdconv import geometry, multiply_adds, plugin
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.run import runtime

GFX942 = ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx942")
CUDA = ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80")
CPU = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu", pipeline.HOST_CPU_FLAG)


def onnx_module(layer: Layer, dtype: str, batch: int = BATCH) -> tuple[str, torch.nn.Module, torch.Tensor]:
    """The layer as iree-import-onnx makes it, with the module and an input."""
    conv, x = _module(layer, dtype, batch)
    conv = conv.eval()
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, imported = Path(folder) / "layer.onnx", Path(folder) / "layer.mlir"
        torch.onnx.export(conv, (x,), str(model), dynamo=False, opset_version=17)
        subprocess.run([str(Path(sys.executable).parent / "iree-import-onnx"), str(model), "-o", str(imported)],
                       check=True)
        return imported.read_text(), conv, x


def both(text: str, flags: tuple[str, ...]) -> dict[str, bytes]:
    """The module compiled by plain iree-compile and by iree-bwdconv-compile."""
    done = plugin.compile_command_line(text, plugin.parse(list(flags)))
    if not done.rewritten:
        raise SystemExit("\n".join(done.log))
    return {"plain iree-compile": pipeline.compile_command_line(text, flags, "out", "plain iree-compile"),
            "iree-bwdconv-compile": done.output}


def static(dtype: str) -> None:
    print(f"gfx942 flow IR, {dtype}, batch {BATCH}: multiply-adds executed / useful, dispatches launched")
    print("| layer | iree-bwdconv-compile | plain iree-compile | dispatches (ours / plain) |")
    print("|---|---|---|---|")
    for layer in LAYERS:
        text, _, _ = onnx_module(layer, dtype)
        out_sizes = tuple(geometry.transposed_output_size(n, layer.kernel, layer.stride, layer.padding, 1,
                                                          layer.output_padding) for n in layer.sizes)
        useful = _useful(layer, out_sizes, dtype)
        work = [multiply_adds.in_flow(flow.decode()) for flow in both(text, (*GFX942, "--compile-to=flow")).values()]
        ratios = [f"{one.executed / useful:.3f}" for one in work]
        dispatches = [str(one.dispatches) for one in work]
        print(f"| {layer.name} | {ratios[1]} | {ratios[0]} | {dispatches[1]} / {dispatches[0]} |", flush=True)


def cpu() -> None:
    print(f"this CPU, f32, batch {BATCH}, torch threads {torch.get_num_threads()}: median ms per call")
    print("| layer | iree-bwdconv-compile | plain iree-compile | eager | plain / ours |")
    print("|---|---|---|---|---|")
    for layer in LAYERS:
        text, conv, x = onnx_module(layer, "f32")
        x = torch.randn(x.shape)
        modules = {name: runtime.LoadedModule(vmfb, "cpu", "main_graph") for name, vmfb in both(text, CPU).items()}
        with torch.no_grad():
            ms = median_ms({**{name: (lambda m=m: m(x)) for name, m in modules.items()}, "eager": lambda: conv(x)})
        ours, plain = ms["iree-bwdconv-compile"], ms["plain iree-compile"]
        print(f"| {layer.name} | {ours:.2f} | {plain:.2f} | {ms['eager']:.2f} | {plain / ours:.2f}x |", flush=True)


def prepare(folder: Path, dtype: str = "f16") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for layer in LAYERS:
        if len(layer.sizes) != 2:  # eager's timer is 2-D
            continue
        text, _, x = onnx_module(layer, dtype, GPU_BATCH)
        inputs = ["x".join(map(str, x.shape)) + f"x{dtype}"]
        for variant, vmfb in both(text, CUDA).items():
            name = f"{layer.name}-{variant.split()[0]}.vmfb"
            (folder / name).write_bytes(vmfb)
            manifest.append(dict(shape=layer.name, mask="forward", variant=variant, vmfb=name, inputs=inputs,
                                 function="main_graph"))
        manifest.append(eager_entry(layer, dtype))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cpu", action="store_true", help="time f32 on this CPU instead of counting gfx942's work")
    parser.add_argument("--dtype", default="f16", choices=("f32", "f16", "bf16"))
    parser.add_argument("--prepare", type=Path, metavar="FOLDER", help="compile CUDA modules for run_on_gpu.py")
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare, args.dtype)
    else:
        cpu() if args.cpu else static(args.dtype)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
