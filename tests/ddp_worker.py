"""One rank of tests/test_ddp.py, started by torch.distributed.run: a step
of the demo model under DDP (gloo), through our backend and eagerly, from
the same weights; saves both sets of gradients for the test to compare."""

from __future__ import annotations

import copy
import gc
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import iree_bwdconv
from iree_bwdconv.models import DemoCNN, SyntheticImages


def main(out_dir: str, cache_dir: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)  # the same initial weights on every rank
    model = DemoCNN(width=8)
    eager, ours = DDP(copy.deepcopy(model)), DDP(copy.deepcopy(model))
    compiled = torch.compile(ours, backend=iree_bwdconv.backend(cache_dir=cache_dir, fallback="raise"))
    images, labels = SyntheticImages(size=16, seed=rank).batch(4)  # each rank its own batch
    nn.functional.cross_entropy(compiled(images), labels).backward()
    nn.functional.cross_entropy(eager(images), labels).backward()
    grads = {
        "ours": [p.grad for p in ours.parameters()],
        "eager": [p.grad for p in eager.parameters()],
    }
    torch.save(grads, os.path.join(out_dir, f"rank{rank}.pt"))
    # Free the DDP wrappers while the process group is still registered.
    # Otherwise the last reference to the group dies with a Reducer, whose
    # destructor holds the GIL while the group joins its worker threads; a
    # worker freeing a finished allreduce needs the GIL, and the rank hangs
    # at exit (a PyTorch teardown race, seen about once in twenty runs).
    del compiled, ours, eager, grads
    torch._dynamo.reset()
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
