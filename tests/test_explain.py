"""`iree-bwdconv explain` and the multiply-adds it reports."""

from __future__ import annotations

import itertools

import pytest
import torch

from iree_bwdconv import cli, explain, functional, lowering, multiply_adds
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan.rules import RULES
from iree_bwdconv.spec import layer_spec


def _brute_useful(spec) -> int:
    """Products x[i] * w[k] of the forward convolution whose i is inside the input."""
    count = 0
    for o in itertools.product(*map(range, spec.output_spatial)):
        for k in itertools.product(*map(range, spec.kernel)):
            reads = [oi * s - p + ki * d for oi, ki, s, p, d in zip(o, k, spec.stride, spec.padding, spec.dilation)]
            count += all(0 <= r < n for r, n in zip(reads, spec.input_spatial))
    return spec.batch * spec.in_channels_per_group * spec.out_channels * count


@pytest.mark.parametrize("sizes, kernel, stride, padding, dilation, groups", [
    ((9, 7), (3, 3), (2, 2), (1, 1), (1, 1), 1),
    ((11,), (5,), (3,), (2,), (2,), 2),
    ((6, 5, 4), (2, 3, 1), (1, 2, 2), (1, 0, 0), (1, 1, 1), 4),
])
def test_useful_multiply_adds_match_brute_force(sizes, kernel, stride, padding, dilation, groups):
    spec = layer_spec(2, 8, 4, sizes, kernel, stride, padding, dilation, groups=groups)
    assert multiply_adds.useful(spec) == _brute_useful(spec)


def test_executed_multiply_adds_count_zeros_only_where_a_form_multiplies_them():
    weight_only = layer_spec(2, 16, 8, (9, 9), (3, 3), (1, 1), output_mask=(False, True, False))
    text = functional.lowered(weight_only, None, LoweringOptions(target="cpu"))
    assert multiply_adds.executed(text) == multiply_adds.useful(weight_only)  # im2col over exact windows
    one_tap = layer_spec(2, 16, 8, (9, 9), (1, 1), (2, 2), output_mask=(True, False, False))
    text = functional.lowered(one_tap, None, LoweringOptions(target="cpu"))
    assert multiply_adds.executed(text) == multiply_adds.useful(one_tap)  # its one phase: no zero multiplied
    grouped = layer_spec(2, 16, 16, (8, 8), (3, 3), (2, 2), (1, 1), groups=4, output_mask=(True, False, False))
    text = functional.lowered(grouped, None, LoweringOptions(target="cpu"))  # the direct form: zeros inserted
    assert multiply_adds.executed(text) > 3 * multiply_adds.useful(grouped)


def test_explain_a_layer_prints_its_plan_rules_and_work(capsys):
    layer = ["n=2", "c=8", "f=16", "size=9x9", "k=3", "s=2", "p=1", "dtype=f16"]
    assert cli.main(["explain", "--target", "gfx942", "--no-dispatches", "--layer", *layer]) == 0
    out = capsys.readouterr().out
    assert "2-D n2 c8 f16 9x9 k3x3 s2x2 p1x1 d1x1 g1 f16" in out
    assert "grad_input   per-phase" in out and "grad_weight" in out and "grad_bias" in out
    assert "gpu_per_phase" in out and RULES["gpu_per_phase"].evidence in out
    assert "multiply-adds: grad_input" in out and "compile cache key: " in out
    assert "dispatches" not in out


def test_explain_counts_dispatches():
    spec = layer_spec(2, 8, 8, (8, 8), (1, 1), (2, 2), output_mask=(True, False, False))
    lines = explain.explain_spec(spec, LoweringOptions(target="cpu"))
    (said,) = [line.split(": ")[1] for line in lines if line.strip().startswith("dispatches:")]
    launched, executables = int(said.split()[0]), int(said.split("(")[1].split()[0])
    assert launched >= executables >= 1


def test_explain_counts_our_kernels_dispatch():
    """Our CUDA kernel is an executable of its own in flow IR, with no
    linalg inside: it is launched and counted, its work given apart."""
    spec = layer_spec(2, 16, 16, (8, 8), (1, 1), (2, 2), dtype="f16", output_mask=(True, False, False))
    lines = explain.explain_spec(spec, LoweringOptions(target="cuda"))
    assert any("grad_input   kernel" in line for line in lines), lines
    (said,) = [line.split(": ")[1] for line in lines if line.strip().startswith("dispatches:")]
    assert int(said.split()[0]) >= 1


def test_explain_a_file_covers_each_convolution(tmp_path, capsys):
    spec = layer_spec(2, 8, 8, (8, 8), (3, 3), (2, 2), (1, 1), groups=2)
    zeros = [torch.zeros(shape) for shape in (spec.grad_output_shape, spec.input_shape, spec.weight_shape)]
    backward = str(lowering.import_module(functional.ConvolutionBackward(spec, None), *zeros))
    path = tmp_path / "backward.mlir"
    path.write_text(backward)
    assert cli.main(["explain", str(path), "--no-dispatches"]) == 0
    out = capsys.readouterr().out
    assert "convolution_backward #1" in out and "cpu_group_split" in out
    forward = str(lowering.import_module(torch.nn.Conv2d(8, 16, 1, stride=2), torch.zeros(1, 8, 8, 8)))
    assert "cpu_forward_im2col" in explain.explain_file(forward, LoweringOptions(target="cpu"), dispatches=False)


def test_explain_refuses_a_bad_layer_by_name(capsys):
    assert cli.main(["explain", "--layer", "c=8", "f=8", "size=8x8", "stride=2"]) == 1
    assert "--layer" in capsys.readouterr().err


def test_explain_a_strided_transposed_convolution_as_the_gradient_it_is():
    conv = torch.nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
    text = str(lowering.import_module(conv, torch.zeros(2, 16, 8, 8)))
    out = explain.explain_file(text, LoweringOptions(target="gfx942"), dispatches=False)
    assert "transposed: the grad_input of 2-D n2 c8 f16 16x16 k4x4 s2x2 p1x1" in out
    assert "transposed_forward_phases" in out and "grad_input   per-phase" not in out  # f32 on gfx942: col2im
    assert "grad_input   col2im" in out
