"""A failing pipeline or iree-compile leaves its IR in a file and names the
one command that reproduces the failure; running that command fails too."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from iree_bwdconv import functional, lowering
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.errors import PipelineError
from iree_bwdconv.options import REPRO_DIR_VARIABLE

# Parses, but fails verification: integer addition on floats.
UNCOMPILABLE = """
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addi %arg0, %arg0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@pytest.fixture
def repro_dir(tmp_path):
    return tmp_path


def test_iree_compile_failure_is_reproducible(repro_dir):
    with pytest.raises(PipelineError) as err:
        pipeline.iree_compile(UNCOMPILABLE, "cpu", repro_dir=str(repro_dir))
    saved = Path(err.value.repro_path)
    assert saved.parent == repro_dir and saved.read_text() == UNCOMPILABLE
    assert err.value.command in str(err.value)
    rerun = subprocess.run(shlex.split(err.value.command), capture_output=True, text=True)
    assert rerun.returncode != 0 and "arith.addi" in rerun.stderr


def test_iree_compile_past_its_time_limit_is_reproducible(repro_dir):
    # The same wording as the lowering worker's limit, so the backend's
    # warning reads alike whichever stage ran out of time.
    module = "func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n  return %arg0 : tensor<4xf32>\n}\n"
    with pytest.raises(PipelineError) as err:
        pipeline.iree_compile(module, "cpu", timeout_s=0.001, repro_dir=str(repro_dir))
    assert "time limit of 0.001 s" in str(err.value)
    assert Path(err.value.repro_path).read_text() == module and err.value.command in str(err.value)


def test_pass_pipeline_failure_is_reproducible(repro_dir):
    # An op no torch-mlir lowering knows: the linalg backend contract fails.
    module = lowering.parse_torch_mlir(
        "func.func @main(%arg0: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {\n"
        '  %0 = torch.operator "aten.not_an_op"(%arg0) : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>\n'
        "  return %0 : !torch.vtensor<[4],f32>\n}\n"
    )
    with pytest.raises(PipelineError) as err:
        pipeline.run_pipeline(module, f"builtin.module({pipeline.LINALG_BACKEND})", "linalg backend pipeline",
                              repro_dir=str(repro_dir))
    assert Path(err.value.repro_path).parent == repro_dir
    assert "torch-mlir-opt" in err.value.command and "--pass-pipeline=" in err.value.command
    rerun = subprocess.run(shlex.split(err.value.command), capture_output=True, text=True)
    assert rerun.returncode != 0


def test_the_edges_read_the_repro_folder_from_the_environment(tmp_path, monkeypatch):
    """$IREE_BWDCONV_REPRO_DIR is read where options are made (the
    functional API here) and nowhere below: the pipeline takes the folder
    as an argument."""
    monkeypatch.setenv(REPRO_DIR_VARIABLE, str(tmp_path))
    with pytest.raises(PipelineError) as err:
        functional.compile(UNCOMPILABLE, "cpu")
    assert Path(err.value.repro_path).parent == tmp_path
    with pytest.raises(PipelineError) as err:
        pipeline.iree_compile(UNCOMPILABLE, "cpu")
    assert Path(err.value.repro_path).parent != tmp_path
