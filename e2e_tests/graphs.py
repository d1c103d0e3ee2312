"""Whole graphs through torch.compile with our backend, against eager
PyTorch in float64: one forward and backward pass of a model, its outputs
and the gradients of its input and parameters compared, and the compiled
model called again for the very same bits."""

from __future__ import annotations

import copy
from typing import Callable, Sequence, Union

import torch
from torch import nn

from iree_bwdconv.torch_compile.graph_check import GraphCall, graph_error, recording

Outputs = Union[torch.Tensor, Sequence[torch.Tensor]]


def output_weights(outputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Fixed weights for each output, so that the loss's gradient differs
    from element to element."""
    return [torch.linspace(-1, 1, out.numel(), dtype=torch.float64).reshape(out.shape).to(out.dtype) * (i + 1)
            for i, out in enumerate(outputs)]


def run(model: Callable[..., Outputs], parameters: Sequence[torch.Tensor],
        *inputs: torch.Tensor) -> list[torch.Tensor]:
    """Outputs, then the gradients of each input and of every parameter, of
    one forward and backward pass."""
    inputs = tuple(x.clone().requires_grad_(True) for x in inputs)
    for p in parameters:
        p.grad = None
    outputs = model(*inputs)
    outputs = (outputs,) if isinstance(outputs, torch.Tensor) else tuple(outputs)
    loss = sum((out * w).sum() for out, w in zip(outputs, output_weights(outputs)))
    loss.backward()
    return [out.detach() for out in outputs] + [x.grad for x in inputs] + [p.grad for p in parameters]


def trained(model: nn.Module) -> list[torch.Tensor]:
    return [p for p in model.parameters() if p.requires_grad]


class Recording:
    """A torch.compile backend that compiles every graph with `backend` and
    keeps each call's graph, inputs and outputs (`graph_check.recording`)."""

    def __init__(self, backend) -> None:
        from torch._dynamo.backends.common import aot_autograd

        from iree_bwdconv import lowering

        self.backend = backend
        self.calls: list[GraphCall] = []
        self._aot = aot_autograd(fw_compiler=self._compile, bw_compiler=self._compile,
                                 decompositions=lowering.decompositions())

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor], **kwargs) -> Callable:
        return self._aot(gm, example_inputs, **kwargs)

    def _compile(self, gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor]) -> Callable:
        return recording(self.backend.compile_graph(gm, example_inputs), gm, self.calls)


def assert_graph_as_accurate_as_eager(call: GraphCall, what: str) -> None:
    """One compiled graph's outputs against the same graph run eagerly in
    float64 on the same inputs, eager float32's run of it the yardstick
    (`graph_check.graph_error`). Graph by graph, and not the model's end
    results, because a value within rounding of a ReLU's kink can land on
    either side in two float32 runs."""
    worst = graph_error(call, what)
    assert worst.ratio <= 1.0, f"{worst.where}: error {worst.error:.3e}, allowed {worst.allowed:.3e}"


def assert_as_accurate_as_eager(model: nn.Module, inputs: Sequence[torch.Tensor], backend, what: str,
                                calls: int = 3) -> None:
    """One forward and backward pass of `model` compiled with `backend`:
    each of its graphs as accurate as eager's run of it
    (`assert_graph_as_accurate_as_eager`), every graph through IREE (none
    ran eagerly), and the compiled model called `calls` times gives the
    same bits (a race in IREE's code shows as numbers that change from
    call to call)."""
    ours = copy.deepcopy(model)
    recording = Recording(backend)
    compiled = torch.compile(ours, backend=recording)
    got = run(compiled, trained(ours), *inputs)
    first_pass = list(recording.calls)
    assert len(first_pass) >= 2, f"{what}\nno backward graph ran"
    for index, call in enumerate(first_pass):
        assert_graph_as_accurate_as_eager(call, f"{what}\ngraph {index} of {len(first_pass)} (forward first)")
    for call in range(1, calls):
        again = run(compiled, trained(ours), *inputs)
        for i, (a, b) in enumerate(zip(got, again)):
            assert torch.equal(a, b), f"{what}\ncall {call + 1} differs from the first in result {i}"
    assert backend.stats.graphs >= 2 and not backend.stats.fallbacks


def recorded_graphs(model: nn.Module, inputs: Sequence[torch.Tensor]) -> list[torch.fx.GraphModule]:
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
    run(torch.compile(model, backend=recorder), trained(model), *inputs)
    torch._dynamo.reset()
    return graphs
