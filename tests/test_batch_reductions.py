"""batch_reductions: batch norm's sums over batch and positions split per
image first, on GPU targets; the rewritten aten graphs compute what they
did, and what does not fit the rule is left alone."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

from iree_bwdconv.torch_compile import batch_reductions
from iree_bwdconv import lowering
from iree_bwdconv.torch_compile.batch_reductions import MIN_VALUES, batch_and_positions, split_batch_reductions
from iree_bwdconv.torch_compile.graph_compiler import CompileStats, import_for_iree

aten = torch.ops.aten


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def traced(model: nn.Module, x: torch.Tensor) -> list[tuple[torch.fx.GraphModule, list]]:
    """Each aten graph aot_autograd makes of one training pass, with the
    inputs it was called with."""
    calls = []

    def keep(gm, _):
        def call(args):
            calls.append((copy.deepcopy(gm), [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]))
            return gm(*args)
        call._boxed_call = True
        return call

    backend = aot_autograd(fw_compiler=keep, bw_compiler=keep, decompositions=lowering.decompositions())
    torch.compile(model, backend=backend)(x).square().sum().backward()
    return calls


def reductions(gm: torch.fx.GraphModule) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function" and ("sum" in str(n.target)
                                                                                   or "var_mean" in str(n.target))]


def test_batch_norm_graphs_compute_the_same_split():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
    (forward, forward_in), (backward, backward_in) = traced(model, torch.randn(4, 3, 32, 32))
    for gm, inputs, splits in ((forward, forward_in, 1), (backward, backward_in, 2)):
        before = gm(*inputs)
        rewritten = copy.deepcopy(gm)
        assert split_batch_reductions(rewritten) == splits
        assert "aten.var_mean.correction" not in reductions(rewritten)
        after = rewritten(*inputs)
        for a, b in zip(before, after):
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                assert torch.allclose(a, b, rtol=1e-5, atol=1e-6 * a.abs().max().item())


def test_what_the_rule_leaves():
    big = torch.empty(4, 8, 32, 32)
    assert batch_and_positions(big, [0, 2, 3]) == [2, 3]
    assert batch_and_positions(big, [-4, -2, -1]) == [2, 3]
    assert batch_and_positions(big, [2, 3]) is None               # per image already
    assert batch_and_positions(big, [0, 1, 2, 3]) is None         # not one value per channel
    assert batch_and_positions(big.half(), [0, 2, 3]) is None     # f16: one rounding more than torch's
    assert batch_and_positions(torch.empty(1, 8, 128, 128), [0, 2, 3]) is None  # one image
    small = torch.empty(2, 8, 8, 8)
    assert 2 * 8 * 8 < MIN_VALUES and batch_and_positions(small, [0, 2, 3]) is None


def test_only_gpu_targets_split(tmp_path):
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8))
    (forward, _), _ = traced(model, torch.randn(4, 3, 32, 32))
    assert batch_reductions.applies_to("cuda") and batch_reductions.applies_to("gfx942")
    assert not batch_reductions.applies_to("cpu")
    on_cpu = import_for_iree(forward, CompileStats(), "cpu").graph_ir
    on_gpu = import_for_iree(forward, CompileStats(), "cuda").graph_ir
    assert "torch.aten.var_mean.correction" in on_cpu
    assert "torch.aten.var_mean.correction" not in on_gpu and on_gpu.count("torch.aten.sum.dim_IntList") == 4


def test_split_graphs_through_iree(tmp_path):
    """The split forward and backward compile for CUDA, and, compiled for
    this CPU, compute what eager does."""
    from iree_bwdconv.torch_compile.graph_compiler import CompiledGraph

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
    for gm, inputs in traced(model, torch.randn(4, 3, 32, 32)):
        split = import_for_iree(gm, CompileStats(), "cuda")
        assert CompiledGraph(split, "cuda", None, CompileStats()).vmfb is not None
        want = gm(*[a.clone() if isinstance(a, torch.Tensor) else a for a in inputs])
        got = CompiledGraph(split, "cpu", None, CompileStats())(list(inputs))
        for a, b in zip(want, got):
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                assert (a - b).abs().max() <= 1e-5 * a.abs().max(), (a - b).abs().max()
