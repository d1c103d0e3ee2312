"""torch.compile(backend="iree_bwdconv"): forward and backward graphs through
our lowering and IREE, compared with eager PyTorch. Every model here runs
with fallback="raise", so a graph that silently ran eagerly fails the test."""

from __future__ import annotations

import copy
import logging

import pytest
import torch
from torch import nn

import iree_bwdconv
from iree_bwdconv.torch_compile import dynamo
from iree_bwdconv.compiler import operand_room, pipeline
from iree_bwdconv import training
from iree_bwdconv.errors import InvalidArgumentError
from iree_bwdconv.models import conv_bn
from iree_bwdconv.models.resnets import BasicBlock


@pytest.fixture
def backend(tmp_path):
    return iree_bwdconv.backend(fallback="raise", cache_dir=str(tmp_path / "cache"))


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


class InvertedResidual(nn.Module):
    """MobileNetV2's block with stride 2: expand 1x1, depthwise 3x3 stride 2, project 1x1."""

    def __init__(self, c_in: int, c_out: int, expand: int = 4) -> None:
        super().__init__()
        hidden = c_in * expand
        self.body = nn.Sequential(
            nn.Conv2d(c_in, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, 2, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, c_out, 1, bias=False), nn.BatchNorm2d(c_out),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def conv1d_net() -> nn.Module:
    return nn.Sequential(nn.Conv1d(4, 8, 5, 2, 2), nn.BatchNorm1d(8), nn.ReLU(), nn.MaxPool1d(2),
                         nn.Conv1d(8, 8, 3, 1, 1, groups=2), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8, 5))


def conv3d_net() -> nn.Module:
    return nn.Sequential(nn.Conv3d(2, 4, 3, 2, 1), nn.BatchNorm3d(4), nn.ReLU(),
                         nn.Conv3d(4, 4, (1, 3, 3), (1, 2, 2), (0, 1, 1)), nn.ReLU(),
                         nn.Flatten(), nn.Linear(4 * 4 * 2 * 2, 3))


def decoder() -> nn.Module:
    """ConvTranspose2d layers: their backward holds transposed=True convolution_backward ops."""
    return nn.Sequential(nn.ConvTranspose2d(8, 4, 4, 2, 1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.ConvTranspose2d(4, 3, 3, 2, 1, output_padding=1), nn.Tanh())


MODELS = {
    "resnet_basic_block_downsample": (lambda: BasicBlock(8, 16, 2), (2, 8, 10, 10)),
    "mobilenet_inverted_residual_s2": (lambda: InvertedResidual(8, 12), (2, 8, 9, 9)),
    "conv1d_net": (conv1d_net, (3, 4, 32)),
    "conv3d_net": (conv3d_net, (2, 2, 8, 7, 7)),
    "convtranspose2d_decoder": (decoder, (2, 8, 5, 5)),
}


def gradients(model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    x = x.clone().requires_grad_(True)
    out = model(x)
    weights = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * weights).sum().backward()
    return out.detach(), [x.grad, *(p.grad for p in model.parameters())]


def assert_close_to(ours: torch.Tensor, eager: torch.Tensor, what: str) -> None:
    scale = eager.abs().max().item()
    assert (ours - eager).abs().max().item() <= 1e-4 * max(scale, 1e-3), what


def assert_as_accurate_as_eager(ours: list[torch.Tensor], eager: list[torch.Tensor], exact: list[torch.Tensor]) -> None:
    """Against float64 eager: our error at most 10x eager float32's own, plus
    1e-5 of the model's largest gradient (a bias feeding batch norm has a
    gradient that is all rounding)."""
    floor = 1e-5 * max(t.abs().max().item() for t in exact)
    for i, (a, b, ref) in enumerate(zip(ours, eager, exact)):
        ours_error = (a.double() - ref).abs().max().item()
        eager_error = (b.double() - ref).abs().max().item()
        what = "output" if i == 0 else "input gradient" if i == 1 else f"gradient of parameter {i - 2}"
        assert ours_error <= 10 * eager_error + floor, f"{what}: error {ours_error:.2e}, eager's {eager_error:.2e}"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gradients_equal_eager(name, backend):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    eager = make()
    ours, exact = copy.deepcopy(eager), copy.deepcopy(eager).double()
    x = torch.randn(shape)
    out_eager, grads_eager = gradients(eager, x)
    out_exact, grads_exact = gradients(exact, x.double())
    out_ours, grads_ours = gradients(torch.compile(ours, backend=backend), x)
    assert_as_accurate_as_eager([out_ours, *grads_ours], [out_eager, *grads_eager], [out_exact, *grads_exact])
    for a, b in zip(ours.buffers(), eager.buffers()):  # batch norm's running statistics
        assert torch.allclose(a.float(), b.float(), rtol=1e-5, atol=1e-6)
    assert backend.stats.graphs >= 2 and not backend.stats.fallbacks  # forward and backward through IREE


def test_demo_model_trains_like_eager(backend):
    report = training.side_by_side("demo", steps=3, batch_size=8, backend=backend, image_size=16, progress=None)
    assert report.first_grad_diff < 1e-5
    assert report.max_loss_diff() < 1e-4
    assert report.max_param_diff < 1e-4 * max(report.max_param, 1.0)
    assert backend.stats.graphs == 2 and not backend.stats.fallbacks


def test_changed_batch_size_recompiles(backend):
    torch.manual_seed(0)
    eager = conv_bn(3, 4, 3, 2)
    compiled = torch.compile(copy.deepcopy(eager), backend=backend)
    for batch in (2, 3, 5):
        x = torch.randn(batch, 3, 8, 8)
        out_ours, grads_ours = gradients(compiled, x)
        out_eager, grads_eager = gradients(eager, x)
        assert out_ours.shape[0] == batch
        assert_close_to(out_ours, out_eager, f"output at batch {batch}")
        assert_close_to(grads_ours[0], grads_eager[0], f"input gradient at batch {batch}")
    # One forward and one backward module per batch size, none run eagerly.
    assert backend.stats.graphs == 6 and not backend.stats.fallbacks


def test_cache_hit_skips_compiling(tmp_path, monkeypatch):
    cache_dir = str(tmp_path / "cache")
    model, x = conv_bn(3, 4, 3, 2), torch.randn(2, 3, 8, 8)
    gradients(torch.compile(copy.deepcopy(model), backend=iree_bwdconv.backend(cache_dir=cache_dir)), x)
    torch._dynamo.reset()

    def refuse(*args, **kwargs):
        raise AssertionError("compiled although the cache holds the module")

    monkeypatch.setattr(pipeline, "iree_compile", refuse)
    again = iree_bwdconv.backend(cache_dir=cache_dir, fallback="raise")
    _, grads = gradients(torch.compile(copy.deepcopy(model), backend=again), x)
    _, expected = gradients(copy.deepcopy(model), x)
    assert_close_to(grads[0], expected[0], "input gradient from cached modules")
    assert again.cache.hits == 2 and again.cache.misses == 0


def test_the_operand_room_setting_is_part_of_the_cache_key(tmp_path, monkeypatch):
    """A module compiled without room is not what a run that asks for room
    gets from the cache (`operand_room`; on the CPU the two modules are
    the same, so only the key tells them apart)."""
    cache_dir = str(tmp_path / "cache")
    model, x = conv_bn(3, 4, 3, 2), torch.randn(2, 3, 8, 8)
    gradients(torch.compile(copy.deepcopy(model), backend=iree_bwdconv.backend(cache_dir=cache_dir)), x)
    torch._dynamo.reset()
    monkeypatch.setenv(operand_room.VARIABLE, "1")
    again = iree_bwdconv.backend(cache_dir=cache_dir, fallback="raise")
    gradients(torch.compile(copy.deepcopy(model), backend=again), x)
    assert again.cache.hits == 0 and again.cache.misses == 2


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "foreign file"])
def test_corrupted_cache_entry_is_recompiled(tmp_path, damage, caplog):
    cache_dir = tmp_path / "cache"
    model, x = conv_bn(3, 4, 3, 2), torch.randn(2, 3, 8, 8)
    gradients(torch.compile(copy.deepcopy(model), backend=iree_bwdconv.backend(cache_dir=str(cache_dir))), x)
    entries = sorted(cache_dir.glob("*.vmfb"))
    assert len(entries) == 2
    for entry in entries:
        data = entry.read_bytes()
        if damage == "flip a byte":
            middle = len(data) // 2
            entry.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
        elif damage == "truncate":
            entry.write_bytes(data[: len(data) // 3])
        else:
            entry.write_bytes(b"not a module")
    torch._dynamo.reset()
    again = iree_bwdconv.backend(cache_dir=str(cache_dir), fallback="raise")
    with caplog.at_level(logging.WARNING):
        _, grads = gradients(torch.compile(copy.deepcopy(model), backend=again), x)
    _, expected = gradients(copy.deepcopy(model), x)
    assert_close_to(grads[0], expected[0], "input gradient after recompiling")
    assert again.cache.corrupt == 2 and again.cache.misses == 2
    assert "corrupted" in caplog.text
    assert all(again.cache.load(entry.stem) is not None for entry in entries)  # rewritten whole


def cummax_model(x: torch.Tensor) -> torch.Tensor:
    return torch.cummax(x * 2, dim=1).values  # torch-mlir has no lowering for aten.cummax


def test_unlowerable_graph_runs_eagerly_with_a_log_line(tmp_path, caplog):
    backend = iree_bwdconv.backend(cache_dir=str(tmp_path))
    x = torch.randn(3, 5)
    with caplog.at_level(logging.WARNING, logger="iree_bwdconv"):
        out = torch.compile(cummax_model, backend=backend)(x)
    assert torch.equal(out, cummax_model(x))
    assert "cannot compile" in caplog.text and "cummax" in caplog.text and "running that graph eagerly" in caplog.text
    assert len(backend.stats.fallbacks) == 1


def test_unlowerable_graph_raises_when_asked(tmp_path):
    backend = iree_bwdconv.backend(cache_dir=str(tmp_path), fallback="raise")
    with pytest.raises(Exception, match="cummax"):
        torch.compile(cummax_model, backend=backend)(torch.randn(3, 5))


def test_float64_graph_is_refused_before_compiling(tmp_path, caplog):
    """IREE computes float64 as float32: a float64 graph runs eagerly, with
    the reason, instead of failing at its first call."""
    model = torch.nn.Conv2d(2, 3, 3).double()
    x = torch.randn(1, 2, 6, 6, dtype=torch.float64)
    backend = iree_bwdconv.backend(cache_dir=str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="iree_bwdconv"):
        out = torch.compile(model, backend=backend)(x)
    assert torch.equal(out, model(x))
    assert "UnsupportedDtypeError" in caplog.text and "float64" in caplog.text
    with pytest.raises(Exception, match="float64"):
        torch._dynamo.reset()
        torch.compile(model, backend=iree_bwdconv.backend(cache_dir=str(tmp_path), fallback="raise"))(x)
    torch._dynamo.reset()


def test_registered_by_entry_point():
    from torch._dynamo.backends.registry import lookup_backend

    assert "iree_bwdconv" in torch._dynamo.list_backends()
    assert lookup_backend("iree_bwdconv") is dynamo.iree_bwdconv


@pytest.mark.parametrize("arguments, argument", [
    (dict(device="tpu"), "device"),
    (dict(device="cpu", target="gfx942"), "target"),
    (dict(fallback="ignore"), "fallback"),
])
def test_bad_backend_arguments_are_named(arguments, argument):
    with pytest.raises(InvalidArgumentError) as err:
        iree_bwdconv.backend(**arguments)
    assert err.value.argument == argument


def test_cpu_inputs_cross_without_a_copy():
    from iree import runtime as ireert

    from iree_bwdconv.run.runtime import LoadedModule

    class Double(nn.Module):
        def forward(self, x):
            return x * 2

    x = torch.randn(4, 8)
    module = LoadedModule(pipeline.iree_compile(iree_bwdconv.lower(Double(), x), "cpu"))
    view = module._argument(x)
    assert isinstance(view, ireert.HalBufferView)  # imported by DLPack, not copied through numpy
    x.add_(1)  # after the import: IREE must read the tensor's own memory to see this
    assert torch.equal(module._result(module._function(view)), x * 2)


def _demo_training_graphs() -> list:
    """The demo model's forward and backward graphs, as aot_autograd hands them to a backend."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    from iree_bwdconv import lowering
    from iree_bwdconv.models import DemoCNN, SyntheticImages

    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    recorder = aot_autograd(fw_compiler=record, bw_compiler=record, decompositions=lowering.decompositions())
    images, labels = SyntheticImages(size=16).batch(2)
    nn.functional.cross_entropy(torch.compile(DemoCNN(width=8), backend=recorder)(images), labels).backward()
    assert len(graphs) == 2
    backward_ops = {str(n.target) for n in graphs[1].graph.nodes if n.op == "call_function"}
    assert "aten.convolution_backward.default" in backward_ops
    return graphs


@pytest.mark.parametrize("target, executable_format", [("gfx942", b"rocm-hsaco-fb"), ("cuda", b"cuda-nvptx-fb")])
def test_training_graphs_compile_for_gpu_targets(target, executable_format):
    """The demo model's forward and backward graphs compile for the GPU
    targets (run there by device="hip" / "cuda"; this machine has neither)."""
    from iree_bwdconv.torch_compile.graph_compiler import CompiledGraph, CompileStats

    for gm in _demo_training_graphs():
        compiled = CompiledGraph(gm, target, None, CompileStats())
        assert compiled.vmfb and executable_format in compiled.vmfb


def test_a_graph_gfx942_refuses_is_lowered_again_in_the_plain_forms(monkeypatch):
    """Where iree-compile fails on a graph's usual forms, the graph is
    lowered again from its text in the plain forms, and compiled."""
    from iree_bwdconv.compiler import pipeline
    from iree_bwdconv.errors import PipelineError, PlainFormsWarning
    from iree_bwdconv.torch_compile.graph_compiler import CompiledGraph, CompileStats

    compile_for_real, inputs = pipeline.iree_compile, []

    def fail_first(mlir: str, target: str, timeout_s=None, repro_dir=None) -> bytes:
        inputs.append(mlir)
        if len(inputs) == 1:
            raise PipelineError("iree-compile for target gfx942", "error: refused", "/repro/usual.mlir", "iree-compile")
        return compile_for_real(mlir, target, timeout_s=timeout_s)

    monkeypatch.setattr(pipeline, "iree_compile", fail_first)
    with pytest.warns(PlainFormsWarning, match="/repro/usual.mlir"):
        compiled = CompiledGraph(_demo_training_graphs()[1], "gfx942", None, CompileStats())
    assert len(inputs) == 2 and inputs[0] != inputs[1]
    assert b"rocm-hsaco-fb" in compiled.vmfb


def test_parallel_compiles_follow_the_cores_this_process_may_use():
    import os

    cores = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(cores)})
        assert dynamo.default_parallel_compiles() == 1
    finally:
        os.sched_setaffinity(0, cores)
    assert dynamo.default_parallel_compiles() == max(1, min(4, len(cores)))
