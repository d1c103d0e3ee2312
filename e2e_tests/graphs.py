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


def _assert_within_eager(got: Sequence[torch.Tensor], expected: Sequence[torch.Tensor],
                         reference: Sequence[torch.Tensor], names: Sequence[str], what: str) -> None:
    """Each of `got` off float64's `reference` by at most 10x eager
    float32's error on it, plus eager's worst error relative to its tensor
    over the lot (of those above 1e-3 of the lot's largest value), times
    this one's largest value, plus 1e-4 of its largest value and 1e-5 of
    the lot's largest (a bias feeding batch norm has a gradient that is all
    rounding).

    Our sums run in other orders than eager's, and through chains of
    train-mode batch norms rounding grows: in ShuffleNetV2's backward at
    initialisation eager's first weight gradient is 1.6% off, and a batch
    norm's scale gradient came out 0.9% off in ours where eager's happened
    to be 3e-5. The faults this is for put a tensor off by its own size."""
    largest = [r.abs().max().item() for r in reference]
    errors = [(g.double() - r).abs().max().item() for g, r in zip(got, reference)]
    eager_errors = [(e.double() - r).abs().max().item() for e, r in zip(expected, reference)]
    floor = 1e-5 * max(largest)
    # Over the tensors that are more than rounding: a gradient that is all
    # rounding is 100% off in eager too.
    worst_relative = max((e / m for e, m in zip(eager_errors, largest) if m > 100 * floor), default=0.0)
    for name, error, eager_error, most in zip(names, errors, eager_errors, largest):
        allowed = 10 * eager_error + (worst_relative + 1e-4) * most + floor
        assert error <= allowed, f"{what}\n{name}: error {error:.3e}, eager float32's {eager_error:.3e}"


Call = tuple[torch.fx.GraphModule, list, list]


class Recording:
    """A torch.compile backend that compiles every graph with `backend` and
    keeps each call's graph, inputs and outputs."""

    def __init__(self, backend) -> None:
        from torch._dynamo.backends.common import aot_autograd

        from iree_bwdconv import lowering

        self.backend = backend
        self.calls: list[Call] = []
        self._aot = aot_autograd(fw_compiler=self._compile, bw_compiler=self._compile,
                                 decompositions=lowering.decompositions())

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor], **kwargs) -> Callable:
        return self._aot(gm, example_inputs, **kwargs)

    def _compile(self, gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor]) -> Callable:
        compiled = self.backend.compile_graph(gm, example_inputs)

        def call(args: list) -> list:
            inputs = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
            outputs = compiled(args)
            self.calls.append((gm, inputs, [o.detach().clone() if isinstance(o, torch.Tensor) else o
                                            for o in outputs]))
            return outputs

        call._boxed_call = True  # type: ignore[attr-defined]
        return call


def _float64(value):
    return value.double() if isinstance(value, torch.Tensor) and value.is_floating_point() else value


def assert_graph_as_accurate_as_eager(call: Call, what: str) -> None:
    """One compiled graph's outputs against the same graph run eagerly in
    float64 on the same inputs (`_assert_within_eager`, eager float32's
    run of it the yardstick). Graph by graph, and not the model's end
    results, because a value within rounding of a ReLU's kink can land on
    either side in two float32 runs: MobileNetV2's backward took a batch
    norm's output of 1e-7 as zero in ours and as positive in eager, and its
    input gradient came out 3% apart, the backward of each right for its
    own inputs."""
    gm, inputs, outputs = call
    reference = gm(*(_float64(a) for a in inputs))
    eager = gm(*(a.clone() if isinstance(a, torch.Tensor) else a for a in inputs))
    kept = [i for i, out in enumerate(outputs) if isinstance(out, torch.Tensor) and out.is_floating_point()]
    nodes = [n for n in gm.graph.nodes if n.op == "output"][0].args[0]
    names = [f"output {i} ({getattr(nodes[i], 'name', nodes[i])})" for i in kept]
    _assert_within_eager([outputs[i] for i in kept], [eager[i] for i in kept], [reference[i] for i in kept],
                         names, what)
    for i, out in enumerate(outputs):
        if isinstance(out, torch.Tensor) and not out.is_floating_point():
            assert torch.equal(out, eager[i]), f"{what}\noutput {i} differs"


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
