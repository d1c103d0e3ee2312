"""Graphs of CUDA models make and move tensors on cuda:0 (torch 2.11's
ReLU6 gradient makes its zero with `scalar_tensor(..., device=cuda:0)`);
inside one IREE module the device means nothing, and torch-mlir cannot
lower what it makes of it, so every device a graph names becomes the CPU
(`graph_compiler.one_device`)."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from iree_bwdconv.torch_compile import graph_compiler
from iree_bwdconv import lowering
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.run import runtime
from iree_bwdconv.errors import PipelineError

CUDA = torch.device("cuda", 0)
# The smallest module torch-mlir's linalg pipeline refuses, as it lowers a
# scalar made on cuda:0: a float64 literal moved there as float32. When it
# stops refusing it, `one_device` may go.
UNLOWERED_MOVE = """
func.func @main(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %int6 = torch.constant.int 6
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int1 = torch.constant.int 1
  %0 = torch.vtensor.literal(dense<0.000000e+00> : tensor<f64>) : !torch.vtensor<[],f64>
  %cuda = torch.constant.device "cuda:0"
  %1 = torch.aten.to.device %0, %cuda, %int6, %false, %false, %none : !torch.vtensor<[],f64>, !torch.Device, !torch.int, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[],f32>
  %2 = torch.aten.add.Tensor %arg0, %1, %int1 : !torch.vtensor<[4],f32>, !torch.vtensor<[],f32>, !torch.int -> !torch.vtensor<[4],f32>
  return %2 : !torch.vtensor<[4],f32>
}
"""


def test_torch_mlir_still_refuses_a_literal_moved_to_the_gpu():
    module = lowering.parse_torch_mlir(UNLOWERED_MOVE)
    with pytest.raises(PipelineError, match="failed to legalize"):
        pipeline.run_pipeline(module, f"builtin.module({pipeline.LINALG_BACKEND})", "linalg backend pipeline")


def _relu6_gradient_graph() -> torch.fx.GraphModule:
    """where(x <= 0 | x >= 6, 0.0, g), its zero made on cuda:0, as torch
    2.11 traces ReLU6's gradient on a CUDA model."""
    def gradient(x, g):
        return (torch.where((x <= 0) | (x >= 6), torch.ops.aten.scalar_tensor.default(0.0, dtype=torch.float32), g),)

    gm = make_fx(gradient, tracing_mode="fake")(torch.zeros(4, 5), torch.zeros(4, 5))
    zero = next(n for n in gm.graph.nodes if n.target == torch.ops.aten.scalar_tensor.default)
    zero.kwargs = {**zero.kwargs, "layout": torch.strided, "device": CUDA}
    gm.recompile()
    return gm


def _lowered(gm: torch.fx.GraphModule) -> str:
    return lowering.lower_torch(graph_compiler.import_graph(gm), "linalg", "cpu")


def test_a_tensor_made_on_the_gpu_does_not_lower_as_it_is():
    with pytest.raises(PipelineError, match="failed to legalize"):
        _lowered(_relu6_gradient_graph())


def test_the_graph_on_one_device_lowers_and_computes():
    gm, _, _ = graph_compiler.split_outputs(_relu6_gradient_graph())
    assert all(node.kwargs.get("device") in (None, torch.device("cpu")) for node in gm.graph.nodes)
    x, g = torch.linspace(-3, 9, 20).reshape(4, 5), torch.randn(4, 5)
    (got,) = runtime.run(pipeline.iree_compile(_lowered(gm), "cpu"), [x, g])
    torch.testing.assert_close(got, torch.where((x <= 0) | (x >= 6), torch.zeros(()), g))


def test_a_move_to_the_gpu_stays_on_one_device():
    def moved(x):
        return (torch.ops.aten.to.device(x, torch.device("cpu"), torch.float32) * 2,)

    gm = make_fx(moved, tracing_mode="fake")(torch.zeros(3))
    for node in gm.graph.nodes:
        if node.target is torch.ops.aten.to.device:
            node.args = (node.args[0], CUDA, *node.args[2:])
    gm.recompile()
    graph_compiler.one_device(gm)
    devices = [node.args[1] for node in gm.graph.nodes if node.target is torch.ops.aten.to.device]
    assert devices in ([], [torch.device("cpu")])
