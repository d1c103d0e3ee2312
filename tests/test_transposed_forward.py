"""Strided transposed convolutions, forward, by the plan's grad_input forms
(`iree_bwdconv/patterns/convolution_transposed.py`): compiled for the CPU, run on the
IREE runtime and compared with eager float64; compiled for the GPU targets;
and checked to multiply no inserted zero."""

from __future__ import annotations

import pytest
import torch

from iree_bwdconv import lowering, multiply_adds, patterns, reference
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.run import runtime
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.spec import layer_spec

_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
_CONV = {1: torch.nn.ConvTranspose1d, 2: torch.nn.ConvTranspose2d, 3: torch.nn.ConvTranspose3d}

# (name, c_in, c_out, input sizes, kernel, stride, padding, output_padding, dilation, groups, dtype)
CASES = [
    ("2d_k4_s2_p1", 8, 4, (5, 6), 4, 2, 1, 0, 1, 1, "f32"),
    ("2d_k3_s2_p1_op1", 8, 6, (5, 5), 3, 2, 1, 1, 1, 1, "f32"),
    ("2d_k2_s2", 6, 8, (4, 7), 2, 2, 0, 0, 1, 1, "f32"),
    ("2d_k1_s2", 8, 8, (4, 4), 1, 2, 0, 1, 1, 1, "f32"),
    ("1d_k5_s3_p2_op2", 4, 6, (9,), 5, 3, 2, 2, 1, 1, "f32"),
    ("3d_k3_s2_p1", 4, 4, (3, 4, 3), 3, 2, 1, 0, 1, 1, "f32"),
    ("2d_k4_s2_p1_g2", 8, 6, (5, 5), 4, 2, 1, 0, 1, 2, "f32"),
    ("2d_k3_s2_p1_depthwise", 6, 6, (5, 5), 3, 2, 1, 1, 1, 6, "f32"),
    ("2d_k3_s2_d2", 4, 4, (5, 5), 3, 2, 2, 1, 2, 1, "f32"),
    ("2d_k4_s2_p1_f16", 16, 8, (6, 6), 4, 2, 1, 0, 1, 1, "f16"),
    ("2d_k3_s2_p1_bf16_g4", 16, 16, (5, 5), 3, 2, 1, 1, 1, 4, "bf16"),
    # output_padding of a stride or more, below the dilation: zero rows after the input
    ("2d_k3_s2_p1_d3_op2", 4, 6, (5, 4), 3, 2, 1, 2, 3, 1, "f32"),
    ("1d_k2_s2_d5_op4_g2", 4, 6, (6,), 2, 2, 0, 4, 5, 2, "f32"),
    # stride 1 with one input channel a group, which torch-mlir's lowering fails on
    ("2d_k3_s1_depthwise", 4, 4, (5, 5), 3, 1, 0, 0, 1, 4, "f32"),
    ("2d_k3_s1_p1_depthwise_m2_f16", 4, 8, (5, 6), 3, 1, 1, 0, 1, 4, "f16"),
    ("3d_k3_s1_p1_d2_depthwise", 2, 2, (4, 3, 4), 3, 1, 1, 0, 2, 2, "f32"),
]


def _module(case, bias: bool) -> torch.nn.Module:
    _, c_in, c_out, sizes, k, s, p, op, d, g, dtype = case
    torch.manual_seed(0)
    conv = _CONV[len(sizes)](c_in, c_out, k, stride=s, padding=p, output_padding=op, dilation=d, groups=g,
                             bias=bias)
    return conv.to(_DTYPES[dtype]).eval()


def _input(case) -> torch.Tensor:
    _, c_in, _, sizes, *_, dtype = case
    return torch.randn(2, c_in, *sizes, generator=torch.Generator().manual_seed(1)).to(_DTYPES[dtype])


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_matches_eager_float64(case):
    conv, x = _module(case, bias=False), _input(case)
    mlir = lowering.lower(conv, x, target="cpu")
    assert "torch.aten.convolution" not in mlir
    (got,) = runtime.run(pipeline.iree_compile(mlir, "cpu"), [x])
    _assert_matches_the_oracle(conv, x, got)
    eager = conv(x)
    assert got.shape == eager.shape and got.dtype == eager.dtype


def _assert_matches_the_oracle(conv: torch.nn.Module, x: torch.Tensor, got: torch.Tensor) -> None:
    """y is grad_input of the convolution it transposes, with x as
    grad_output (and zero rows after it where output_padding holds whole
    strides): eager float64 and the oracle's bound for it."""
    y_zeros = torch.zeros(tuple(got.shape), dtype=x.dtype)
    arguments = (None, list(conv.stride), list(conv.padding), list(conv.dilation), False, [0] * (x.dim() - 2),
                 conv.groups, [True, False, False])
    rows = [op // s for op, s in zip(conv.output_padding, conv.stride)]
    dy = torch.nn.functional.pad(x, [amount for e in reversed(rows) for amount in (0, e)])
    (comparison,) = reference.compare([got, None, None], dy, y_zeros, conv.weight.detach(), arguments)
    assert comparison.ok, comparison


def test_bias_is_added():
    case = CASES[0]
    conv, x = _module(case, bias=True), _input(case)
    (got,) = runtime.run(pipeline.iree_compile(lowering.lower(conv, x, target="cpu"), "cpu"), [x])
    with torch.no_grad():
        want = conv.double()(x.double())
    assert torch.allclose(got.double(), want, rtol=1e-5, atol=1e-5 * float(want.abs().max()))


@pytest.mark.parametrize("target", ["gfx942", "cuda"])
@pytest.mark.parametrize("case", [CASES[0], CASES[6], CASES[9], CASES[14]],
                         ids=["k4s2", "grouped", "f16", "depthwise_s1_f16"])
def test_compiles_for_gpu_targets(case, target):
    conv, x = _module(case, bias=True), _input(case)
    mlir = lowering.lower(conv, x, target=target)
    assert "torch.aten.convolution" not in mlir
    assert pipeline.iree_compile(mlir, target)


@pytest.mark.parametrize("target, bound", [("gfx942", 1.07), ("cuda", 1.07), ("cpu", 1.8)])
def test_a_kernel_that_is_a_multiple_of_the_stride_multiplies_no_zero(target, bound, monkeypatch):
    """ConvTranspose2d(64, 32, 4, stride=2, padding=1): torch-mlir's lowering
    executes 4x the multiply-adds it needs over a zero-inserted input. Ours:
    per-phase on GPU targets (only the border's padding), col2im on the CPU
    (its matmul's columns padded to a multiple of 64), as the plan has it."""
    conv = torch.nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1, bias=False).half()
    x = torch.zeros(2, 64, 16, 16, dtype=torch.float16)
    spec = layer_spec(2, 32, 64, (32, 32), (4, 4), (2, 2), (1, 1), dtype="f16", output_mask=(True, False, False))
    useful = multiply_adds.useful(spec)
    executed = multiply_adds.executed(lowering.lower(conv, x, target=LoweringOptions(target=target)))
    assert executed <= bound * useful, executed / useful
    monkeypatch.setattr(patterns, "REGISTRY", tuple(p for p in patterns.REGISTRY if p.name != "convolution_transposed"))
    upstream = multiply_adds.executed(lowering.lower(conv, x, target=LoweringOptions(target=target)))
    assert upstream >= 3.5 * useful, upstream / useful  # the zeros torch-mlir inserts


def test_stride_1_stays_with_torch_mlir():
    conv = torch.nn.ConvTranspose2d(4, 4, 3, padding=1, bias=False)
    module = lowering.import_module(conv, torch.zeros(1, 4, 5, 5))
    lowering.to_torch_backend(module, "linalg")
    mismatches = patterns.apply_patterns(module, LoweringOptions())
    assert any("stride 1 in every dim" in reason for reason in mismatches.reasons)


def test_torch_mlir_still_fails_on_a_stride_1_transposed_convolution_of_one_channel_a_group(monkeypatch):
    """The cause of the rule `transposed_forward_depthwise_stride_1`:
    torch-mlir's own lowering of such a layer emits an invalid
    tensor.collapse_shape. When this no longer fails, an upgrade has
    mended it: drop the rule and leave such layers to torch-mlir."""
    conv = torch.nn.ConvTranspose2d(4, 4, 3, 1, groups=4, bias=False)
    monkeypatch.setattr(patterns, "REGISTRY", tuple(p for p in patterns.REGISTRY if p.name != "convolution_transposed"))
    with pytest.raises(Exception, match="collapse_shape"):
        lowering.lower(conv, torch.zeros(2, 4, 5, 5), target="cpu")


def test_flow_work_counts_each_launch_of_a_shared_executable():
    """A k2 s2 layer's four phases are one 1x1 GEMM each, identical in
    shape: IREE launches one executable four times. The flow IR's work is
    what is launched: the useful multiply-adds, in more dispatches than
    executables."""
    conv = torch.nn.ConvTranspose2d(16, 8, 2, stride=2, bias=False).half()
    x = torch.zeros(2, 16, 8, 8, dtype=torch.float16)
    spec = layer_spec(2, 8, 16, (16, 16), (2, 2), (2, 2), dtype="f16", output_mask=(True, False, False))
    flow = pipeline.iree_compile_to(lowering.lower(conv, x, target="gfx942"), "gfx942", "flow")
    work = multiply_adds.in_flow(flow)
    assert work.executed == multiply_adds.useful(spec)
    assert work.dispatches > work.executables >= 1


# CUDA's per-phase forms store each phase of a layer of 16 or more output
# channels a group into the output from a dispatch of its own
# (`plan.grad_input.phase_stored_in_place`; grouped phases of one tap as
# GEMMs); sizes that tile unevenly. Without our CUDA kernels, as
# `iree-bwdconv-compile` lowers (these narrow layers take the phase kernel
# otherwise, tests/test_phase_kernel.py).
_NO_KERNELS = LoweringOptions(target="cuda", extern_kernels=False)
CUDA_IN_PLACE_CASES = [
    ("2d_k4_s2_p1_f16", 16, 16, (7, 9), 4, 2, 1, 0, 1, 1, "f16"),
    ("2d_k3_s2_p1_op1_g2_f16", 32, 32, (7, 9), 3, 2, 1, 1, 1, 2, "f16"),
    ("2d_k2_s2_g2_bf16", 32, 32, (5, 6), 2, 2, 0, 0, 1, 2, "bf16"),
    ("2d_k3_s2_p1_op1_bf16", 16, 32, (7, 9), 3, 2, 1, 1, 1, 1, "bf16"),
    ("2d_k5_s3_p2_op2_f16", 32, 16, (5, 6), 5, 3, 2, 2, 1, 1, "f16"),
    ("3d_k4_s2_p1_f16", 8, 16, (3, 4, 3), 4, 2, 1, 0, 1, 1, "f16"),
]


@pytest.mark.parametrize("case", CUDA_IN_PLACE_CASES, ids=[case[0] for case in CUDA_IN_PLACE_CASES])
def test_cuda_phases_stored_in_place_match_eager_float64_on_the_cpu(case):
    """The module CUDA gets, compiled for the CPU (its dispatch regions taken
    apart there, IREE fault `cpu_pad_fused_grouped_conv`): every phase's
    rows land where eager's are. (CUDA's own numbers: benchmarks/gpu_check.py,
    the `tforward_` cases.)"""
    conv, x = _module(case, bias=False), _input(case)
    mlir = lowering.lower(conv, x, target=_NO_KERNELS)
    assert "flow.dispatch.region" in mlir
    (got,) = runtime.run(pipeline.iree_compile(mlir, "cpu"), [x])
    _assert_matches_the_oracle(conv, x, got)


@pytest.mark.parametrize("case", CUDA_IN_PLACE_CASES, ids=[case[0] for case in CUDA_IN_PLACE_CASES])
def test_cuda_phases_are_their_own_dispatches_with_no_copy(case):
    """In CUDA's flow IR each live phase is one contraction dispatch that
    writes its rows into the output: no dispatch pads the input, copies a
    phase or weaves them."""
    conv, x = _module(case, bias=False), _input(case)
    mlir = lowering.lower(conv, x, target=_NO_KERNELS)
    assert "flow.dispatch.region" in mlir
    flow = pipeline.iree_compile_to(mlir, "cuda", "flow")
    dispatches = [line.split("@")[1].split(" ")[0] for line in flow.splitlines() if "flow.executable.export" in line]
    assert len(dispatches) == mlir.count("flow.dispatch.region"), dispatches
    assert all("conv" in name or "matmul" in name for name in dispatches), dispatches
