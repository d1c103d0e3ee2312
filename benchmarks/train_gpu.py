"""Runs on the GPU machine: training steps of each model on cuda:0, in one
run, through torch.compile with our backend, eager PyTorch (cuDNN) and
torch.compile with inductor, in float32 and in AMP f16.

For each model and precision:
- time per step after warm-up, the variants taking turns (eager twice in
  float32: with torch's default TF32 convolutions and without);
- compile time (the first step beyond an ordinary one) of ours and of
  inductor, and ours again from our disk cache after dynamo's reset;
- the first step's largest gradient difference from eager's, relative to
  the largest gradient (float32 without TF32 for both);
- where ours spends a step: inside IREE's calls, crossing between torch
  and IREE around them, and the rest (torch's own ops: the loss, the
  optimizer, what runs between graphs).

A model with strided transposed convolutions (the U-Net, the decoder) is
also trained by ours with the transposed forward left to torch-mlir, which
inserts zeros as plain iree-compile does ("iree-bwdconv, zeros forward");
and each of its training graphs is handed to IREE's own torch input (what
plain iree-compile, and a torch.compile backend on it, would run), which
is recorded as compiling or as its first error.

Each workload's result is written to OUT as soon as it is measured, so a
run cut short keeps what it finished. Float32 steps run without TF32 unless
named "tf32": IREE's float32 convolutions round nothing.

    python3 -m benchmarks.train_gpu OUT.json [--workloads resnet18,unet] [--precisions f32,f16]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, Optional

import torch

from iree_bwdconv.compiler import pipeline
from iree_bwdconv.errors import PipelineError
from iree_bwdconv.torch_compile.dynamo import Backend
from iree_bwdconv.torch_compile.graph_compiler import import_graph, split_outputs
from iree_bwdconv.models import MODELS, SyntheticImages
from iree_bwdconv.training import AMP_DTYPES, forward_backward, loss_scaler, update

from benchmarks import modules

# name -> (model, batch, image side)
WORKLOADS = {
    "demo": ("demo", 16, 32),  # a quick check of the machine and the run
    "resnet18": ("resnet18", 32, 128),
    "mobilenet_v2": ("mobilenet_v2", 32, 128),
    "unet": ("unet", 32, 128),
    "resnet50": ("resnet50", 32, 128),
    "resnet50_224": ("resnet50", 32, 224),
    "decoder": ("decoder", 32, 128),
}
WARMUP = 3
ROUNDS = 3
STEPS = 5  # per variant per round (--steps)


def strided_transposed(model: torch.nn.Module) -> bool:
    return any(isinstance(m, torch.nn.modules.conv._ConvTransposeNd) and max(m.stride) > 1 for m in model.modules())


def plain_iree_compile(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor,
                       amp: Optional[torch.dtype]) -> dict[str, str]:
    """Each graph of one training step of `model` (torch-mlir's own
    decompositions) through IREE's torch input for CUDA: "ok", or the
    first line of iree-compile's error."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    said: dict[str, str] = {}

    def try_compile(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        name = ("forward", "backward")[len(said)] if len(said) < 2 else f"graph {len(said)}"
        text = str(import_graph(split_outputs(gm)[0]))
        try:
            pipeline.iree_compile(text, "cuda", modules.UPSTREAM_FLAGS, as_given=True)
            said[name] = "ok"
        except PipelineError as err:
            said[name] = next((line[line.index("error:"):] for line in err.diagnostics.splitlines()
                               if "error:" in line), str(err).splitlines()[0])[:300]
        return make_boxed_func(gm)

    torch._dynamo.reset()
    recorder = aot_autograd(fw_compiler=try_compile, bw_compiler=try_compile, decompositions=get_decomposition_table())
    forward_backward(torch.compile(copy.deepcopy(model), backend=recorder), images, labels, amp)
    torch._dynamo.reset()
    return said


class Trainer:
    """One variant of the model, stepping through the shared batches, each
    step inside `context` (a context manager's factory)."""

    def __init__(self, model: torch.nn.Module, run: Callable, batches: list, amp: Optional[torch.dtype],
                 tf32: bool = False, context: Callable = contextlib.nullcontext) -> None:
        self.model, self.run, self.batches, self.amp, self.tf32 = model, run, batches, amp, tf32
        self.context = context
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        self.scaler = loss_scaler(amp, "cuda")
        self.next = 0
        self.first_gradients: Optional[torch.Tensor] = None

    def step(self) -> float:
        """One step's time; the first step also keeps its gradients (taken
        before the update, unscaled) in `first_gradients`."""
        images, labels = self.batches[self.next % len(self.batches)]
        torch.backends.cudnn.allow_tf32 = self.tf32
        torch.cuda.synchronize()
        started = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=True)
        with self.context():
            forward_backward(self.run, images, labels, self.amp, self.scaler)
        if self.next == 0:
            scale = 1.0 if self.scaler is None else self.scaler.get_scale()
            self.first_gradients = torch.cat([p.grad.double().flatten() / scale for p in self.model.parameters()])
        update(self.optimizer, self.scaler)
        torch.cuda.synchronize()
        self.next += 1
        return time.perf_counter() - started


def measure(model_name: str, batch: int, size: int, amp: Optional[torch.dtype], cache_dir: str,
            steps: int = STEPS) -> dict:
    torch._dynamo.reset()
    torch.manual_seed(0)
    base = MODELS[model_name]().cuda()
    dense = getattr(base, "dense", False)
    data = SyntheticImages(size=size, seed=0)
    batches = [tuple(t.cuda() for t in data.batch(batch, dense)) for _ in range(4)]
    backend = Backend(device="cuda", cache_dir=cache_dir)
    backends = {"iree-bwdconv": backend}  # the variants through IREE, whose steps are split

    def variant(compile_with: Optional[Callable], tf32: bool = False, **kwargs) -> Trainer:
        model = copy.deepcopy(base)
        return Trainer(model, compile_with(model) if compile_with else model, batches, amp, tf32, **kwargs)

    trainers = {
        "eager": variant(None),
        "iree-bwdconv": variant(lambda m: torch.compile(m, backend=backend)),
        "inductor": variant(torch.compile),
    }
    if amp is None:
        trainers["eager tf32"] = variant(None, tf32=True)
    plain = None
    if strided_transposed(base):
        plain = plain_iree_compile(base, *batches[0], amp)
        # In this process (isolate=False) and uncached, so that the pattern left out stays out.
        zeros = backends["iree-bwdconv, zeros forward"] = Backend(device="cuda", cache=False, isolate=False)
        trainers["iree-bwdconv, zeros forward"] = variant(
            lambda m: torch.compile(m, backend=zeros),
            context=lambda: modules.without_pattern("convolution_transposed"))
    first = {name: trainer.step() for name, trainer in trainers.items()}
    gradients = {name: trainer.first_gradients for name, trainer in trainers.items()}
    scale = gradients["eager"].abs().max().item()
    grad_diff = {name: (g - gradients["eager"]).abs().max().item() / scale for name, g in gradients.items()
                 if name != "eager"}
    del gradients
    for trainer in trainers.values():
        trainer.first_gradients = None
    for trainer in trainers.values():
        for _ in range(WARMUP):
            trainer.step()
    times: dict[str, list[float]] = {name: [] for name in trainers}
    before = {name: (b.stats.calls, b.stats.call_s, b.stats.invoke_s) for name, b in backends.items()}
    for _ in range(ROUNDS):
        for name, trainer in trainers.items():
            times[name] += [trainer.step() for _ in range(steps)]
    median = {name: statistics.median(t) for name, t in times.items()}

    def share(name: str) -> dict:
        """Where a step of the variant `name` goes: IREE's calls, crossing into them, torch's own ops."""
        stats, (calls_0, call_s_0, invoke_s_0) = backends[name].stats, before[name]
        n = ROUNDS * steps
        calls, call_s, invoke_s = stats.calls - calls_0, (stats.call_s - call_s_0) / n, (stats.invoke_s - invoke_s_0) / n
        return {"calls_per_step": calls / n, "iree_ms": 1e3 * invoke_s, "crossing_ms": 1e3 * (call_s - invoke_s),
                "torch_ms": 1e3 * (statistics.mean(times[name]) - call_s),
                "crossing_us_per_call": 1e6 * (call_s - invoke_s) * n / max(calls, 1)}

    result = {
        "step_ms": {name: 1e3 * m for name, m in median.items()},
        "compile_s": {name: first[name] - median[name] for name in ("iree-bwdconv", "inductor")},
        "ours_compile": {"graphs": backend.stats.graphs, "lowering_s": backend.stats.import_s + backend.stats.lowering_s,
                         "iree_compile_s": backend.stats.iree_compile_s, "fallbacks": backend.stats.fallbacks},
        "first_grad_diff": grad_diff,
        "ours_share": share("iree-bwdconv"),
    }
    if "iree-bwdconv, zeros forward" in backends:
        result["zeros_forward_share"] = share("iree-bwdconv, zeros forward")
    if plain is not None:
        result["plain_iree_compile"] = plain
    # Ours again in a fresh dynamo, every module from the disk cache.
    del trainers
    torch._dynamo.reset()
    cached_backend = Backend(device="cuda", cache_dir=cache_dir)
    again = Trainer(copy.deepcopy(base), None, batches, amp)
    again.run = torch.compile(again.model, backend=cached_backend)
    cached_first = again.step()
    cached_rest = statistics.median(again.step() for _ in range(WARMUP))
    result["cached_compile_s"] = cached_first - cached_rest
    result["cache_hits"] = cached_backend.stats.cache_hits
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--workloads", default=",".join(w for w in WORKLOADS if w != "demo"))
    parser.add_argument("--precisions", default="f32,f16", help="f32 and AMP dtypes (f16, bf16)")
    parser.add_argument("--steps", type=int, default=STEPS, help="steps per variant per round")
    parser.add_argument("--cache-dir", help="our compile cache (default: a new temporary folder)")
    args = parser.parse_args()
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="iree-bwdconv-cache-")
    torch.backends.cuda.matmul.allow_tf32 = False
    results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "warmup": WARMUP,
               "rounds": ROUNDS, "steps_per_round": args.steps, "workloads": {}}
    for workload in args.workloads.split(","):
        model_name, batch, size = WORKLOADS[workload]
        for precision in args.precisions.split(","):
            key = f"{workload} {precision}"
            started = time.perf_counter()
            try:
                row = measure(model_name, batch, size, None if precision == "f32" else AMP_DTYPES[precision],
                              cache_dir, args.steps)
            except Exception as err:  # noqa: BLE001 - one workload failing must not lose the others
                traceback.print_exc()
                row = {"error": f"{type(err).__name__}: {err}"[:2000]}
            row.update(model=model_name, batch=batch, image=size, wall_s=time.perf_counter() - started)
            results["workloads"][key] = row
            args.out.write_text(json.dumps(results, indent=1))
            print(key, json.dumps(row), flush=True, file=sys.stderr)


if __name__ == "__main__":
    main()
