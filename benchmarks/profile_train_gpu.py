"""Runs on the GPU machine: where the time of our training step goes, kernel
by kernel. One model is compiled with our backend on cuda:0 and stepped
until warm; then a few steps run under torch's CUPTI profiler, which sees
IREE's kernels too (each named after its dispatch). Prints, and writes to
OUT, the kernels that cost the most per step.

    python3 -m benchmarks.profile_train_gpu OUT.json MODEL BATCH IMAGE [--amp f16] [--top N]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.train_gpu import Trainer
from iree_bwdconv.torch_compile.dynamo import Backend
from iree_bwdconv.models import MODELS, SyntheticImages
from iree_bwdconv.training import AMP_DTYPES

PROFILED_STEPS = 2


def step_arguments(description: str) -> argparse.ArgumentParser:
    """OUT MODEL BATCH IMAGE [--amp] [--cache-dir]: one model's step on the
    GPU, as this benchmark and `crossing_gpu` take it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("out", type=Path)
    parser.add_argument("model", choices=tuple(MODELS))
    parser.add_argument("batch", type=int)
    parser.add_argument("image", type=int)
    parser.add_argument("--amp", choices=tuple(AMP_DTYPES), default="off")
    parser.add_argument("--cache-dir")
    return parser


def main() -> None:
    parser = step_arguments(__doc__)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    model = MODELS[args.model]().cuda()
    data = SyntheticImages(size=args.image, seed=0)
    batches = [tuple(t.cuda() for t in data.batch(args.batch, getattr(model, "dense", False)))]
    trainer = Trainer(model, torch.compile(model, backend=Backend(device="cuda", cache_dir=args.cache_dir)), batches,
                      AMP_DTYPES[args.amp])
    for _ in range(2):
        trainer.step()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step_s = [trainer.step() for _ in range(PROFILED_STEPS)]
    kernels: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernels.setdefault(event.name, []).append(event.device_time / 1e3)  # ms
    busy = sum(sum(t) for t in kernels.values()) / PROFILED_STEPS
    rows = sorted(((sum(t) / PROFILED_STEPS, len(t) // PROFILED_STEPS, name) for name, t in kernels.items()),
                  reverse=True)
    result = {"model": args.model, "batch": args.batch, "image": args.image, "amp": args.amp,
              "step_ms": [1e3 * s for s in step_s], "gpu_busy_ms_per_step": busy,
              "kernels": [{"ms_per_step": ms, "launches_per_step": n, "name": name} for ms, n, name in rows[:args.top]]}
    args.out.write_text(json.dumps(result, indent=1))
    print(f"{args.model} n{args.batch} {args.image}x{args.image} amp={args.amp}: step {result['step_ms']} ms, "
          f"GPU busy {busy:.1f} ms/step")
    for ms, n, name in rows[:args.top]:
        print(f"  {ms:9.2f} ms  x{n:<3d} {name[:160]}")


if __name__ == "__main__":
    main()
