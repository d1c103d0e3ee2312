"""DistributedDataParallel on the CPU (gloo, 2 processes): after a step
through our backend, every rank holds the gradients eager DDP computes."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import torch


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_gradients_equal_eager_ddp(tmp_path):
    worker = Path(__file__).with_name("ddp_worker.py")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "--nnodes=1",
               f"--master-port={free_port()}", str(worker), str(tmp_path), str(tmp_path / "cache")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    for rank in ranks:
        for ours, eager in zip(rank["ours"], rank["eager"]):
            scale = max(eager.abs().max().item(), 1e-3)
            assert (ours - eager).abs().max().item() <= 1e-4 * scale
    # The gradients were averaged across ranks, which saw different batches.
    for a, b in zip(ranks[0]["ours"], ranks[1]["ours"]):
        assert torch.equal(a, b)
