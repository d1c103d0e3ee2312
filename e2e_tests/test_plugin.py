"""`iree-bwdconv-compile` end to end: decoder layers made by three
frontends (ONNX through iree-import-onnx, the torch dialect, linalg in the
zero-insertion form), a torch-dialect convolution_backward, and
channels-last linalg, each compiled for the CPU, run on the IREE runtime
and compared with eager PyTorch in float64; each kind also compiled for
gfx942 and CUDA."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from iree_bwdconv import functional, lowering, plugin, reference
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.run import runtime
from iree_bwdconv.spec import layer_spec

from . import plugin_cases
from .harness import EXECUTABLE_FORMATS

CPU = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
       pipeline.HOST_CPU_FLAG)
GPU = {"gfx942": ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"),
       "cuda": ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80")}
INPUTS = Path(__file__).parent / "inputs"


def _compiled(text: str, flags) -> plugin.Compiled:
    done = plugin.compile_command_line(text, plugin.parse(list(flags)))
    assert done.rewritten == 1, "\n".join(done.log)
    assert not any(line.startswith("error") for line in done.log), "\n".join(done.log)
    return done


def _check(case: plugin_cases.DecoderCase, got: torch.Tensor, x: torch.Tensor) -> None:
    """y against the layer in float64, within the oracle's bound: a rounding
    to x's type, and one in the f32 accumulator per term summed (the terms'
    magnitudes: the layer with |weight| and |bias| over |x|). With a bias,
    one rounding more: the convolution's, before the bias is added."""
    conv = case.module().double()
    with torch.no_grad():
        want = conv(x.double())
        for parameter in conv.parameters():
            parameter.abs_()
        magnitude = conv(x.double().abs())
    assert got.shape == want.shape and got.dtype == x.dtype
    bound = reference.error_bound(want, magnitude, case.in_channels // case.groups * case.kernel ** case.rank, x.dtype)
    if case.bias:
        bound += reference.unit_roundoff(x.dtype) * magnitude
    excess = (got.double() - want).abs() - bound
    assert excess.max() <= 0, f"{case.name}: off by up to {excess.max():.3g} past the bound"


@pytest.mark.parametrize("name, route", [(name, route) for name, case in plugin_cases.CASES.items()
                                         for route in case.routes])
def test_decoder_matches_eager_float64(name: str, route: str) -> None:
    case = plugin_cases.CASES[name]
    done = _compiled(plugin_cases.source(case, route), CPU)
    module = runtime.LoadedModule(done.output, "cpu", plugin_cases.ENTRY[route])
    for batch in (2, 3) if case.dynamic_batch else (2,):
        x = case.input(batch)
        (got,) = module(x)
        _check(case, got, x)


def test_convolution_backward_from_torch_dialect() -> None:
    spec = layer_spec(2, 8, 6, (9, 10), (3, 3), stride=(2, 2), padding=(1, 1))
    done = _compiled(_backward_text(), CPU)
    generator = torch.Generator().manual_seed(0)
    tensors = [torch.randn(t.shape, generator=generator) for t in functional.zero_examples(spec)]
    got = runtime.run(done.output, tensors)
    arguments = ([spec.out_channels], list(spec.stride), list(spec.padding), list(spec.dilation), False,
                 [0, 0], 1, [True, True, True])
    failed = [c for c in reference.compare(got, *tensors, arguments) if not c.ok]
    assert not failed, failed


def test_channels_last_linalg_matches_its_definition() -> None:
    """The NHWC form, against what its IR says, in float64: the data placed
    2 apart in zeros, convolved at stride 1 with the filter as given."""
    done = _compiled((INPUTS / "transposed_nhwc_hwcf.mlir").read_text(), CPU)
    generator = torch.Generator().manual_seed(0)
    x, filter_ = torch.randn(2, 5, 6, 8, generator=generator), torch.randn(3, 3, 8, 4, generator=generator)
    (got,) = runtime.run(done.output, [x, filter_])
    zeros = torch.zeros(2, 12, 14, 8, dtype=torch.float64)
    zeros[:, 1:10:2, 1:12:2, :] = x.double()
    want = torch.nn.functional.conv2d(zeros.permute(0, 3, 1, 2), filter_.double().permute(3, 2, 0, 1))
    torch.testing.assert_close(got.double(), want.permute(0, 2, 3, 1), rtol=1e-5, atol=1e-5)


def test_module_with_nothing_of_ours_compiles_as_plain_iree_compile(tmp_path: Path) -> None:
    """A transposed convolution at stride 1 inserts no zeros: the output is
    plain iree-compile's, byte for byte."""
    case = plugin_cases.DecoderCase(2, 4, 5, (4, 5), kernel=3, stride=1, padding=1)
    source = tmp_path / "decoder.mlir"
    source.write_text(plugin_cases.source(case, "onnx"))
    tools = Path(sys.executable).parent
    ours = subprocess.run([str(tools / "iree-bwdconv-compile"), str(source), *CPU, "-o", str(tmp_path / "ours.vmfb"),
                           "--iree-bwdconv-explain"], capture_output=True, text=True)
    assert ours.returncode == 0, ours.stderr
    assert "rewrote" not in ours.stderr and "stride 1" in ours.stderr, ours.stderr
    plain = subprocess.run([str(tools / "iree-compile"), str(source), *CPU, "-o", str(tmp_path / "plain.vmfb")],
                           capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    assert (tmp_path / "ours.vmfb").read_bytes() == (tmp_path / "plain.vmfb").read_bytes()


def test_command_line_reads_standard_input_and_explains(tmp_path: Path) -> None:
    case = plugin_cases.CASES["ConvTranspose2D_k4_s2_p1_op0_d1_g1_f32"]
    out = tmp_path / "decoder.vmfb"
    tool = Path(sys.executable).parent / "iree-bwdconv-compile"
    proc = subprocess.run([str(tool), "-", *CPU, "-o", str(out), "--iree-bwdconv-explain"],
                          input=plugin_cases.source(case, "torch"), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "rewrote torch.aten.convolution" in proc.stderr and "pattern convolution_backward_phases" in proc.stderr
    x = case.input()
    (got,) = runtime.run(out.read_bytes(), [x])
    _check(case, got, x)


def _backward_text(dtype: str = "f32") -> str:
    spec = layer_spec(2, 8, 6, (9, 10), (3, 3), stride=(2, 2), padding=(1, 1), dtype=dtype)
    return str(lowering.import_module(functional.ConvolutionBackward(spec, None), *functional.zero_examples(spec)))


@pytest.mark.parametrize("target", sorted(GPU))
@pytest.mark.parametrize("route", ["onnx", "linalg", "convolution_backward"])
def test_compiles_for_gpu_targets(target: str, route: str) -> None:
    case = plugin_cases.CASES["ConvTranspose2D_k4_s2_p1_op0_d1_g1_f16"]
    text = _backward_text("f16") if route == "convolution_backward" else plugin_cases.source(case, route)
    done = _compiled(text, GPU[target])
    assert EXECUTABLE_FORMATS[target].encode() in done.output
