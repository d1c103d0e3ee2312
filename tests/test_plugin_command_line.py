"""`iree-bwdconv-compile`'s reading of iree-compile's command line, and
what it does when a rewritten module fails to compile."""

from __future__ import annotations

import pytest

from iree_bwdconv.compiler import compile_fallback, pipeline
from iree_bwdconv import plugin
from iree_bwdconv.errors import InvalidArgumentError, PipelineError
from iree_bwdconv.plugin import command_line, driver

CPU = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu"]


def test_reads_input_output_and_phases_and_passes_the_rest():
    line = command_line.parse(["model.mlir", *CPU, "-o", "out.vmfb", "--compile-to=flow", "--iree-opt-level=O3",
                               "--iree-bwdconv-explain"])
    assert (line.input, line.output, line.compile_to, line.compile_from) == ("model.mlir", "out.vmfb", "flow", "start")
    assert line.flags == (*CPU, "--iree-opt-level=O3")
    assert line.explain and line.target == "cpu"
    assert line.with_phases("start", "input") == (*CPU, "--iree-opt-level=O3", "--compile-to=input")
    assert line.with_phases("input", "end") == (*CPU, "--iree-opt-level=O3", "--compile-from=input")


def test_standard_input_by_default_and_by_dash():
    assert command_line.parse(CPU).input == "-"
    assert command_line.parse(["-", *CPU, "-o=x.vmfb"]).output == "x.vmfb"


@pytest.mark.parametrize("flags, target", [
    (CPU, "cpu"),
    (["--iree-hal-target-backends=llvm-cpu"], "cpu"),
    (["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"], "gfx942"),
    (["--iree-hal-target-backends=rocm", "--iree-hip-target=gfx942"], "gfx942"),
    (["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"], "cuda"),
    (["--iree-hal-target-device=hip", "--iree-rocm-target=gfx1100"], None),
    (["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx"], None),
    (["--iree-hal-target-device=vulkan"], None),
    (["--iree-hal-target-device=cuda", "--iree-hal-target-device=local"], None),
    ([], None),
])
def test_target_from_iree_flags(flags, target):
    line = command_line.parse(flags)
    assert line.target == target
    assert bool(line.why_no_target) == (target is None)


def test_our_target_flag_names_the_plan_where_iree_flags_do_not():
    line = command_line.parse(["--iree-hal-target-device=hip", "--iree-rocm-target=gfx90a",
                               "--iree-bwdconv-target=gfx942"])
    assert line.target == "gfx942"
    assert "--iree-bwdconv-target=gfx942" not in line.flags


@pytest.mark.parametrize("argv, argument", [
    (["a.mlir", "b.mlir"], "input"),
    (["--compile-to=nowhere"], "--compile-to"),
    (["--iree-bwdconv-target=tpu"], "--iree-bwdconv-target"),
    (["-o"], "-o"),
])
def test_bad_command_lines_name_the_argument(argv, argument):
    with pytest.raises(InvalidArgumentError, match=argument):
        command_line.parse(argv)


TRANSPOSED = """
func.func @main(%arg0: tensor<1x4x3x3xf32>, %arg1: tensor<2x4x2x2xf32>) -> tensor<1x2x6x6xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<1x4x7x7xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x4x7x7xf32>) -> tensor<1x4x7x7xf32>
  %2 = tensor.insert_slice %arg0 into %1[0, 0, 1, 1] [1, 4, 3, 3] [1, 1, 2, 2] : tensor<1x4x3x3xf32> into tensor<1x4x7x7xf32>
  %3 = tensor.empty() : tensor<1x2x6x6xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %5 = linalg.conv_2d_nchw_fchw ins(%2, %arg1 : tensor<1x4x7x7xf32>, tensor<2x4x2x2xf32>) outs(%4 : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  return %5 : tensor<1x2x6x6xf32>
}
"""


def test_a_rewritten_module_iree_fails_on_is_compiled_as_iree_lowers_it(monkeypatch):
    """Where IREE fails on the rewritten module, the log holds the failure
    (its IR saved, its command) and the module is compiled as it came."""
    real = pipeline.compile_command_line
    stages = []

    def failing_after_rewrite(source, flags, output, stage, **kwargs):
        stages.append(stage)
        if "rewrites" in stage:
            raise PipelineError(stage, "error: made to fail", "/saved.mlir", "iree-compile /saved.mlir")
        return real(source, flags, output, stage, **kwargs)

    monkeypatch.setattr(pipeline, "compile_command_line", failing_after_rewrite)
    done = plugin.compile_command_line(TRANSPOSED, plugin.parse(CPU))
    assert done.rewritten == 0 and done.output
    assert any("made to fail" in line and "iree-compile /saved.mlir" in line for line in done.log), done.log
    assert stages[-1] == "iree-compile" and any("rewrites" in stage for stage in stages)


def test_a_rewritten_module_with_phases_in_regions_iree_fails_on_is_rewritten_woven(monkeypatch):
    """As `compile_fallback` does: where IREE fails on phases in regions of
    ours, the module is rewritten again with them woven before it is left
    to IREE."""
    failed = []
    real = pipeline.compile_command_line

    def failing_once(source, flags, output, stage, **kwargs):
        if "rewrites" in stage and not failed:
            failed.append(stage)
            raise PipelineError(stage, "error: made to fail", "/saved.mlir", "iree-compile /saved.mlir")
        return real(source, flags, output, stage, **kwargs)

    monkeypatch.setattr(pipeline, "compile_command_line", failing_once)
    monkeypatch.setattr(compile_fallback, "woven_retry",
                        lambda text, options: options.phases_woven() if options.phases_in_place else None)
    done = plugin.compile_command_line(TRANSPOSED, plugin.parse(CPU))
    assert failed and done.rewritten and done.output
    assert "lowered again with them woven" in done.log[0], done.log


def test_a_fault_of_ours_leaves_the_module_to_iree(monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("a bug of ours")

    monkeypatch.setattr(driver.zero_insertion, "rewrite_text", broken)
    done = plugin.compile_command_line(TRANSPOSED, plugin.parse(CPU))
    assert done.rewritten == 0 and done.output
    assert any("iree-bwdconv failed (KeyError" in line for line in done.log), done.log
