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

from iree_bwdconv.torch_compile.dynamo import Backend
from iree_bwdconv.torch_compile.graph_check import GraphError, RecordingBackend, largest_error
from iree_bwdconv.models import MODELS, SyntheticImages


# --amp's choices: torch.autocast's dtype, "off" for none.
AMP_DTYPES: dict[str, Optional[torch.dtype]] = {"off": None, "f16": torch.float16, "bf16": torch.bfloat16}


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
    # Then, with a RecordingBackend, each compiled graph of the first step
    # against its aten graph run eagerly on the same inputs (`graph_check`).
    first_graph_error: Optional[GraphError] = None

    @property
    def compile_s(self) -> float:
        """The first compiled step beyond an ordinary one: tracing, lowering, iree-compile."""
        return self.step_s[0][0] - self.steady_s(0)

    def steady_s(self, which: int) -> float:
        steps = [s[which] for s in self.step_s[1:]] or [self.step_s[0][which]]
        return statistics.median(steps)

    def max_loss_diff(self) -> float:
        return max(abs(a - b) / max(abs(b), 1.0) for a, b in self.losses)


def forward_backward(model: nn.Module, images: torch.Tensor, labels: torch.Tensor,
                     amp: Optional[torch.dtype] = None, scaler: Optional[torch.amp.GradScaler] = None) -> float:
    """One forward and backward pass; `amp`: under torch.autocast at that
    dtype, as a mixed-precision training loop runs it, the loss multiplied
    by `scaler`'s scale before the backward pass."""
    with torch.autocast(images.device.type, dtype=amp, enabled=amp is not None):
        loss = nn.functional.cross_entropy(model(images), labels)
    (loss if scaler is None else scaler.scale(loss)).backward()
    return loss.item()


def loss_scaler(amp: Optional[torch.dtype], device: str) -> Optional[torch.amp.GradScaler]:
    """f16 training's dynamic loss scale (bf16 has f32's range and needs
    none). It starts at 2**10, not 2**16: the side-by-side runs must skip
    the same steps, and a step whose scaled gradients overflow in one run
    and not in the other would part them by a whole update."""
    if amp != torch.float16:
        return None
    return torch.amp.GradScaler(device, init_scale=2.0**10)


def update(optimizer: torch.optim.Optimizer, scaler: Optional[torch.amp.GradScaler]) -> None:
    """The optimizer's step, through the loss scaler where there is one."""
    if scaler is None:
        optimizer.step()
    else:
        scaler.step(optimizer)
        scaler.update()


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


def first_step_pass(report: "TrainReport", grad_tolerance: float, grad_error_ratio: float) -> Optional[str]:
    """How the first step's gradients pass, or None where they fail: within
    `grad_tolerance` of eager's; or, past it, at most `grad_error_ratio`
    times eager's error against float64; or, past that, with every graph
    within tolerance of its own eager result (`graph_check`: the model's
    gradients are discontinuous at a value ours rounded differently)."""
    if report.first_grad_diff <= grad_tolerance:
        return f"within {grad_tolerance:g} of eager's"
    if report.first_grad_errors is not None:
        ours, eager = report.first_grad_errors
        if ours <= grad_error_ratio * eager:
            return "as close to float64 as eager's"
    graphs = report.first_graph_error
    if graphs is not None and graphs.ratio <= 1.0:
        return "equal to eager's graph by graph (the model's gradients are discontinuous at a value rounded apart)"
    return None


def first_step_failure(report: "TrainReport", grad_tolerance: float, grad_error_ratio: float) -> Optional[str]:
    """Why the first step's gradients fail (`first_step_pass`), or None."""
    if first_step_pass(report, grad_tolerance, grad_error_ratio) is not None:
        return None
    reason = (f"first-step gradients differ by {report.first_grad_diff:.2e} (tolerance {grad_tolerance:g}), "
              "and ours are not as close to float64 as eager's")
    graphs = report.first_graph_error
    if graphs is not None:
        reason += (f"; graph by graph, {graphs.where} is {graphs.error:.2e} from float64, "
                   f"past the {graphs.allowed:.2e} eager's own error allows")
    return reason


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
    amp: Optional[torch.dtype] = None,
) -> TrainReport:
    """`device`: where the models and batches live ("cuda": cuda:0, the
    tensors crossing into IREE by DLPack). `amp`: both runs under
    torch.autocast at that dtype, with f32 master weights."""
    torch.manual_seed(seed)
    eager = MODELS[model_name]().to(device)
    dense = getattr(eager, "dense", False)
    initial = copy.deepcopy(eager)
    ours = copy.deepcopy(eager)
    compiled = torch.compile(ours, backend=backend)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (ours, eager)]
    scalers = [loss_scaler(amp, device) for _ in optimizers]
    data = SyntheticImages(size=image_size, seed=seed)
    report = TrainReport()
    recorder = backend if isinstance(backend, RecordingBackend) else None
    for step in tqdm(range(steps), desc=f"training {model_name}", file=progress, disable=progress is None, unit="step"):
        images, labels = (t.to(device) for t in data.batch(batch_size, dense))
        times, losses = [], []
        for model, optimizer, scaler in zip((compiled, eager), optimizers, scalers):
            if recorder is not None:
                recorder.recording = step == 0 and model is compiled
            started = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            with exact_float32(device):
                losses.append(forward_backward(model, images, labels, amp, scaler))
            if scaler is not None:
                scaler.unscale_(optimizer)  # the gradients compared are the true ones
            if step == 0 and model is eager:
                report.first_grad_diff = relative_grad_diff(ours, eager)
                if report.first_grad_diff > grad_tolerance:
                    report.first_grad_errors = float64_errors(initial, ours, eager, images, labels)
                    if recorder is not None:
                        report.first_graph_error = largest_error(recorder.calls)
                if recorder is not None:
                    recorder.calls.clear()
            update(optimizer, scaler)
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
