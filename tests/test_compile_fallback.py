"""`compile_fallback`: a GPU compile that fails in the usual forms is tried
again in the plain forms, with a warning; what the plain forms change."""

from __future__ import annotations

import io
import warnings
import zipfile
from typing import Optional

import pytest
import torch

from benchmarks import gpu_compile_sweep
from e2e_tests.harness import EXECUTABLE_FORMATS
from iree_bwdconv.compiler import compile_fallback, dispatch_regions, pipeline
from iree_bwdconv import functional, reference
from iree_bwdconv.run import runtime
from iree_bwdconv.errors import PipelineError, PlainFormsWarning, WrongCodeError
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import grad_input as gi
from iree_bwdconv.plan import grad_weight as gw
from iree_bwdconv.plan.tuning import for_target

from specs import spec_nd


def choose_form(spec, options: LoweringOptions) -> str:
    """The form of a strided grad_input (`plan.grad_input.strided_form`)."""
    return gi.strided_form(spec, options, for_target(options.target))[0]


def _grouped_3x3_s2(dtype=torch.float16):
    return spec_nd(8, 64, 64, (28, 28), (3, 3), (2, 2), (1, 1), groups=4, dtype=dtype, mask=(True, True, False))


@pytest.mark.parametrize("target", ["cuda", "gfx942"])
def test_plain_forms_take_the_direct_grad_input_and_one_sum(target):
    configuration = _grouped_3x3_s2()
    one_by_one = spec_nd(8, 64, 64, (28, 28), (1, 1), (2, 2), (0, 0), groups=4)
    usual = LoweringOptions(target=target)
    tuning = for_target(target)
    assert choose_form(configuration, usual) == "per-phase"
    assert gw.image_split(configuration, usual, tuning) > 1
    plain = usual.in_plain_forms()
    assert choose_form(configuration, plain) == "direct"
    assert gw.image_split(configuration, plain, tuning) == 1
    assert gw.im2col_split(configuration, plain, tuning) == 1
    assert choose_form(one_by_one, plain) == "per-phase"  # IREE's f16 1x1 convolution was wrong
    ungrouped = spec_nd(8, 64, 64, (28, 28), (3, 3), (2, 2), (1, 1))
    cpu_plain = LoweringOptions(target="cpu", plain_forms=True)
    assert choose_form(ungrouped, cpu_plain) == "col2im"  # the CPU's rule, unchanged


class _Compiler:
    """pipeline.iree_compile that fails on the calls numbered in `failing`."""

    def __init__(self, failing: set[int]) -> None:
        self.failing, self.inputs = failing, []

    def __call__(self, mlir: str, target: str, timeout_s: Optional[float] = None,
                 repro_dir: Optional[str] = None) -> bytes:
        self.inputs.append(mlir)
        self.repro_dir = repro_dir
        if len(self.inputs) in self.failing:
            raise PipelineError(f"iree-compile for target {target}", "error: no", f"/repro/{len(self.inputs)}.mlir",
                                f"iree-compile /repro/{len(self.inputs)}.mlir")
        return mlir.encode()


class _WrongCodeCompiler(_Compiler):
    """pipeline.iree_compile that refuses the calls numbered in `failing`
    as code IREE computes wrongly."""

    def __call__(self, mlir: str, target: str, timeout_s: Optional[float] = None,
                 repro_dir: Optional[str] = None) -> bytes:
        try:
            return super().__call__(mlir, target, timeout_s, repro_dir)
        except PipelineError as error:
            raise WrongCodeError(error.stage, "N before M", error.repro_path, error.command) from None


def _lower(options: LoweringOptions) -> str:
    return "plain" if options.plain_forms else "usual"


def test_a_failed_gpu_compile_is_tried_again_in_the_plain_forms(monkeypatch):
    compiler = _Compiler({1})
    monkeypatch.setattr(pipeline, "iree_compile", compiler)
    with pytest.warns(PlainFormsWarning, match="/repro/1.mlir"):
        assert compile_fallback.compile_lowering(_lower, LoweringOptions(target="gfx942", repro_dir="/r")) == b"plain"
    assert compiler.inputs == ["usual", "plain"]
    assert compiler.repro_dir == "/r"  # the options' folder for failing IR reaches every compile


def test_usual_forms_refused_as_wrong_code_are_tried_again_in_the_plain_forms(monkeypatch):
    compiler = _WrongCodeCompiler({1})
    monkeypatch.setattr(pipeline, "iree_compile", compiler)
    with pytest.warns(PlainFormsWarning, match="would compute the lowering's usual forms wrongly"):
        assert compile_fallback.compile_lowering(_lower, LoweringOptions(target="cuda")) == b"plain"
    compiler = _WrongCodeCompiler({1, 2})
    monkeypatch.setattr(pipeline, "iree_compile", compiler)
    with pytest.raises(WrongCodeError, match="/repro/1.mlir"):
        compile_fallback.compile_lowering(_lower, LoweringOptions(target="cuda"))


def _lower_in_regions(options: LoweringOptions) -> str:
    """Phases in dispatch regions of ours where the options allow them."""
    if options.plain_forms:
        return "plain"
    return f"usual {dispatch_regions.MARK}" if options.phases_in_place else "usual, woven"


def test_phases_in_regions_refused_as_wrong_code_are_woven_before_the_plain_forms(monkeypatch):
    """IREE's code for some phases in their regions reads past an operand:
    the same forms with the phases woven are tried next, without a
    warning (they are the plan's), and the plain forms only after them."""
    compiler = _WrongCodeCompiler({1})
    monkeypatch.setattr(pipeline, "iree_compile", compiler)
    assert compile_fallback.compile_lowering(_lower_in_regions, LoweringOptions(target="cuda")) == b"usual, woven"
    compiler = _WrongCodeCompiler({1, 2})
    monkeypatch.setattr(pipeline, "iree_compile", compiler)
    with pytest.warns(PlainFormsWarning):
        assert compile_fallback.compile_lowering(_lower_in_regions, LoweringOptions(target="cuda")) == b"plain"
    assert compiler.inputs == [f"usual {dispatch_regions.MARK}", "usual, woven", "plain"]


def test_only_a_module_with_phases_in_regions_of_ours_is_tried_woven():
    cuda = LoweringOptions(target="cuda")
    assert compile_fallback.woven_retry(f"usual {dispatch_regions.MARK}", cuda) == cuda.phases_woven()
    assert compile_fallback.woven_retry("usual, woven", cuda) is None
    assert compile_fallback.woven_retry(f"usual {dispatch_regions.MARK}", cuda.phases_woven()) is None


def test_no_second_try_where_the_first_compiles_or_the_target_is_the_cpu(monkeypatch):
    compiler = _Compiler(set())
    monkeypatch.setattr(pipeline, "iree_compile", compiler)
    assert compile_fallback.compile_lowering(_lower, LoweringOptions(target="cuda")) == b"usual"
    compiler = _Compiler({1})
    monkeypatch.setattr(pipeline, "iree_compile", compiler)
    with pytest.raises(PipelineError, match="/repro/1.mlir"):
        compile_fallback.compile_lowering(_lower, LoweringOptions(target="cpu"))
    assert compiler.inputs == ["usual"]


def test_the_first_failure_is_raised_where_the_plain_forms_fail_or_are_the_same(monkeypatch):
    compiler = _Compiler({1, 2})
    monkeypatch.setattr(pipeline, "iree_compile", compiler)
    with pytest.raises(PipelineError, match="/repro/1.mlir") as raised:
        compile_fallback.compile_lowering(_lower, LoweringOptions(target="cuda"))
    assert "/repro/2.mlir" in str(raised.value.__cause__)
    compiler = _Compiler({1})
    monkeypatch.setattr(pipeline, "iree_compile", compiler)
    with pytest.raises(PipelineError, match="/repro/1.mlir"):
        compile_fallback.compile_lowering(lambda options: "usual", LoweringOptions(target="cuda"))
    assert compiler.inputs == ["usual"]


# The three layers of a compile sweep that gfx942 did not compile in the
# usual forms (benchmarks/results/gpu_compile_sweep_seed5_2026-11-26.jsonl):
# two grouped 1-D phase convolutions past the shared memory, and a grouped
# 3-D weight gradient whose split failed bufferization.
_GFX942_FAILURES = [
    dict(n=4, c=32, k=16, sizes=[128], out=[65], kernel=[3], stride=[2], padding=[3], dilation=[2], groups=4),
    dict(n=4, c=16, k=64, sizes=[168], out=[85], kernel=[5], stride=[2], padding=[3], dilation=[1], groups=2),
    dict(n=8, c=64, k=16, sizes=[9, 13, 8], out=[8, 5, 4], kernel=[2, 2, 1], stride=[1, 3, 2], padding=[0, 2, 0],
         dilation=[1, 2, 1], groups=2),
]


@pytest.mark.parametrize("layer", _GFX942_FAILURES, ids=["1d_k3_s2_d2_g4", "1d_k5_s2_g2", "3d_g2"])
def test_layers_gfx942_refused_compile_in_the_plain_forms(layer):
    layer = dict(layer, transposed=False, output_padding=[0] * len(layer["sizes"]), dtype="f16")
    configuration = gpu_compile_sweep.spec_of(layer, [True, True, True])
    functional.clear_cache()
    with pytest.raises(PipelineError, match="shared memory|not equivalent"):
        pipeline.iree_compile(functional.lowered(configuration, (layer["k"],), "gfx942"), "gfx942")
    with pytest.warns(PlainFormsWarning):
        vmfb = functional.compiled_vmfb(configuration, (layer["k"],), "gfx942")
    embedded = zipfile.ZipFile(io.BytesIO(vmfb)).namelist()
    assert "module.fb" in embedded and any(EXECUTABLE_FORMATS["gfx942"] in name for name in embedded), embedded


def test_the_plain_direct_form_widens_a_window_that_slides_along_no_dim():
    # A tiny random draw (gpu_random_check seed 20261203, the 188th): one
    # input plane along the 2-tap dim, 1-tap dims elsewhere. Its plain
    # direct grad_input in f16 was refused on CUDA (mma_order: IREE folds
    # it to a contraction with grad_output first), and 121% off on the H100
    # compiled as given. Its loops now run positions first, and its groups
    # of 2 channels (off IREE's MMA tile) widen it to f32
    # (`plan.targets.widens_windowless`): it compiles and is right.
    generator = torch.Generator().manual_seed(0)
    dy = torch.randn(1, 6, 1, 8, 3, generator=generator).half()
    x = torch.randn(1, 6, 1, 4, 4, generator=generator).half()
    w = torch.randn(6, 2, 2, 1, 1, generator=generator).half()
    arguments = (None, [3, 1, 3], [1, 2, 2], [1, 1, 2], False, [0, 0, 0], 3, [True, True, False])
    configuration = functional.spec_of(dy, x, w, *arguments)
    plain = LoweringOptions(target="cuda", plain_forms=True)
    assert choose_form(configuration, plain) == "direct"
    mlir = functional.lowered(configuration, target=plain)
    assert pipeline.iree_compile(mlir, "cuda")  # not refused as wrong code
    results = runtime.run(pipeline.iree_compile(mlir, "cpu"), [dy, x, w])
    for comparison in reference.compare([*results, None], dy, x, w, arguments):
        assert comparison.ok, comparison


def test_a_grouped_layer_whose_phases_in_place_are_refused_compiles_woven_for_cuda():
    """3x3 s2 dilation 3 in 4 groups of 16 channels, f16 (gpu_check's
    3x3_s2_d3_g4): the plan stores its phases in place, where IREE's code
    for its phase of 2x2 taps reads past an operand (IREE fault
    `cuda_mma_padding_overread`); the module compiled is the same forms
    woven, with no warning."""
    tensors = [torch.zeros(8, 64, 15, 15), torch.zeros(8, 64, 29, 29), torch.zeros(64, 16, 3, 3)]
    spec = functional.spec_of(*(t.half() for t in tensors), None, [2, 2], [3, 3], [3, 3], False, [0, 0], 4,
                              [True, False, False])
    functional.clear_cache()
    in_place = functional.lowered(spec, target="cuda")
    assert dispatch_regions.marked(in_place)
    with pytest.raises(WrongCodeError, match="padded loop dims"):
        pipeline.iree_compile(in_place, "cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlainFormsWarning)
        assert functional.compiled_vmfb(spec, None, "cuda")
