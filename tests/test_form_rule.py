"""The plan's rules (`iree_bwdconv.plan`) on the configurations that
docs/performance-journal.md measured them on, and the lowered IR following them:
which form each target gets, and in which dtype its contractions run."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from iree_bwdconv import functional, geometry
from iree_bwdconv.options import GRAD_INPUT_FORM_VARIABLE, LoweringOptions
from iree_bwdconv.plan import grad_input as gi
from iree_bwdconv.plan import grad_weight as gw
from iree_bwdconv.plan import targets
from iree_bwdconv.plan.tuning import for_target

from benchmarks import gpu_check
from specs import spec_nd


def spec(channels: int, out_channels: int, kernel: int, stride: int, padding: int, size: int = 32, groups: int = 1,
         dtype: torch.dtype = torch.float32):
    out = geometry.conv_output_size(size, kernel, stride, padding, 1)
    dy, x = torch.zeros(1, out_channels, out, out, dtype=dtype), torch.zeros(1, channels, size, size, dtype=dtype)
    w = torch.zeros(out_channels, channels // groups, kernel, kernel, dtype=dtype)
    return functional.spec_of(dy, x, w, None, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], groups,
                              [True, False, False])


def choose_form(spec, options: LoweringOptions) -> str:
    """The form of a strided grad_input (`plan.grad_input.strided_form`)."""
    return gi.strided_form(spec, options, for_target(options.target))[0]


@pytest.mark.parametrize("channels, out_channels, kernel, stride, padding, groups, gpu_form, gpu_f32_form, cpu_form", [
    (3, 64, 7, 2, 3, 1, "col2im", "col2im", "col2im"),       # ResNet-50's stem: narrow
    (3, 64, 5, 2, 2, 1, "col2im", "col2im", "col2im"),
    (3, 32, 3, 2, 1, 1, "col2im", "col2im", "col2im"),       # c3 k32 940x1450, MobileNet's stem
    (16, 64, 7, 2, 3, 1, "per-phase", "col2im", "col2im"),   # more than 4 channels
    (64, 64, 5, 2, 2, 1, "per-phase", "col2im", "col2im"),
    (5, 64, 5, 2, 2, 1, "per-phase", "col2im", "col2im"),
    (4, 64, 5, 2, 2, 1, "col2im", "col2im", "col2im"),       # narrow
    (64, 64, 4, 4, 0, 1, "per-phase", "col2im", "col2im"),   # ConvNeXt's 4x4 stride 4, one tap per phase
    (128, 128, 3, 2, 1, 1, "per-phase", "col2im", "col2im"),
    (8, 32, 3, 2, 1, 1, "per-phase", "col2im", "col2im"),
    (3, 8, 1, 2, 0, 1, "per-phase", "per-phase", "per-phase"),  # a 1x1 kernel: one GEMM (weight first in f16)
    (8, 8, 1, 2, 0, 4, "per-phase", "per-phase", "per-phase"),  # grouped 1x1: never the direct form on a GPU
    (8, 8, 3, 2, 1, 4, "per-phase", "per-phase", "direct"),     # grouped (on the CPU group by group)
    (8, 8, 3, 2, 1, 8, "direct", "direct", "direct"),           # depthwise of 9 taps: upstream's form
    (8, 8, 7, 2, 3, 8, "per-phase", "per-phase", "direct"),     # depthwise of 49 taps: the phases
])
def test_form_per_target(channels, out_channels, kernel, stride, padding, groups, gpu_form, gpu_f32_form, cpu_form,
                         monkeypatch):
    """GPU targets: `gpu_form` in f16/bf16, `gpu_f32_form` in f32 (measured
    apart); the CPU's in any dtype."""
    monkeypatch.delenv(GRAD_INPUT_FORM_VARIABLE, raising=False)
    for dtype, want in ((torch.float16, gpu_form), (torch.bfloat16, gpu_form), (torch.float32, gpu_f32_form)):
        configuration = spec(channels, out_channels, kernel, stride, padding, groups=groups, dtype=dtype)
        with_weight = dataclasses.replace(configuration, output_mask=(True, True, False))
        for target in ("cuda", "gfx942"):
            options = LoweringOptions(target=target)
            assert choose_form(configuration, options) == want, dtype
            assert choose_form(with_weight, options) == want  # training's case takes the same form
        assert choose_form(configuration, LoweringOptions(target="cpu")) == cpu_form


def _contraction_operand_types(mlir: str) -> set[str]:
    """Element types of the inputs of every contraction: a linalg.generic
    with a reduction, or the CPU's named matmul."""
    types = set()
    for line in mlir.splitlines():
        contraction = ("linalg.generic" in line and "reduction" in line) or "linalg.matmul" in line
        if contraction and " ins(" in line:
            ins = line.split(" ins(", 1)[1].split(")", 1)[0]
            types.update(t.rsplit("x", 1)[-1].rstrip(">") for t in ins.split(": ", 1)[1].split(", "))
    return types


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kernel, padding, groups, form, gpu_types, dilation", [
    (3, 1, 1, "per-phase", "half", 1),  # four phases woven, the 1-tap one a weight-first GEMM
    (1, 0, 8, "per-phase", "f32", 1),   # a grouped 1x1 kernel, 8 channels a group: one phase inserted with stride
    (1, 0, 4, "per-phase", "half", 1),  # 16 channels a group: a multiple of the MMA tile (targets.widens_windowless)
    (3, 1, 1, "sub-pixel", "f32", 1),
    (3, 1, 1, "auto", "half", 1),       # col2im, which keeps f16/bf16
    (1, 0, 8, "auto", "f32", 1),        # a grouped 1x1 kernel: per-phase on GPU targets
    (1, 0, 4, "auto", "half", 1),
    (1, 0, 1, "auto", "half", 1),       # per-phase on GPU targets
    (3, 1, 8, "auto", "both", 1),       # grouped per-phase: its 1-tap phase in f32, the others f16/bf16
    (3, 1, 4, "auto", "half", 1),       # 16 channels a group: the 1-tap phase too
    (3, 1, 64, "per-phase", "both", 1),  # depthwise per-phase: as with 8
    (3, 1, 64, "auto", "half", 1),      # depthwise of 9 taps: the direct form
    (3, 2, 4, "auto", "half", 2),       # grouped, gcd(s, d) = 2: one live phase of nine taps
])
def test_gpu_half_precision_phases_run_in_f32(dtype, kernel, padding, groups, form, gpu_types, dilation, monkeypatch):
    """IREE 3.13's CUDA code computed the per-phase form wrongly in f16 on the
    H100 in its 1-tap phases (`computes_in_f32`), and did not finish them
    grouped in f16 with channels off its MMA tile: on GPU targets those
    grouped 1-tap phases and sub-pixel contractions read f32 operands;
    ungrouped per-phase, whose 1-tap phases are weight-first GEMMs, the
    other grouped phases (a lone one of several taps too) and col2im keep
    the spec's dtype, and so does every form on the CPU."""
    monkeypatch.setenv(GRAD_INPUT_FORM_VARIABLE, form)
    out = geometry.conv_output_size(16, kernel, 2, padding, dilation)
    dy, x = torch.zeros(2, 64, out, out, dtype=dtype), torch.zeros(2, 64, 16, 16, dtype=dtype)
    w = torch.zeros(64, 64 // groups, kernel, kernel, dtype=dtype)
    configuration = functional.spec_of(dy, x, w, None, [2, 2], [padding] * 2, [dilation] * 2, False, [0, 0], groups,
                                       [True, False, False])
    name = {torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
    expected = {"half": {name}, "f32": {"f32"}, "both": {name, "f32"}}
    for target in ("cuda", "gfx942", "cpu"):
        options = LoweringOptions(target=target, grad_input_form=form)
        chosen = choose_form(configuration, options)
        widened = gi.computes_in_f32(configuration, chosen, options, for_target(options.target))
        assert widened == (target != "cpu" and gpu_types == "f32")
        if target == "cpu" and chosen == "direct":
            continue  # the convolution_backward pattern's, in the spec's dtype (test_validation)
        mlir = functional.lowered(configuration, target=target)
        by_kernel = (gi.kernel_why_not(configuration, options) is None
                     or gi.phase_kernel_why_not(configuration, options, for_target(target)) is None)
        if by_kernel:  # one of our CUDA kernels (an ungrouped 1x1 kernel, or 16 channels a group by phases): no
            # linalg contraction at all
            assert "hal.dispatch.extern" in mlir and not _contraction_operand_types(mlir)
            continue
        operand_types = _contraction_operand_types(mlir)
        want = expected[gpu_types] if target != "cpu" else {name}
        assert operand_types == want, (target, chosen, operand_types)


def _operand_sizes(contraction: str) -> list[list[str]]:
    """The static sizes of a contraction line's inputs, in order."""
    ins = contraction.split(" ins(", 1)[1].split(")", 1)[0]
    return [sizes.split("x") for sizes in re.findall(r"tensor<([0-9x]+)x(?:f16|bf16|f32)>", ins.split(": ", 1)[1])]


@pytest.mark.parametrize("kind", ["transposed", "forward"])
@pytest.mark.parametrize("groups, widened", [(4, False), (8, True)])  # 16 or 8 input channels a group
def test_grouped_windowless_convolutions_widen_only_off_the_mma_tile(kind, groups, widened):
    """A grouped f16 1x1 kernel's convolution on a GPU target (a transposed
    grad_input, a forward) keeps f16 where a group's channels are multiples
    of 16, and is widened to f32 elsewhere (`targets.widens_windowless`)."""
    case = gpu_check.Case("windowless", 8, 64, 128, 14, (1, 1), 2, 0, groups, "auto", "f16", kind=kind)
    if kind == "forward":
        mlir = gpu_check._mlir(case)
    else:  # grad_input alone: the weight gradient takes forms of its own
        tensors = [torch.zeros(size, dtype=torch.float16) for size in gpu_check.shapes(case).values()]
        arguments = gpu_check.arguments(case)[:-1] + [[True, False, False]]
        mlir = functional.lowered(functional.spec_of(*tensors, *arguments), target="cuda")
    assert _contraction_operand_types(mlir) == ({"f32"} if widened else {"f16"})


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("groups", [1, 4])
def test_gpu_one_tap_kernels_avoid_the_half_precision_convolution(stride, groups, monkeypatch):
    """A 1x1 kernel on a GPU target, at stride 1 too in f16 (`targets.one_tap_half_on_gpu`):
    IREE 3.13's CUDA code computed a contraction with dy as its first
    operand (every convolution-shaped generic) wrongly in f16, and the same
    GEMM with the weight first right. Ungrouped, the one contraction reads
    the weight [c, f] first, gathered row-major by flat index (which IREE
    keeps as a dispatch of its own; no optimization barrier), then dy [n,
    f, positions] in f16: its positions one dim at stride 1, (oh, ow) with
    a stride, where the strided insert of the result follows. Grouped, the
    phase's convolution in f32. (The form forced to the rule's own pick:
    unforced, the strided ungrouped layer takes the kernel, test_kernel.)"""
    monkeypatch.setenv(GRAD_INPUT_FORM_VARIABLE, "per-phase")
    dy, x = torch.zeros(2, 64, 16 // stride, 16 // stride).half(), torch.zeros(2, 32, 16, 16).half()
    w = torch.zeros(64, 32 // groups, 1, 1).half()
    configuration = functional.spec_of(dy, x, w, None, [stride] * 2, [0, 0], [1, 1], False, [0, 0], groups,
                                       [True, False, False])
    mlir = functional.lowered(configuration, target="cuda")
    contractions = [line for line in mlir.splitlines() if "linalg.generic" in line and "reduction" in line]
    assert len(contractions) == 1, contractions
    if groups > 1:
        assert _contraction_operand_types(mlir) == {"f32"}
        return
    taps, window = _operand_sizes(contractions[0])
    assert taps == ["32", "64"], (taps, window)
    assert window == ["2", "64", *(["256"] if stride == 1 else ["8", "8"])], (taps, window)
    assert "util.optimization_barrier" not in mlir
    (tap,) = [line for line in mlir.splitlines() if "tensor.expand_shape" in line and "into tensor<32x64xf16>" in line]
    assert "tensor<2048xf16>" in tap  # the flat gather of the tap, [c * f]
    assert ("tensor.insert_slice" in mlir) == (stride > 1)


@pytest.mark.parametrize("kernel, padding, groups, form, stride", [
    (3, 1, 4, "auto", 2), (3, 1, 4, "auto", 3), (5, 2, 16, "auto", 2),  # grouped per-phase, 1-tap phases in f32
    (3, 1, 1, "per-phase", 2), (3, 1, 1, "per-phase", 3), (1, 0, 4, "auto", 2), (1, 0, 1, "per-phase", 2), (1, 1, 2, "auto", 3),
    (1, 0, 1, "auto", 1), (3, 1, 1, "sub-pixel", 2),
])
def test_gpu_lowering_of_half_precision_phases_is_right_on_the_cpu(kernel, padding, groups, form, stride,
                                                                   monkeypatch):
    """The IR a GPU target gets for f16 per-phase and sub-pixel (operands
    widened to f32, grad_input rounded where it is written; a 1x1 kernel's
    weight-first GEMM on a tap gathered by flat index), compiled for the CPU, against
    eager float64: the IR is right whatever a GPU's code generation does
    with it. CUDA's own kernels (ungrouped 1x1 layers, narrow phases) are kept
    out: their PTX cannot run here (gfx942 gets these forms)."""
    from iree_bwdconv.compiler import dispatch_regions, pipeline
    from iree_bwdconv import reference
    from iree_bwdconv.run import runtime

    monkeypatch.setenv(GRAD_INPUT_FORM_VARIABLE, form)
    monkeypatch.setattr(gi, "kernel_why_not", lambda spec, options: "run on the CPU here")
    monkeypatch.setattr(gi, "phase_kernel_why_not", lambda spec, options, tuning: "run on the CPU here")
    generator = torch.Generator().manual_seed(0)
    out = geometry.conv_output_size(15, kernel, stride, padding, 1)
    dy = torch.randn(2, 32, out, out, generator=generator).half()
    x = torch.randn(2, 16, 15, 15, generator=generator).half()
    w = torch.randn(32, 16 // groups, kernel, kernel, generator=generator).half()
    arguments = (None, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], groups, [True, False, False])
    configuration = functional.spec_of(dy, x, w, *arguments)
    mlir = functional.lowered(configuration, target="cuda")
    assert "arith.extf" in mlir
    assert "util.optimization_barrier" not in mlir
    if stride == 3 and kernel == 3:  # nine phases of one tap each: nine weight-first GEMMs, one table
        # the one tap table's gather, and the weave's where the phases are not stored in place
        assert mlir.count("tensor.extract %") == 1 + (dispatch_regions.MARK not in mlir)
        assert mlir.count('"reduction"]') == 9
    grad_input = runtime.run(pipeline.iree_compile(mlir, "cpu"), [dy, x, w])[0]
    (comparison,) = reference.compare([grad_input, None, None], dy, x, w, arguments)
    assert comparison.ok, comparison


@pytest.mark.parametrize("kernel, padding, channels, out_channels, size, f32_form, half_form", [
    (3, 1, 64, 64, 56, "im2col", "contraction"),    # ResNet-50's: wrong with one image per partial sum, right with two
    (7, 3, 3, 64, 224, "im2col", "contraction"),    # its stem: the same; 16 x 9408 partial outputs
    (1, 0, 256, 512, 56, "rows", "rows"),           # its projection: every 1x1 contraction was wrong
    (1, 0, 64, 256, 56, "im2col", "rows"),          # 51 multiply-adds per element copied: f32 keeps im2col
    (3, 1, 256, 256, 28, "im2col", "im2col"),       # a large weight over 14x14 positions: im2col was faster
    (5, 1, 128, 256, 70, "im2col", "contraction"),  # ... over 34x34 (1.5x faster than im2col at 19x87)
])
def test_gpu_strided_weight_gradient_forms(kernel, padding, channels, out_channels, size, f32_form, half_form):
    """Strided weight gradients at n32 on GPU targets: in f32 im2col, or
    `weight_rows` for 1x1 kernels with enough work per element copied; in
    f16/bf16 the contraction with at least two images per partial sum,
    `weight_rows` for 1x1 kernels, and im2col for large weights over few
    positions."""
    out = geometry.conv_output_size(size, kernel, 2, padding, 1)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        dy, x = torch.zeros(32, out_channels, out, out, dtype=dtype), torch.zeros(32, channels, size, size, dtype=dtype)
        w = torch.zeros(out_channels, channels, kernel, kernel, dtype=dtype)
        configuration = functional.spec_of(dy, x, w, None, [2, 2], [padding] * 2, [1, 1], False, [0, 0], 1,
                                           [False, True, False])
        half = dtype != torch.float32
        cuda = LoweringOptions(target="cuda")
        form = ("rows" if gw.rows_apply(configuration, cuda, for_target(cuda.target))
                else "im2col" if gw.by_im2col(configuration, cuda, for_target(cuda.target))[0] else "contraction")
        assert form == (half_form if half else f32_form), dtype
        if form == "contraction":
            assert 32 // gw.image_split(configuration, cuda, for_target(cuda.target)) >= for_target("cuda").half_strided_min_images


def test_gpu_f32_weight_gradients_take_im2col():
    """f32 on GPU targets: the contraction was 1.5x-16x slower than im2col
    on the H100, unstrided layers and large weights included."""
    for kernel, stride, channels in ((3, 1, 64), (3, 2, 256), (5, 2, 128), (2, 1, 64)):
        out = geometry.conv_output_size(56, kernel, stride, kernel // 2, 1)
        dy, x = torch.zeros(32, channels, out, out), torch.zeros(32, channels, 56, 56)
        w = torch.zeros(channels, channels, kernel, kernel)
        configuration = functional.spec_of(dy, x, w, None, [stride] * 2, [kernel // 2] * 2, [1, 1], False, [0, 0],
                                           1, [False, True, False])
        assert gw.by_im2col(configuration, LoweringOptions(target="cuda"), for_target("cuda"))[0], \
            (kernel, stride, channels)
        assert gw.by_im2col(configuration, LoweringOptions(target="gfx942"), for_target("gfx942"))[0], \
            (kernel, stride, channels)


@pytest.mark.parametrize("kernel, channels, out_channels, size, wrong", [
    ((1, 1), 256, 64, 56, True),    # ResNet-50's 1x1 stride-1 layers: the contraction was wrong at n32
    ((1, 1), 1024, 2048, 25, True),
    ((1, 3), 64, 64, 28, True),     # a kernel dim of 1: counted in
    ((3, 3), 64, 64, 56, False),    # right on every unstrided kernel wider than 1 checked
    ((2, 2), 64, 64, 28, False),
])
def test_gpu_half_precision_one_wide_weight_gradients_take_im2col_at_stride_1(kernel, channels, out_channels, size,
                                                                               wrong):
    padding = [k // 2 for k in kernel]
    out = [geometry.conv_output_size(size, k, 1, p, 1) for k, p in zip(kernel, padding)]
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        dy, x = torch.zeros(32, out_channels, *out, dtype=dtype), torch.zeros(32, channels, size, size, dtype=dtype)
        w = torch.zeros(out_channels, channels, *kernel, dtype=dtype)
        configuration = functional.spec_of(dy, x, w, None, [1, 1], padding, [1, 1], False, [0, 0], 1,
                                           [False, True, False])
        half = dtype != torch.float32
        cuda = LoweringOptions(target="cuda")
        assert gw.half_contraction_wrong(configuration, cuda) == (wrong and half), dtype
        if wrong and half:
            assert gw.by_im2col(configuration, cuda, for_target(cuda.target))[0]
        assert not gw.half_contraction_wrong(configuration, LoweringOptions(target="cpu"))


def test_gpu_one_tap_kernels_in_f32_take_the_named_matmul():
    """A stride-1 1x1 kernel on GPU targets: in f16/bf16 the weight-first
    GEMM (a reduction over f alone, taken by the phases pattern,
    `one_tap_half_on_gpu`; for CUDA our own kernel takes ungrouped ones, so
    gfx942's lowering shows it); in f32 the CPU's im2col + named matmul,
    which IREE's f32 code ran faster than the convolution-shaped generic."""
    dy, x, w = torch.zeros(2, 64, 16, 16), torch.zeros(2, 32, 16, 16), torch.zeros(64, 32, 1, 1)
    for dtype, taken in ((torch.float32, False), (torch.float16, True), (torch.bfloat16, True)):
        configuration = functional.spec_of(dy.to(dtype), x.to(dtype), w.to(dtype), None, [1, 1], [0, 0], [1, 1],
                                           False, [0, 0], 1, [True, False, False])
        assert targets.one_tap_half_on_gpu("cuda", configuration.dtype, configuration.kernel) == taken, dtype
        assert (gi.kernel_why_not(configuration, LoweringOptions(target="cuda")) is None) == taken, dtype
        mlir = functional.lowered(configuration, target="gfx942" if taken else "cuda")
        contractions = [line for line in mlir.splitlines() if "linalg.generic" in line and "reduction" in line]
        if taken:
            (contraction,) = contractions
            assert contraction.count('"reduction"') == 1, (dtype, contraction)
        else:
            assert not contractions, contractions
            (matmul,) = [line for line in mlir.splitlines() if "linalg.matmul" in line]
            assert "tensor<512x64xf32>, tensor<64x32xf32>" in matmul, matmul
        assert not targets.one_tap_half_on_gpu("cpu", configuration.dtype, configuration.kernel)


@pytest.mark.parametrize("dtype, kernel, stride, groups, taken", [
    (torch.float32, 1, 2, 1, True),
    (torch.float32, 1, 1, 1, False),   # 1.3x slower than the convolution at stride 1
    (torch.float32, 1, 2, 2, False),   # grouped: the convolution
    (torch.float32, 3, 2, 1, False),   # wider kernels: slower on five of six layers
    (torch.float16, 1, 2, 1, False),   # f16/bf16: the weight-first GEMM
])
def test_gpu_transposed_one_tap_f32_takes_the_named_matmul(dtype, kernel, stride, groups, taken):
    """A transposed convolution's grad_input on GPU targets: an ungrouped
    strided 1x1 kernel in f32 is an im2col gather and the named matmul."""
    x, w = torch.zeros(2, 8, 6, 6, dtype=dtype), torch.zeros(8, 4 // groups, kernel, kernel, dtype=dtype)
    y = torch.ops.aten.convolution(x, w, None, [stride] * 2, [0, 0], [1, 1], True, [0, 0], groups)
    configuration = functional.spec_of(y, x, w, None, [stride] * 2, [0, 0], [1, 1], True, [0, 0], groups,
                                       [True, False, False])
    rule = (configuration.dtype, configuration.kernel, configuration.stride, configuration.groups)
    assert targets.one_tap_strided_f32_on_gpu("cuda", *rule) == taken
    assert not targets.one_tap_strided_f32_on_gpu("cpu", *rule)
    matmuls = [line for line in functional.lowered(configuration, target="cuda").splitlines() if "linalg.matmul" in line]
    assert bool(matmuls) == taken, matmuls


@pytest.mark.parametrize("channels, kernel, form", [
    (128, 3, "weight-as-is"),   # a 3x3 kernel with 128+ grad_input channels
    (64, 3, "im2col"),
    (128, 1, "im2col"),         # a 1x1 kernel
])
def test_gpu_f32_stride_1_grad_input_forms_right_on_the_cpu(channels, kernel, form):
    """f32 stride-1 grad_input on GPU targets: the direct form reading the
    flipped weight as it is (its reduction dim first), or im2col + the
    named matmul; lowered for CUDA, compiled for and run on the CPU, against
    eager float64."""
    from iree_bwdconv.compiler import pipeline
    from iree_bwdconv import reference
    from iree_bwdconv.run import runtime

    generator = torch.Generator().manual_seed(0)
    dy = torch.randn(2, 32, 6, 6, generator=generator)
    x = torch.randn(2, channels, 6, 6, generator=generator)
    w = torch.randn(32, channels, kernel, kernel, generator=generator)
    arguments = (None, [1, 1], [kernel // 2] * 2, [1, 1], False, [0, 0], 1, [True, False, False])
    configuration = functional.spec_of(dy, x, w, *arguments)
    mlir = functional.lowered(configuration, target="cuda")
    assert ("linalg.matmul" in mlir) == (form == "im2col")
    if form == "weight-as-is":  # the weight's flip feeds the convolution untransposed
        (conv,) = [line for line in mlir.splitlines() if "linalg.generic" in line and "reduction" in line]
        assert f"tensor<32x{channels}x3x3xf32>" in conv, conv
    grad_input = runtime.run(pipeline.iree_compile(mlir, "cpu"), [dy, x, w])[0]
    (comparison,) = reference.compare([grad_input, None, None], dy, x, w, arguments)
    assert comparison.ok, comparison


def _weight_spec(batch: int, channels: int, out_channels: int, size: int, kernel: int, stride: int, padding: int):
    out = geometry.conv_output_size(size, kernel, stride, padding, 1)
    dy, x = torch.zeros(batch, out_channels, out, out), torch.zeros(batch, channels, size, size)
    w = torch.zeros(out_channels, channels, kernel, kernel)
    return functional.spec_of(dy, x, w, None, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1,
                              [False, True, False])


@pytest.mark.parametrize("batch, channels, out_channels, size, kernel, stride, padding, columns_first", [
    (2, 64, 64, 56, 3, 1, 1, True),     # ResNet-50's c64 layer: depth 6272 for 64 rows
    (2, 128, 128, 28, 3, 1, 1, True),   # depth 1568 for 128 rows
    (2, 256, 64, 56, 1, 1, 0, True),    # 1x1 stride 1
    (2, 256, 256, 14, 3, 1, 1, False),  # depth 392 for 256 rows: the named matmul was faster
    (4, 64, 64, 56, 3, 2, 1, False),    # strided: the columns-first gather reads every other element
    (2, 32, 64, 40, 5, 2, 1, False),    # and the named matmul's 64 x 800 result is 13 tiles
    (1, 3, 64, 224, 7, 2, 3, True),     # the stem: 64 x 147, three tiles for two threads
    (1, 3, 256, 224, 7, 2, 3, False),   # 256 x 147: twelve tiles
    (2, 3, 4, 16, 7, 2, 3, False),      # three tiles, but 128 terms: nothing to split
])
def test_cpu_grad_weight_im2col_layout(batch, channels, out_channels, size, kernel, stride, padding, columns_first):
    configuration = _weight_spec(batch, channels, out_channels, size, kernel, stride, padding)
    assert gw.columns_first(configuration, LoweringOptions(target="cpu"), for_target("cpu")) == columns_first
    assert not gw.columns_first(configuration, LoweringOptions(target="cuda"), for_target("cuda"))
    dynamic = dataclasses.replace(configuration, input_shape=(None, *configuration.input_shape[1:]),
                                  grad_output_shape=(None, *configuration.grad_output_shape[1:]))
    assert not gw.columns_first(dynamic, LoweringOptions(target="cpu"), for_target("cpu"))


@pytest.mark.parametrize("channels, groups, kernel, transposed, dtype, form", [
    (256, 32, 3, False, torch.float16, "widened"),      # 8 channels a group: IREE's f16 MMA code did not finish
    (256, 32, 3, False, torch.bfloat16, "widened"),
    (256, 32, 3, False, torch.float32, "contraction"),
    (128, 8, 3, False, torch.float16, "contraction"),   # 16 a group
    (64, 4, 3, False, torch.bfloat16, "contraction"),
    (64, 16, 3, False, torch.float16, "widened"),       # 4 a group
    (64, 64, 3, False, torch.float16, "widened"),       # depthwise
    (64, 64, 3, False, torch.float32, "contraction"),
    (256, 32, 1, False, torch.float16, "im2col"),       # a 1-wide kernel, strided
    (256, 32, 3, True, torch.float16, "im2col"),        # transposed
])
def test_gpu_grouped_weight_gradient_forms(channels, groups, kernel, transposed, dtype, form):
    """Grouped weight gradients for CUDA at n32 (stride 2, 56x56): the
    contraction split by images, its smaller f16/bf16 operand read as f32 below
    16 channels a group; im2col for strided 1-wide kernels, transposed
    layers, on gfx942 (whose code IREE did not compile for the g32 layer)
    and the CPU."""
    x = torch.zeros(32, channels, 56, 56, dtype=dtype)
    if transposed:
        w = torch.zeros(channels, channels // groups, kernel, kernel, dtype=dtype)
        out = geometry.transposed_output_size(56, kernel, 2, kernel // 2, 1, 1)
    else:
        w = torch.zeros(channels, channels // groups, kernel, kernel, dtype=dtype)
        out = geometry.conv_output_size(56, kernel, 2, kernel // 2, 1)
    dy = torch.zeros(32, channels, out, out, dtype=dtype)
    configuration = functional.spec_of(dy, x, w, None, [2, 2], [kernel // 2] * 2, [1, 1], transposed,
                                       [1, 1] if transposed else [0, 0], groups, [False, True, False])
    cuda = LoweringOptions(target="cuda")
    taken = ("im2col" if gw.by_im2col(configuration, cuda, for_target(cuda.target))[0]
             else "widened" if gw.grouped_contraction_widened(configuration, cuda, for_target(cuda.target)) else "contraction")
    assert taken == form
    for target in ("gfx942", "cpu"):
        options = LoweringOptions(target=target)
        assert gw.by_im2col(configuration, options, for_target(options.target))[0], target
        assert not gw.grouped_contraction_applies(configuration, options, for_target(options.target)), target


@pytest.mark.parametrize("channels, groups, kernel, stride, dtype, form", [
    (256, 32, (1, 1), 1, torch.float16, "widened"),    # 8 channels a group
    (256, 16, (1, 1), 1, torch.bfloat16, "contraction"),  # 16 a group: a multiple of the MMA tile, in bf16
    (256, 16, (1, 1), 1, torch.float16, "contraction"),
    (256, 16, (3, 1), 1, torch.float16, "widened"),    # 1-wide, its window sliding
    (64, 4, (1, 3), 1, torch.float16, "widened"),
    (256, 32, (3, 1), 1, torch.float32, "contraction"),
    (240, 8, (1, 1), 1, torch.float16, "im2col"),      # 30 a group
    (256, 8, (1, 1), 1, torch.float16, "contraction"),  # 32 a group: past 16, kept in f16
    (256, 2, (1, 1), 1, torch.bfloat16, "contraction"),  # 128 a group
    (256, 4, (3, 1), 1, torch.float16, "im2col"),      # 64 a group, 1-wide but its window sliding
    (256, 4, (1, 1), 1, torch.float32, "im2col"),      # 64 a group in f32
    (256, 32, (1, 1), 2, torch.float16, "im2col"),     # strided
])
def test_gpu_grouped_one_wide_weight_gradient_forms(channels, groups, kernel, stride, dtype, form):
    """Grouped kernels with a dim of 1 for CUDA at n32: the contraction,
    unstrided with at most 16 channels a group (`GROUPED_ONE_WIDE_MAX_CHANNELS`),
    read as f32 in f16/bf16 but for a 1x1 kernel whose channels a group are
    multiples of 16, which takes it in f16/bf16 with any such count; else
    im2col."""
    configuration = spec_nd(32, channels, channels, (28, 28), kernel, (stride,) * 2, (0, 0), groups=groups,
                            dtype=dtype, mask=(False, True, False))
    cuda = LoweringOptions(target="cuda")
    taken = ("im2col" if gw.by_im2col(configuration, cuda, for_target(cuda.target))[0]
             else "widened" if gw.grouped_contraction_widened(configuration, cuda, for_target(cuda.target)) else "contraction")
    assert taken == form
    assert gw.by_im2col(configuration, LoweringOptions(target="gfx942"), for_target("gfx942"))[0]


@pytest.mark.parametrize("sizes, kernel, stride, dilation, groups, dtype", [
    ((200,), (3,), (2,), (2,), 1, torch.float16),
    ((200,), (3,), (2,), (2,), 4, torch.float16),
    ((28, 28), (3, 3), (1, 2), (1, 2), 4, torch.bfloat16),
])
def test_gpu_lone_phase_strided_in_one_dim_is_woven(sizes, kernel, stride, dilation, groups, dtype):
    """gcd(s, d) > 1 leaves one live phase of several taps; in f16/bf16,
    strided along one dim, IREE 3.13 failed to compile its strided insert
    fused into the phase's MMA convolution for CUDA and gfx942 at this size
    ("LLVM Translation failed for operation: builtin.unrealized_conversion_cast").
    It is woven with zeros along that dim instead, and compiles."""
    configuration = spec_nd(8, 64, 64, sizes, kernel, stride, dilation, dilation, groups, dtype)
    for target in ("cuda", "gfx942"):
        mlir = functional.lowered(configuration, target=target)
        inserts = [line for line in mlir.splitlines() if "tensor.insert_slice" in line]
        assert not any(re.search(r"\] \[[0-9, ]*[2-9][0-9, ]*\] :", line) for line in inserts), inserts
        functional.compile(mlir, target)


@pytest.mark.parametrize("sizes, kernel, stride, channels, groups, dtype, by_shifts", [
    ((28, 28), (3, 3), (1, 2), 64, 1, torch.float16, False),   # three taps in a phase
    ((28, 28), (3, 3), (1, 2), 64, 2, torch.float32, False),
    ((200,), (3,), (2,), 48, 1, torch.float16, False),         # 48 channels
    ((28, 28), (3, 3), (2, 2), 64, 1, torch.float16, True),
])
def test_gpu_one_tap_table_only_where_it_decodes_by_shifts(sizes, kernel, stride, channels, groups, dtype, by_shifts):
    """IREE 3.13's CUDA code for the one tap-table gather failed to compile
    where its flat index is divided by a size other than a power of two
    ("Cannot select: v2i16,v2i16 = umul_lohi"): such layers take a table
    per phase, and compile."""
    configuration = spec_nd(8, channels, channels, sizes, kernel, stride, (1,) * len(sizes), groups=groups,
                            dtype=dtype)
    live, _ = gi.live_phases(configuration)
    assert gi.decodes_by_shifts(configuration, live) == by_shifts
    assert choose_form(configuration, LoweringOptions(target="cuda")) == "per-phase"
    if not by_shifts:
        functional.compile(functional.lowered(configuration, target="cuda"), "cuda")


@pytest.mark.parametrize("in_channels, out_channels, groups, widened", [
    (16, 64, 2, True),     # 8 and 32 channels a group
    (64, 512, 8, True),
    (32, 64, 2, False),    # 16 input channels a group
    (16, 32, 2, False),    # 16 output channels a group
])
def test_gfx942_grouped_phases_with_few_input_channels_widen(in_channels, out_channels, groups, widened):
    """IREE 3.13 did not compile the f16/bf16 phase convolutions of grouped
    layers with 8 input and 32 output channels a group for gfx942 (too much
    shared memory); there the form widens to f32 whole, and compiles.
    CUDA compiled them and keeps f16."""
    configuration = spec_nd(8, in_channels, out_channels, (28, 28), (3, 3), (2, 2), (1, 1), groups=groups)
    for target in ("gfx942", "cuda"):
        options = LoweringOptions(target=target)
        assert choose_form(configuration, options) == "per-phase"
        assert gi.computes_in_f32(configuration, "per-phase", options, for_target(options.target)) == (widened and target == "gfx942")
    if widened:
        functional.compile(functional.lowered(configuration, target="gfx942"), "gfx942")
