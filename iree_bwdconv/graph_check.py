"""Each compiled graph against its own aten graph, run eagerly on the
inputs the compiled graph was given.

A model's gradients can be discontinuous in its activations: a ReLU whose
input lies within rounding of zero passes or stops its gradient depending
on the last bit. Two correct float32 runs then part by far more than
rounding (a U-Net at 16x16, batch 2: one ReLU of 4096 flipped, 5% of a
gradient), and against float64 either may be the lucky one. Compared
graph by graph on the same inputs, a correct compile agrees to rounding,
whatever the model's conditioning: that tells a miscompute from a
sensitive model.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from .dynamo import Backend

# Past float32, a graph output's difference from eager's, over its largest
# magnitude, may be this many of its dtype's epsilon: both round each op's
# float32 accumulator once, in orders that differ.
LOW_PRECISION_EPSILONS = 8


@dataclass
class GraphCall:
    graph: torch.fx.GraphModule  # as aot_autograd handed it over, before our import changed it
    inputs: list[Any]
    outputs: list[Any]


@dataclass(frozen=True)
class GraphError:
    """The worst output over all recorded calls, relative to its tolerance."""

    error: float  # |ours - eager|_max / |eager|_max
    tolerance: float
    where: str

    @property
    def ratio(self) -> float:
        if self.tolerance > 0:
            return self.error / self.tolerance
        return math.inf if self.error > 0 else 0.0


def _cloned(values: Sequence[Any]) -> list[Any]:
    return [v.detach().clone() if isinstance(v, torch.Tensor) else v for v in values]


class RecordingBackend(Backend):
    """A Backend whose graphs, while `recording` is set, keep each call's
    inputs and outputs (copies) in `calls`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.recording = False
        self.calls: list[GraphCall] = []

    def compile_graph(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        pristine = copy.deepcopy(gm)  # the import moves devices and splits outputs in place
        compiled = super().compile_graph(gm, example_inputs)

        def call(args: list[Any]) -> list[Any]:
            if not self.recording:
                return compiled(args)
            inputs = _cloned(args)
            outputs = compiled(args)
            self.calls.append(GraphCall(pristine, inputs, _cloned(outputs)))
            return outputs

        call._boxed_call = True  # type: ignore[attr-defined]
        return call


def output_tolerance(dtype: torch.dtype, float32_tolerance: float) -> float:
    if dtype in (torch.float32, torch.float64):
        return float32_tolerance
    return LOW_PRECISION_EPSILONS * torch.finfo(dtype).eps


def largest_error(calls: Sequence[GraphCall], float32_tolerance: float) -> GraphError:
    """The recorded output farthest from its aten graph's eager result on
    the same inputs, as a share of its tolerance.

    Differences are taken relative to the largest magnitude among all of
    the call's outputs, as the first step's gradients are to the largest
    gradient: an output that cancels to nearly zero (the mean of a
    normalised activation, batch norm's bias gradient) is known only to the
    rounding of its terms, and two correct summation orders part by far
    more than its own size."""
    worst = GraphError(0.0, float32_tolerance, "no floating-point output")
    for index, call in enumerate(calls):
        with torch.no_grad():
            expected = call.graph(*_cloned(call.inputs))
        pairs = [(position, want, got) for position, (want, got) in enumerate(zip(expected, call.outputs))
                 if isinstance(want, torch.Tensor) and want.is_floating_point() and want.numel() > 0]
        scale = max([want.abs().max().item() for _, want, _ in pairs] + [1e-30])
        for position, want, got in pairs:
            error = (got.double() - want.double()).abs().max().item() / scale
            candidate = GraphError(error, output_tolerance(want.dtype, float32_tolerance),
                                   f"graph call {index}, output {position} ({tuple(want.shape)}, {want.dtype})")
            if candidate.ratio > worst.ratio:
                worst = candidate
    return worst
