"""`iree-bwdconv train`: one CNN trained through torch.compile with our
backend, side by side with the same model in eager mode from the same
initial weights on the same batches. Both must stay together."""

from __future__ import annotations

import copy
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, TextIO

import torch
from torch import nn
from tqdm import tqdm

from .dynamo import Backend
from .models import MODELS, SyntheticImages


@dataclass
class TrainReport:
    losses: list[tuple[float, float]] = field(default_factory=list)  # (ours, eager) per step
    step_s: list[tuple[float, float]] = field(default_factory=list)
    max_param_diff: float = 0.0
    max_param: float = 0.0
    # First step only, where both models hold the same weights: the largest
    # gradient difference relative to the largest gradient.
    first_grad_diff: float = 0.0

    @property
    def compile_s(self) -> float:
        """The first compiled step beyond an ordinary one: tracing, lowering, iree-compile."""
        return self.step_s[0][0] - self.steady_s(0)

    def steady_s(self, which: int) -> float:
        steps = [s[which] for s in self.step_s[1:]] or [self.step_s[0][which]]
        return statistics.median(steps)

    def max_loss_diff(self) -> float:
        return max(abs(a - b) / max(abs(b), 1.0) for a, b in self.losses)


def forward_backward(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    loss = nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    return loss.item()


def relative_grad_diff(ours: nn.Module, eager: nn.Module) -> float:
    pairs = [(a.grad, b.grad) for a, b in zip(ours.parameters(), eager.parameters()) if b.grad is not None]
    scale = max(b.abs().max().item() for _, b in pairs)
    return max((a - b).abs().max().item() for a, b in pairs) / max(scale, 1e-30)


def side_by_side(
    model_name: str,
    steps: int,
    batch_size: int,
    backend: Backend,
    image_size: int = 32,
    seed: int = 0,
    progress: Optional[TextIO] = sys.stderr,
    on_step: Optional[Callable[[int, float, float], None]] = None,
) -> TrainReport:
    torch.manual_seed(seed)
    eager = MODELS[model_name]()
    ours = copy.deepcopy(eager)
    compiled = torch.compile(ours, backend=backend)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (ours, eager)]
    data = SyntheticImages(size=image_size, seed=seed)
    report = TrainReport()
    for step in tqdm(range(steps), desc=f"training {model_name}", file=progress, disable=progress is None, unit="step"):
        images, labels = data.batch(batch_size)
        times, losses = [], []
        for model, optimizer in ((compiled, optimizers[0]), (eager, optimizers[1])):
            started = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            losses.append(forward_backward(model, images, labels))
            if step == 0 and model is eager:
                report.first_grad_diff = relative_grad_diff(ours, eager)
            optimizer.step()
            times.append(time.perf_counter() - started)
        report.losses.append((losses[0], losses[1]))
        report.step_s.append((times[0], times[1]))
        if on_step is not None:
            on_step(step, losses[0], losses[1])
    with torch.no_grad():
        for a, b in zip(ours.parameters(), eager.parameters()):
            report.max_param_diff = max(report.max_param_diff, (a - b).abs().max().item())
            report.max_param = max(report.max_param, b.abs().max().item())
    return report
