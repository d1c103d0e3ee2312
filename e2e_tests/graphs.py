"""Whole graphs through torch.compile with our backend, against eager
PyTorch in float64: one forward and backward pass of a model, its outputs
and the gradients of its input and parameters compared, and the compiled
model called again for the very same bits."""

from __future__ import annotations

import copy
from typing import Callable, Sequence, Union

import torch
from torch import nn

Outputs = Union[torch.Tensor, Sequence[torch.Tensor]]


def output_weights(outputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Fixed weights for each output, so that the loss's gradient differs
    from element to element."""
    return [torch.linspace(-1, 1, out.numel(), dtype=torch.float64).reshape(out.shape).to(out.dtype) * (i + 1)
            for i, out in enumerate(outputs)]


def run(model: Callable[[torch.Tensor], Outputs], parameters: Sequence[torch.Tensor],
        x: torch.Tensor) -> list[torch.Tensor]:
    """Outputs, then the gradients of the input and of every parameter, of
    one forward and backward pass."""
    x = x.clone().requires_grad_(True)
    for p in parameters:
        p.grad = None
    outputs = model(x)
    outputs = (outputs,) if isinstance(outputs, torch.Tensor) else tuple(outputs)
    loss = sum((out * w).sum() for out, w in zip(outputs, output_weights(outputs)))
    loss.backward()
    return [out.detach() for out in outputs] + [x.grad] + [p.grad for p in parameters]


def trained(model: nn.Module) -> list[torch.Tensor]:
    return [p for p in model.parameters() if p.requires_grad]


def assert_as_accurate_as_eager(model: nn.Module, x: torch.Tensor, backend, what: str, calls: int = 3) -> None:
    """Outputs and gradients of `model` compiled with `backend`, against
    float64: within 10x eager float32's error, plus 1e-4 of the tensor's
    largest value and 1e-5 of the largest of its kind (a bias feeding batch
    norm has a gradient that is all rounding). Our sums run in other orders
    than eager's: a weight gradient summed over a few hundred positions
    through a train-mode batch norm, which cancels most of it, came out
    1.8e-5 of its largest value off where eager's was 2e-7. The faults this
    is for are off by the tensor's own size. Called `calls` times, the
    compiled model gives the same bits (a race in IREE's code shows as
    numbers that change from call to call). Every graph went through IREE:
    none ran eagerly."""
    ours, eager, exact = copy.deepcopy(model), copy.deepcopy(model), copy.deepcopy(model).double()
    compiled = torch.compile(ours, backend=backend)
    got = run(compiled, trained(ours), x)
    expected = run(eager, trained(eager), x)
    reference = run(exact, trained(exact), x.double())
    outputs = len(got) - len(trained(ours)) - 1
    for kind in (range(0, outputs), range(outputs, len(got))):
        floor = 1e-5 * max(reference[i].abs().max().item() for i in kind)
        for i in kind:
            name = (f"output {i}" if i < outputs else "input gradient" if i == outputs
                    else f"gradient of parameter {i - outputs - 1}")
            ours_error = (got[i].double() - reference[i]).abs().max().item()
            eager_error = (expected[i].double() - reference[i]).abs().max().item()
            own = 1e-4 * reference[i].abs().max().item()
            assert ours_error <= 10 * eager_error + own + floor, \
                f"{what}\n{name}: error {ours_error:.3e}, eager float32's {eager_error:.3e}"
    for a, b in zip(ours.buffers(), eager.buffers()):  # batch norm's running statistics
        assert torch.allclose(a.float(), b.float(), rtol=1e-5, atol=1e-6), f"{what}\nbuffers differ"
    for call in range(1, calls):
        again = run(compiled, trained(ours), x)
        for i, (a, b) in enumerate(zip(got, again)):
            assert torch.equal(a, b), f"{what}\ncall {call + 1} differs from the first in result {i}"
    assert backend.stats.graphs >= 2 and not backend.stats.fallbacks


def recorded_graphs(model: nn.Module, x: torch.Tensor) -> list[torch.fx.GraphModule]:
    """The forward and backward aten graphs aot_autograd hands a backend
    for one pass of `model`, run eagerly."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    from iree_bwdconv import lowering

    graphs: list[torch.fx.GraphModule] = []

    def record(gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor]) -> Callable:
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    recorder = aot_autograd(fw_compiler=record, bw_compiler=record, decompositions=lowering.decompositions())
    torch._dynamo.reset()
    model = copy.deepcopy(model)
    run(torch.compile(model, backend=recorder), trained(model), x)
    torch._dynamo.reset()
    return graphs
