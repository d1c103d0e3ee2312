"""Each compiled graph against its own aten graph run eagerly, in float64,
on the inputs the compiled graph was given.

A model's gradients can be discontinuous in its activations: a ReLU whose
input lies within rounding of zero passes or stops its gradient depending
on the last bit. Two correct float32 runs then part by far more than
rounding (a U-Net at 16x16, batch 2: one ReLU input was 2.6e-7 in eager
and 0.0 in ours, and moved every gradient upstream by 5%; MobileNetV2's
backward, 3%), and against float64 either may be the lucky one. Graph by
graph on the same inputs, each is right for its own inputs: that tells a
miscompute from a sensitive model. The train command's first-step verdict
and the e2e suite judge by this one rule.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from iree_bwdconv.torch_compile.dynamo import Backend

# How far a graph output may be from float64, beyond eager float32's own
# error on it (`allowed_errors`).
EAGER_ERROR_RATIO = 10.0
RELATIVE = 1e-4
FLOOR = 1e-5


@dataclass
class GraphCall:
    graph: torch.fx.GraphModule  # as aot_autograd handed it over
    inputs: list[Any]
    outputs: list[Any]


@dataclass(frozen=True)
class GraphError:
    """The output farthest past what it is allowed."""

    error: float  # |ours - float64|, largest element
    allowed: float
    where: str

    @property
    def ratio(self) -> float:
        if self.allowed > 0:
            return self.error / self.allowed
        return math.inf if self.error > 0 else 0.0


def _cloned(values: Sequence[Any]) -> list[Any]:
    return [v.detach().clone() if isinstance(v, torch.Tensor) else v for v in values]


def _float64(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.double()
    if isinstance(value, torch.dtype) and value.is_floating_point:
        return torch.float64
    if isinstance(value, (list, tuple)):
        return type(value)(_float64(v) for v in value)
    return value


def in_float64(graph: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The graph with every floating-point dtype it names float64: under
    autocast its casts to f16 or bf16 would otherwise meet float64 operands."""
    exact = copy.deepcopy(graph)
    for node in exact.graph.nodes:
        node.args = _float64(node.args)
        node.kwargs = {key: _float64(value) for key, value in node.kwargs.items()}
    exact.recompile()
    return exact


def recording(compiled: Callable, graph: torch.fx.GraphModule, calls: list[GraphCall],
              active: Callable[[], bool] = lambda: True) -> Callable:
    """`compiled` (boxed), appending each call's graph, inputs and outputs
    (copies) to `calls` while `active()`."""

    def call(args: list[Any]) -> list[Any]:
        if not active():
            return compiled(args)
        inputs = _cloned(args)
        outputs = compiled(args)
        calls.append(GraphCall(graph, inputs, _cloned(outputs)))
        return outputs

    call._boxed_call = True  # type: ignore[attr-defined]
    return call


class RecordingBackend(Backend):
    """A Backend whose graphs, while `recording` is set, keep each call in `calls`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.recording = False
        self.calls: list[GraphCall] = []

    def compile_graph(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        # The import works on a copy (`graph_compiler.split_outputs`): `gm` stays as handed over.
        return recording(super().compile_graph(gm, example_inputs), gm, self.calls, lambda: self.recording)


def allowed_errors(expected: Sequence[torch.Tensor], reference: Sequence[torch.Tensor]) -> list[float]:
    """Per output, how far from float64's `reference` ours may be: 10x
    eager float32's error on it (`expected`), plus eager's worst error
    relative to its tensor over the lot (of those above 1e-3 of the lot's
    largest value) times this one's largest value, plus 1e-4 of its
    largest value and 1e-5 of the lot's largest (a bias feeding batch norm
    has a gradient that is all rounding).

    Our sums run in other orders than eager's, and through chains of
    train-mode batch norms rounding grows: in ShuffleNetV2's backward at
    initialisation eager's first weight gradient is 1.6% off, and a batch
    norm's scale gradient came out 0.9% off in ours where eager's happened
    to be 3e-5. The faults this is for put a tensor off by its own size."""
    largest = [r.abs().max().item() for r in reference]
    eager_errors = [(e.double() - r).abs().max().item() for e, r in zip(expected, reference)]
    floor = FLOOR * max(largest, default=0.0)
    # Over the tensors that are more than rounding: one that is all rounding is 100% off in eager too.
    worst_relative = max((e / m for e, m in zip(eager_errors, largest) if m > 100 * floor), default=0.0)
    return [EAGER_ERROR_RATIO * e + (worst_relative + RELATIVE) * m + floor for e, m in zip(eager_errors, largest)]


def graph_error(call: GraphCall, what: str = "graph") -> GraphError:
    """The call's output farthest past `allowed_errors`, its graph run
    eagerly in float32 and float64 on the call's inputs; an integer output
    must equal eager's."""
    with torch.no_grad():
        reference = in_float64(call.graph)(*(_float64(a) for a in _cloned(call.inputs)))
        expected = call.graph(*_cloned(call.inputs))
    nodes = call.graph.graph.find_nodes(op="output")[0].args[0]
    kept = [i for i, out in enumerate(call.outputs) if isinstance(out, torch.Tensor) and out.is_floating_point()]
    worst = GraphError(0.0, 0.0, f"{what}: no floating-point output")
    allowed = allowed_errors([expected[i] for i in kept], [reference[i].double() for i in kept])
    for i, limit in zip(kept, allowed):
        error = (call.outputs[i].double() - reference[i].double()).abs().max().item()
        candidate = GraphError(error, limit, f"{what}, output {i} ({getattr(nodes[i], 'name', nodes[i])})")
        if candidate.ratio > worst.ratio:
            worst = candidate
    for i, out in enumerate(call.outputs):
        if isinstance(out, torch.Tensor) and not out.is_floating_point() and not torch.equal(out, expected[i]):
            return GraphError(math.inf, 0.0, f"{what}, output {i}: integers differ from eager's")
    return worst


def largest_error(calls: Sequence[GraphCall]) -> GraphError:
    """`graph_error` of the call farthest past its allowance."""
    errors = [graph_error(call, f"graph call {index}") for index, call in enumerate(calls)]
    return max(errors, key=lambda e: e.ratio, default=GraphError(0.0, 0.0, "no graph ran"))
