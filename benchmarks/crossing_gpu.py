"""Runs on the GPU machine: what the crossing between torch and IREE is
made of in a training step on cuda:0, and what it costs to copy each
result out of IREE's buffer against handing the buffer itself to torch.

One model is compiled with our backend and stepped until warm. Then, in
turns, steps run with every piece of `LoadedModule.__call__` timed
(arguments imported, torch's stream synchronized, IREE's call, results
exported and copied), and with the results handed over uncopied
(`LoadedModule(copy_results=False)`). The gradients of one step from the
same weights must be equal bit for bit both ways.

    python3 -m benchmarks.crossing_gpu OUT.json MODEL BATCH IMAGE [--amp f16]
"""

from __future__ import annotations

import copy
import json
import statistics
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterator

import torch

from benchmarks.profile_train_gpu import step_arguments
from benchmarks.train_gpu import Trainer
from iree_bwdconv.run import runtime
from iree_bwdconv.torch_compile.dynamo import Backend
from iree_bwdconv.models import MODELS, SyntheticImages
from iree_bwdconv.training import AMP_DTYPES, forward_backward

STEPS = 10
PIECES: dict[str, float] = defaultdict(float)
COUNTS: dict[str, int] = defaultdict(int)


def _timed(name: str, function):
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            PIECES[name] += time.perf_counter() - started
            COUNTS[name] += 1
    return wrapper


@contextmanager
def pieces_timed() -> Iterator[None]:
    """Times `_argument`, `_cuda_result` and torch's synchronize inside the block."""
    module, sync = runtime.LoadedModule, torch.cuda.Stream.synchronize
    saved = module._argument, module._cuda_result
    module._argument = _timed("arguments", module._argument)
    module._cuda_result = _timed("results", module._cuda_result)
    torch.cuda.Stream.synchronize = _timed("synchronize", sync)
    try:
        yield
    finally:
        module._argument, module._cuda_result = saved
        torch.cuda.Stream.synchronize = sync


def copying(flag: bool) -> None:
    """Every loaded module's results copied (the default) or handed over."""
    runtime.LoadedModule.copy_results = flag


def step_times(trainer: Trainer, backend: Backend) -> dict:
    calls, call_s, invoke_s = backend.stats.calls, backend.stats.call_s, backend.stats.invoke_s
    PIECES.clear()
    COUNTS.clear()
    with pieces_timed():
        times = [trainer.step() for _ in range(STEPS)]
    per_step = {name: 1e3 * s / STEPS for name, s in PIECES.items()}
    return {"step_ms": 1e3 * statistics.median(times), "calls_per_step": (backend.stats.calls - calls) / STEPS,
            "call_ms": 1e3 * (backend.stats.call_s - call_s) / STEPS,
            "iree_ms": 1e3 * (backend.stats.invoke_s - invoke_s) / STEPS,
            "pieces_ms": per_step, "pieces_per_step": {n: c / STEPS for n, c in COUNTS.items()}}


def main() -> None:
    args = step_arguments(__doc__).parse_args()
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    model = MODELS[args.model]().cuda()
    dense = getattr(model, "dense", False)
    data = SyntheticImages(size=args.image, seed=0)
    batches = [tuple(t.cuda() for t in data.batch(args.batch, dense)) for _ in range(4)]
    amp = AMP_DTYPES.get(args.amp)
    backend = Backend(device="cuda", cache_dir=args.cache_dir)
    compiled = torch.compile(model, backend=backend)

    def gradients(copy_results: bool) -> torch.Tensor:
        copying(copy_results)
        before = copy.deepcopy(model.state_dict())
        for p in model.parameters():
            p.grad = None
        forward_backward(compiled, *batches[0], amp, None)
        model.load_state_dict(before)  # batch norm's running statistics
        return torch.cat([p.grad.flatten().double() for p in model.parameters()])

    gradients(True)  # compiles
    equal = bool(torch.equal(gradients(True), gradients(False)))
    trainer = Trainer(model, compiled, batches, amp)
    for _ in range(3):
        trainer.step()
    rows = defaultdict(list)
    for _ in range(3):
        for name, flag in (("copied", True), ("handed over", False)):
            copying(flag)
            rows[name].append(step_times(trainer, backend))
    copying(True)
    result = {"model": args.model, "batch": args.batch, "image": args.image, "amp": args.amp,
              "gradients_equal": equal, "steps": STEPS, "runs": rows}
    args.out.write_text(json.dumps(result, indent=1))
    for name, runs in rows.items():
        print(name, json.dumps(runs[-1]))
    print("gradients equal:", equal)


if __name__ == "__main__":
    main()
