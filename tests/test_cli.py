"""The iree-bwdconv command, end to end, as a user runs it."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from iree_bwdconv import lowering, training
from iree_bwdconv.torch_compile.graph_check import GraphError
from tests.test_backends import ConvBackward2D, plain_2d


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iree_bwdconv.cli", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def raw_torch_mlir(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "conv_backward.torch.mlir"
    path.write_text(str(lowering.import_module(ConvBackward2D(), *plain_2d())))
    return path


@pytest.mark.parametrize("backend, marker", [("linalg", "linalg.generic"), ("tosa", "tosa."),
                                             ("stablehlo", "stablehlo.")])
def test_lower(raw_torch_mlir, tmp_path, backend, marker):
    out = tmp_path / f"out.{backend}.mlir"
    proc = cli("lower", str(raw_torch_mlir), "--backend", backend, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert marker in out.read_text() and "torch.aten" not in out.read_text()


def test_compile_then_run(raw_torch_mlir, tmp_path):
    linalg = tmp_path / "conv.mlir"
    assert cli("lower", str(raw_torch_mlir), "-o", str(linalg)).returncode == 0
    proc = cli("compile", str(linalg), "--target", "cpu", "-o", str(tmp_path / "conv.vmfb"))
    assert proc.returncode == 0, proc.stderr
    from iree_bwdconv.run.runtime import run

    dy, x, w = plain_2d()
    got = run((tmp_path / "conv.vmfb").read_bytes(), (dy, x, w))
    expected = ConvBackward2D()(dy, x, w)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


def test_opt_runs_only_the_patterns(raw_torch_mlir, tmp_path):
    backend = lowering.parse_torch_mlir(raw_torch_mlir.read_text())
    lowering.to_torch_backend(backend, "linalg")
    src = tmp_path / "backend.mlir"
    src.write_text(str(backend))
    proc = cli("opt", str(src))
    assert proc.returncode == 0, proc.stderr
    # Rewritten, but nothing else lowered: the function still speaks torch types.
    assert "torch.aten.convolution_backward" not in proc.stdout
    assert "!torch.vtensor" in proc.stdout and "linalg.generic" in proc.stdout


def test_errors_are_one_line_messages_not_tracebacks(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: tensor<4xf32>) { %0 = arith.addi %a, %a : tensor<4xf32> return }")
    proc = cli("compile", str(bad), "--target", "cuda")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "Reproduce with:" in proc.stderr


def test_commands_that_read_ir_alone_do_not_import_torch(raw_torch_mlir, tmp_path):
    """Importing torch takes seconds: `lower`, `compile` and
    iree-bwdconv-compile, which read IR, start without it."""
    out = tmp_path / "out.mlir"
    script = ("import sys\n"
              "from iree_bwdconv import cli\n"
              "import iree_bwdconv.plugin.cli\n"
              f"code = cli.main(['lower', {str(raw_torch_mlir)!r}, '-o', {str(out)!r}])\n"
              f"code += cli.main(['compile', {str(out)!r}, '-o', {str(tmp_path / 'out.vmfb')!r}])\n"
              "print('exit', code, sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "exit 0 []", proc.stdout


def test_train_refuses_an_unknown_model_by_name(capsys):
    from iree_bwdconv import cli as command

    assert command.main(["train", "--model", "resnet51"]) == 1
    assert "--model='resnet51': not one of demo, resnet18" in capsys.readouterr().err


def test_amp_choices_are_the_dtypes_training_knows():
    from iree_bwdconv import cli as command

    assert command.AMP_CHOICES == tuple(training.AMP_DTYPES)


def test_train_beside_eager_and_exit_nonzero_past_the_tolerance(tmp_path):
    """Under bf16 autocast (--amp), the first step is past the float32
    tolerance and is judged against float64 and graph by graph. The runs
    agree to rounding, not bit for bit: a zero tolerance must fail (run
    second, from the first run's compile cache)."""
    common = ("--batch-size", "4", "--image-size", "16", "--amp", "bf16", "--cache-dir", str(tmp_path))
    proc = cli("train", "--steps", "3", *common)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = [line for line in proc.stderr.splitlines() + proc.stdout.splitlines() if "loss iree-bwdconv" in line]
    assert len(steps) == 3
    for line in ("max abs parameter difference", "time per step", "compile time", "against float64: ours",
                 "graph by graph", "ok: "):
        assert line in proc.stdout
    assert "ran eagerly" not in proc.stdout  # every graph went through IREE

    proc = cli("train", "--steps", "2", "--tolerance", "0", *common)
    assert proc.returncode == 1
    assert "DIVERGED: the runs drifted apart" in proc.stderr


def test_first_step_gradients_past_the_tolerance_are_judged_against_float64():
    """Past --grad-tolerance, ours pass where they are at most the ratio
    times as far from float64 as eager's (an ill-conditioned float32 model
    separates two correct runs)."""
    report = training.TrainReport(first_grad_diff=8.7e-3, first_grad_errors=(4.2e-2, 4.0e-2))
    assert training.first_step_failure(report, 1e-4, 2.0) is None
    assert "not as close to float64" in training.first_step_failure(report, 1e-4, 1.0)
    assert training.first_step_failure(training.TrainReport(first_grad_diff=5e-5), 1e-4, 2.0) is None
    assert training.first_step_failure(training.TrainReport(first_grad_diff=5e-3), 1e-4, 2.0) is not None


def test_first_step_gradients_past_float64_are_judged_graph_by_graph():
    """Farther from float64 than eager's, ours still pass where each graph
    equals its eager result on the same inputs (a ReLU at a value within
    rounding of 0), and fail where one graph does not."""
    report = training.TrainReport(first_grad_diff=1.4e-3, first_grad_errors=(1.4e-3, 4.4e-7))
    report.first_graph_error = GraphError(1.4e-5, 1e-4, "graph call 1, output 104")
    assert "graph by graph" in training.first_step_pass(report, 1e-4, 2.0)
    report.first_graph_error = GraphError(3e-3, 1e-4, "graph call 1, output 7")
    assert "graph call 1, output 7 is 3.00e-03 from float64" in training.first_step_failure(report, 1e-4, 2.0)
    assert GraphError(0.0, 0.0, "").ratio == 0.0 and GraphError(1e-9, 0.0, "").ratio == float("inf")


def test_lower_in_the_plain_forms(raw_torch_mlir, tmp_path):
    """--plain-forms: the direct grad_input, grad_output scattered into
    zeros by a strided insert (the usual forms for CUDA insert no zeros)."""
    usual, plain = tmp_path / "usual.mlir", tmp_path / "plain.mlir"
    assert cli("lower", str(raw_torch_mlir), "--target", "cuda", "-o", str(usual)).returncode == 0
    proc = cli("lower", str(raw_torch_mlir), "--target", "cuda", "--plain-forms", "-o", str(plain))
    assert proc.returncode == 0, proc.stderr
    scatter = "[1, 1, 2, 2] : tensor<2x4x4x4xf32> into tensor<2x4x10x10xf32>"
    assert scatter in plain.read_text() and scatter not in usual.read_text()
