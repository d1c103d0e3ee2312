"""`iree-bwdconv train`: one CNN trained through torch.compile with our
backend, side by side with the same model in eager mode from the same
initial weights on the same batches. Both must stay together."""

from __future__ import annotations

import contextlib
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
    # gradient difference relative to the largest gradient, and, where that
    # is past the tolerance, each run's largest error against float64.
    first_grad_diff: float = 0.0
    first_grad_errors: Optional[tuple[float, float]] = None  # (ours, eager)

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
    """The largest difference of `ours`'s gradients from `eager`'s, over
    `eager`'s largest gradient."""
    pairs = [(a.grad.double(), b.grad.double()) for a, b in zip(ours.parameters(), eager.parameters())
             if b.grad is not None]
    scale = max(b.abs().max().item() for _, b in pairs)
    return max((a - b).abs().max().item() for a, b in pairs) / max(scale, 1e-30)


def float64_errors(initial: nn.Module, ours: nn.Module, eager: nn.Module, images: torch.Tensor,
                   labels: torch.Tensor) -> tuple[float, float]:
    """Each run's first-step gradient error against the same step in
    float64 from the same weights: a float32 model can be so ill-conditioned
    (batch norm over a few positions) that two correct float32 runs differ
    by more than the tolerance; then ours must be no farther from float64
    than eager is."""
    exact = copy.deepcopy(initial).double()
    forward_backward(exact, images.double(), labels)
    return relative_grad_diff(ours, exact), relative_grad_diff(eager, exact)


def first_step_failure(report: "TrainReport", grad_tolerance: float, grad_error_ratio: float) -> Optional[str]:
    """Why the first step's gradients fail, or None: they pass within
    `grad_tolerance` of eager's, or, past it, at most `grad_error_ratio`
    times eager's error against float64."""
    if report.first_grad_diff <= grad_tolerance:
        return None
    if report.first_grad_errors is not None:
        ours, eager = report.first_grad_errors
        if ours <= grad_error_ratio * eager:
            return None
    return (f"first-step gradients differ by {report.first_grad_diff:.2e} (tolerance {grad_tolerance:g}), "
            "and ours are not as close to float64 as eager's")


@contextlib.contextmanager
def exact_float32(device: str):
    """On CUDA, torch's float32 convolutions without TF32 while inside:
    cuDNN's default rounds their operands to 10 bits, which put eager 58x
    farther from float64 than ours on the demo CNN's first step (H200)."""
    if device != "cuda":
        yield
        return
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def side_by_side(
    model_name: str,
    steps: int,
    batch_size: int,
    backend: Backend,
    image_size: int = 32,
    seed: int = 0,
    progress: Optional[TextIO] = sys.stderr,
    on_step: Optional[Callable[[int, float, float], None]] = None,
    device: str = "cpu",
    grad_tolerance: float = 1e-4,
) -> TrainReport:
    """`device`: where the models and batches live ("cuda": cuda:0, the
    tensors crossing into IREE by DLPack)."""
    torch.manual_seed(seed)
    eager = MODELS[model_name]().to(device)
    initial = copy.deepcopy(eager)
    ours = copy.deepcopy(eager)
    compiled = torch.compile(ours, backend=backend)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (ours, eager)]
    data = SyntheticImages(size=image_size, seed=seed)
    report = TrainReport()
    for step in tqdm(range(steps), desc=f"training {model_name}", file=progress, disable=progress is None, unit="step"):
        images, labels = (t.to(device) for t in data.batch(batch_size))
        times, losses = [], []
        for model, optimizer in ((compiled, optimizers[0]), (eager, optimizers[1])):
            started = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            with exact_float32(device):
                losses.append(forward_backward(model, images, labels))
            if step == 0 and model is eager:
                report.first_grad_diff = relative_grad_diff(ours, eager)
                if report.first_grad_diff > grad_tolerance:
                    report.first_grad_errors = float64_errors(initial, ours, eager, images, labels)
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
