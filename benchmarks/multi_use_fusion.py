"""What the workaround of `iree_faults.MULTI_USE_FUSION_PARTIAL_WRITE`
costs: the training graphs (forward and backward) of the demo CNN and of
ResNet-18's layout, lowered for each target, compiled with IREE's fusion of
multi-use producers (as given) and without it (the workaround). Reports
each graph's dispatch count both ways on every target (IREE's flow IR) and,
on this CPU, each graph's time both ways, the median of interleaved single
calls through the project's runtime.

    ./dev python -m benchmarks.multi_use_fusion [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Callable, Sequence

import torch
from torch import nn

from iree_bwdconv.compiler import cpu_conv_store, iree_faults, pipeline
from iree_bwdconv import lowering
from iree_bwdconv import options as lowering_options
from iree_bwdconv.torch_compile.graph_compiler import import_graph, split_outputs
from iree_bwdconv.models import MODELS, SyntheticImages
from iree_bwdconv.run.runtime import LoadedModule

# (model, batch size, image size), as benchmarks/train_step.py runs them.
WORKLOADS = (("demo", 16, 32), ("resnet18", 4, 64))
FLAGS = iree_faults.MULTI_USE_FUSION_PARTIAL_WRITE.flags


def training_graphs(model: nn.Module, images: torch.Tensor,
                    labels: torch.Tensor) -> list[tuple[torch.fx.GraphModule, list]]:
    """The forward and backward aten graphs of one training step, as the
    backend gets them, each with the inputs it was called with (a max
    pool's indices among them: random ones would send IREE's gathers out
    of bounds)."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    calls: list[tuple[torch.fx.GraphModule, list]] = []

    def record(gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor]) -> Callable:
        def call(*args):
            calls.append((gm, [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]))
            return gm(*args)

        return make_boxed_func(call)

    torch._dynamo.reset()
    recorder = aot_autograd(fw_compiler=record, bw_compiler=record, decompositions=lowering.decompositions())
    nn.functional.cross_entropy(torch.compile(model, backend=recorder)(images), labels).backward()
    return calls


def lowered(gm: torch.fx.GraphModule, args: list, target: str) -> tuple[str, list]:
    """The graph's linalg for `target`, and the arguments of its module."""
    graph, kept, _ = split_outputs(gm)
    return lowering.lower_torch(import_graph(graph), "linalg", lowering_options.from_environment(target)), [args[i] for i in kept]


def dispatches(text: str, target: str, flags: Sequence[str]) -> int:
    flow = pipeline.iree_compile_to(text, target, "flow", tuple(flags), as_given=True)
    return flow.count("flow.executable private")


def compiled_both_ways(text: str) -> dict[str, LoadedModule]:
    guarded = cpu_conv_store.guard(text)
    return {way: LoadedModule(pipeline.iree_compile(guarded, "cpu", flags, as_given=True), "cpu")
            for way, flags in (("fused", ()), ("workaround", FLAGS))}


def main(rounds: int) -> int:
    torch.set_num_threads(2)
    print("| graph | target | dispatches fused | dispatches workaround | ms fused | ms workaround | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, batch, size in WORKLOADS:
        torch.manual_seed(0)
        images, labels = SyntheticImages(size=size).batch(batch)
        for part, (gm, graph_args) in zip(("forward", "backward"), training_graphs(MODELS[name](), images, labels)):
            for target in ("cpu", "gfx942", "cuda"):
                text, args = lowered(gm, graph_args, target)
                counts = [dispatches(text, target, flags) for flags in ((), FLAGS)]
                timing = "- | - | -"
                if target == "cpu":
                    modules = compiled_both_ways(text)
                    samples: dict[str, list[float]] = {way: [] for way in modules}
                    for _ in range(rounds):
                        for way, module in modules.items():
                            started = time.perf_counter()
                            module(*args)
                            samples[way].append((time.perf_counter() - started) * 1e3)
                    ms = {way: statistics.median(values[1:]) for way, values in samples.items()}
                    timing = f"{ms['fused']:.2f} | {ms['workaround']:.2f} | {ms['workaround'] / ms['fused']:.3f}"
                print(f"| {name} {part} | {target} | {counts[0]} | {counts[1]} | {timing} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 21))
