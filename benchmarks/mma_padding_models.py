"""Which contractions of the models' f16 training graphs IREE 3.13's CUDA
code would read past an operand's end with (`iree_bwdconv.compiler.mma_padding`),
and what the compile does with them: widened to f32, or refused. Static,
on this machine: each model's forward and backward graphs (in f16, batch
32 at 128x128 unless told) are recorded on the CPU and compiled for CUDA.

    ./dev python -m benchmarks.mma_padding_models [--batch N] [--image N] [MODEL ...]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

from iree_bwdconv.torch_compile import graph_compiler
from iree_bwdconv.compiler import iree_faults, mma_padding, pipeline
from iree_bwdconv import lowering
from iree_bwdconv.errors import PipelineError
from iree_bwdconv.torch_compile.graph_compiler import CompileStats
from iree_bwdconv.models import MODELS, SyntheticImages

DEFAULT_MODELS = ("resnet18", "resnet50", "mobilenet_v2", "unet")


def recorded_graphs(name: str, batch: int = 32, image: int = 128) -> list[torch.fx.GraphModule]:
    graphs: list[torch.fx.GraphModule] = []

    def keep(gm: torch.fx.GraphModule, example_inputs) -> object:
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    torch.manual_seed(0)
    model = MODELS[name]().half()
    images, labels = SyntheticImages(size=image, seed=0).batch(batch, getattr(model, "dense", False))
    compiled = torch.compile(model, backend=aot_autograd(fw_compiler=keep, bw_compiler=keep,
                                                                decompositions=lowering.decompositions()))
    loss = torch.nn.functional.cross_entropy(compiled(images.half()).float(), labels)
    loss.backward()
    return graphs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("models", nargs="*", default=list(DEFAULT_MODELS))
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--image", type=int, default=128)
    args = parser.parse_args()
    for name in args.models:
        for index, gm in enumerate(recorded_graphs(name, args.batch, args.image)):
            imported = graph_compiler.import_for_iree(gm, CompileStats(), "cuda")
            linalg = lowering.lower_torch(lowering.parse_torch_mlir(imported.graph_ir), "linalg",
                                          lowering.as_options("cuda"))
            with tempfile.TemporaryDirectory() as folder:
                configured, binaries = Path(folder, "configured"), Path(folder, "binaries")
                pipeline.iree_compile(pipeline.for_target(linalg, "cuda"), "cuda",
                                      (*iree_faults.flags_for("cuda"), f"{pipeline.CONFIGURATIONS_FLAG}={configured}",
                                       f"{pipeline.BINARIES_FLAG}={binaries}"), as_given=True)
                found = mma_padding.overreads_in(configured, binaries)
            for overread in found:
                print("   ", overread)
            try:
                pipeline.iree_compile(linalg, "cuda")
                verdict = "compiled" + (", widened" if found else "")
            except PipelineError as error:
                verdict = f"refused ({type(error).__name__})"
            print(f"{name} graph {index}: {len(found)} contractions read past an operand as given; {verdict}",
                  flush=True)


if __name__ == "__main__":
    main()
