"""Each IREE fault in `iree_faults` still reproduces on the pinned IREE
without its workaround, and does not with it. A test here that fails
because a fault no longer reproduces means IREE has fixed it: drop the
workaround and the record."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch

from iree_bwdconv.compiler import iree_faults, mma_order, mma_padding, pipeline
from iree_bwdconv.run import runtime
from iree_bwdconv.errors import PipelineError, WrongCodeError
from iree_bwdconv.compiler.iree_faults import FAULTS, Fault


def _partial_write_in_flow(fault: Fault, target: str, workarounds: bool) -> bool:
    """The fused op that writes a result through a strided map, in the
    reproducer's flow IR."""
    flow = pipeline.iree_compile_to(fault.reproducer(), target, "flow", as_given=not workarounds)
    return bool(iree_faults.partial_writes(flow))


def _refused_for_a_unit_window(fault: Fault, target: str, workarounds: bool) -> bool:
    """iree-compile's refusal of the reproducer, naming the window's extent."""
    try:
        pipeline.iree_compile(fault.reproducer(), target, as_given=not workarounds)
    except PipelineError as error:
        assert "inferred input/output operand" in error.diagnostics, error.diagnostics
        return True
    return False


def _batchless_store_misplaced(fault: Fault, target: str, workarounds: bool) -> bool:
    """The reproducer run on the CPU: its inserted convolution off by more
    than half its largest value from float64's (groups after the first at
    the wrong channels)."""
    generator = torch.Generator().manual_seed(0)
    x, w = torch.randn(1, 3, 3, 1, 8, generator=generator), torch.randn(3, 2, 3, 1, 2, generator=generator)
    windows = torch.stack([x.double()[..., 0, 2 * kw:2 * kw + 6] for kw in range(2)], dim=-1)  # n g c ow kw
    expected = torch.zeros(1, 3, 2, 2, 6, dtype=torch.float64)
    expected[:, :, :, 0] = torch.einsum("ngcok,gfck->ngfo", windows, w.double()[:, :, :, 0])
    (got,) = runtime.run(pipeline.iree_compile(fault.reproducer(), target, as_given=not workarounds), [x, w], target)
    return (got.double() - expected).abs().max().item() > 0.5 * expected.abs().max().item()


def _refused_saying(message: str) -> Callable[[Fault, str, bool], bool]:
    """iree-compile's failure with `message` on the reproducer, or (with the
    workaround) on the form the workaround builds instead."""
    def refused(fault: Fault, target: str, workarounds: bool) -> bool:
        try:
            pipeline.iree_compile(fault.avoided() if workarounds else fault.reproducer(), target, as_given=True)
        except PipelineError as error:
            assert message in error.diagnostics, error.diagnostics[-2000:]
            return True
        return False

    return refused


def _refused_without_its_flags(message: str) -> Callable[[Fault, str, bool], bool]:
    """iree-compile's failure with `message` on the reproducer as given, or
    (with the workaround) as `pipeline` compiles it for the target: with
    the flags and steps the target's faults ask for."""
    def refused(fault: Fault, target: str, workarounds: bool) -> bool:
        try:
            pipeline.iree_compile(fault.reproducer(), target, as_given=not workarounds)
        except PipelineError as error:
            assert message in error.diagnostics, error.diagnostics[-2000:]
            return True
        return False

    return refused


def _overread_configured(fault: Fault, target: str, workarounds: bool) -> bool:
    """A contraction padded along an operand's outer dim in IREE's
    configured dispatches of the reproducer: as given, or as `pipeline`
    compiles it (widened where it finds one)."""
    if workarounds:
        _, left = pipeline.judged_compile(fault.reproducer(), target)
        return any(isinstance(found, mma_padding.Overread) for found in left)
    return _overread_as_given(fault.reproducer(), target)


def _overread_as_given(text: str, target: str) -> bool:
    """The overread's mark in IREE's configured dispatches and code of
    `text`, compiled as it is."""
    with tempfile.TemporaryDirectory() as folder:
        configured, binaries = Path(folder, "configured"), Path(folder, "binaries")
        pipeline.iree_compile(text, target, (f"{pipeline.CONFIGURATIONS_FLAG}={configured}",
                                             f"{pipeline.BINARIES_FLAG}={binaries}"), as_given=True)
        return bool(mma_padding.overreads_in(configured, binaries))


def _misordered_configured(fault: Fault, target: str, workarounds: bool) -> bool:
    """N's innermost loop before M's in IREE's configured dispatch of the
    reproducer as given; with the workaround, whether the pipeline lets
    such code out (it refuses it)."""
    if workarounds:
        try:
            pipeline.iree_compile(fault.reproducer(), target)
        except WrongCodeError as refused:
            assert "N before M" in str(refused)
            return False
        return True
    with tempfile.TemporaryDirectory() as folder:
        configured = Path(folder, "configured")
        pipeline.iree_compile(fault.reproducer(), target, (f"{pipeline.CONFIGURATIONS_FLAG}={configured}",),
                              as_given=True)
        return bool(mma_order.misordered_in(configured))


def _our_regions(target: str, dy: list[int], x: list[int], w: list[int], groups: int) -> list[str]:
    """The bodies of our dispatch regions in the f16 grad_input of a stride-2
    convolution without padding, as the plan lowers it for `target` without
    our CUDA kernels (as `iree-bwdconv-compile` does; the phase kernel takes
    such narrow layers otherwise)."""
    from iree_bwdconv import functional
    from iree_bwdconv.options import LoweringOptions

    tensors = (torch.zeros(size, dtype=torch.float16) for size in (dy, x, w))
    spec = functional.spec_of(*tensors, None, [2, 2], [0, 0], [1, 1], False, [0, 0], groups, [True, False, False])
    options = LoweringOptions(target=target, extern_kernels=False)
    regions = functional.lowered(spec, target=options).split("flow.dispatch.region")[1:]
    return [region[:region.index("flow.return")] for region in regions]


def _reductions(body: str) -> list[int]:
    """How many reduction loops each linalg op of `body` has."""
    return [len(re.findall(r'"reduction"', kinds)) for kinds in re.findall(r"iterator_types = \[([^\]]*)\]", body)]


def _grouped_phase_stored_in_one_dispatch(fault: Fault, target: str, workarounds: bool) -> bool:
    """The reproducer's grouped one-tap phases, convolutions, each one
    dispatch that stores its result with the stride (the form whose numbers
    an H200 showed wrong; this machine cannot run it); with the workaround,
    whether the plan still builds a region of ours around a contraction
    over taps (a convolution, not a GEMM) for the reproducer's layer."""
    if workarounds:
        bodies = _our_regions(target, [2, 32, 4, 4], [2, 32, 8, 8], [32, 16, 2, 2], groups=2)
        assert bodies, "the layer's phases are no longer stored in place: this check no longer looks at them"
        return any(n > 1 for body in bodies for n in _reductions(body))
    flow = pipeline.iree_compile_to(fault.reproducer(), target, "flow", as_given=True)
    stores = re.findall(r"dispatch.tensor.store .*strides = \[1, 1, 1, 2, 2\]", flow)
    return len(stores) == 4 and flow.count("flow.executable.export") == 5  # the tap table's gather and 4 phases


def _padded_gemm_stored_in_one_dispatch(fault: Fault, target: str, workarounds: bool) -> bool:
    """The reproducer's padded weight-first GEMM, one dispatch that stores
    its result with the stride (the form whose padding row an H200 showed
    wrong; this machine cannot run it); with the workaround, whether our
    regions for the layer it was met on still pad a GEMM's window."""
    if workarounds:
        bodies = _our_regions(target, [2, 64, 13, 14], [2, 64, 28, 28], [64, 64, 3, 1], groups=1)
        assert len(bodies) == 2, "the layer's phases are no longer stored in place: this check no longer looks at them"
        gemms = [body for body in bodies if 1 in _reductions(body)]
        assert gemms, "the layer's one-tap phase is no longer a GEMM: this check no longer looks at it"
        return any("tensor.pad" in body for body in gemms)
    flow = pipeline.iree_compile_to(fault.reproducer(), target, "flow", as_given=True)
    dispatch = flow[flow.index("flow.executable.export"):]
    return (flow.count("flow.executable.export") == 1 and "tensor.pad" in dispatch
            and bool(re.search(r"dispatch.tensor.store .*strides = \[1, 1, 2, 2\]", dispatch)))


# How each fault shows itself on a target: (fault, target, with its
# workaround) -> whether it is there.
SHOWS: dict[str, Callable[[Fault, str, bool], bool]] = {
    "multi_use_fusion_partial_write": _partial_write_in_flow,
    "unit_window_fold": _refused_for_a_unit_window,
    "cpu_batchless_conv_store": _batchless_store_misplaced,
    "cpu_pad_fused_grouped_conv": _refused_without_its_flags("failed to run translation of source executable"),
    "cpu_bf16_resource_constant": _refused_without_its_flags("failed to verify that all of {value, result} "
                                                             "have same type"),
    "gfx942_phase_shared_memory": _refused_saying("exceeded the limit of 65536 bytes"),
    "gfx942_f16_dynamic_batch_sum": _refused_saying("Cannot select: "),
    "cuda_mma_padding_overread": _overread_configured,
    "cuda_strided_insert_mma_fusion": _refused_saying("LLVM Translation failed for operation: "
                                                      "builtin.unrealized_conversion_cast"),
    "cuda_gather_division_umul_lohi": _refused_saying("Cannot select: "),
    "cuda_mma_loop_order": _misordered_configured,
    "cuda_grouped_phase_store": _grouped_phase_stored_in_one_dispatch,
    "cuda_padded_gemm_store": _padded_gemm_stored_in_one_dispatch,
}

PAIRS = [(fault, target) for fault in FAULTS.values() for target in fault.targets]
IDS = [f"{fault.name}-{target}" for fault, target in PAIRS]


def test_every_fault_says_how_it_shows():
    assert set(SHOWS) == set(FAULTS)


@pytest.mark.parametrize("fault, target", PAIRS, ids=IDS)
def test_fault_reproduces_without_its_workaround(fault, target):
    assert SHOWS[fault.name](fault, target, False), (
        f"IREE fault {fault.name} no longer reproduces on {target}: drop its workaround ({fault.workaround})")


@pytest.mark.parametrize("fault, target", PAIRS, ids=IDS)
def test_workaround_avoids_the_fault(fault, target):
    assert not SHOWS[fault.name](fault, target, True)


# How a fault shows in a module as it is, for the faults with variants.
SHOWS_IN: dict[str, Callable[[str, str], bool]] = {"cuda_mma_padding_overread": _overread_as_given}
VARIANTS = [(fault, variant) for fault in FAULTS.values() for variant in fault.variants]


def test_every_variant_is_a_plan_rule():
    from iree_bwdconv.plan.rules import RULES

    assert VARIANTS and all(variant in RULES for _, variant in VARIANTS)


@pytest.mark.parametrize("fault, variant", VARIANTS, ids=[f"{f.name}-{v}" for f, v in VARIANTS])
def test_a_variants_rule_keeps_its_form_from_the_fault(fault, variant):
    """The form a plan rule avoids shows the fault on the pinned IREE; the
    form it picks does not. Each such rule can go when its fault does."""
    shows = SHOWS_IN[fault.name]
    for target in fault.targets:
        assert shows(fault.reproducer(variant), target), (
            f"IREE fault {fault.name} no longer shows in {variant}'s form on {target}: drop that rule")
        assert not shows(fault.avoided(variant), target)


def test_multi_use_fusion_partial_write_gives_wrong_numbers_on_the_cpu():
    """The reproducer run: the negated input, returned beside every other
    element of it, is unwritten at odd indices without the workaround."""
    fault = iree_faults.MULTI_USE_FUSION_PARTIAL_WRITE
    x = torch.arange(1, 17, dtype=torch.float32).reshape(4, 4)

    def negated(as_given: bool) -> np.ndarray:
        vmfb = pipeline.iree_compile(fault.reproducer(), "cpu", as_given=as_given)
        picked, whole = runtime.run(vmfb, [x], "cpu")
        assert torch.equal(picked, -x[::2, ::2])
        return whole.numpy()

    assert not np.array_equal(negated(as_given=True), -x.numpy())
    assert np.array_equal(negated(as_given=False), -x.numpy())


def test_fault_flags_come_after_the_callers():
    """A caller's flag of the same name cannot turn a fault back on."""
    flag = iree_faults.MULTI_USE_FUSION_PARTIAL_WRITE.flags[0]
    again = flag.replace("=false", "=true")
    flags = pipeline.compile_flags("cpu", (again,))
    assert flags.index(flag) > flags.index(again)
    assert flag not in pipeline.compile_flags("cpu", workarounds=False)


def test_partial_writes_reads_only_results():
    """A strided read is no partial write; the same map on a result is."""
    fault = iree_faults.MULTI_USE_FUSION_PARTIAL_WRITE
    assert iree_faults.partial_writes(fault.reproducer()) == []


def _rule_layers() -> dict:
    """A layer that meets each fault whose workaround is a plan rule."""
    from iree_bwdconv.spec import layer_spec

    return {
        "gfx942_f16_dynamic_batch_sum": lambda dtype: layer_spec(None, 4, 8, (5, 5), (1, 1), dtype=dtype),
        # 8 input and 32 output channels, ungrouped: 2x2-tap phases of 8x8 positions
        "gfx942_phase_shared_memory": lambda dtype: layer_spec(4, 8, 32, (16, 16), (3, 3), (2, 2), (1, 1),
                                                               dtype=dtype),
        # a lone phase strided along one dim (1-D, k3 s2 d2)
        "cuda_strided_insert_mma_fusion": lambda dtype: layer_spec(2, 16, 16, (20,), (3,), (2,), (2,), (2,),
                                                                   dtype=dtype),
        # two phases of 3 taps along the unstrided dim: one table would divide by 3
        "cuda_gather_division_umul_lohi": lambda dtype: layer_spec(2, 64, 64, (28, 28), (3, 3), (1, 2), (1, 1),
                                                                   dtype=dtype),
        # 2x2 s2 in 2 groups of 16: every phase one tap, stored in place
        "cuda_grouped_phase_store": lambda dtype: layer_spec(2, 32, 32, (8, 8), (2, 2), (2, 2), (0, 0), groups=2,
                                                             dtype=dtype),
    }


# Rules that ask their fault's record where it applies (`iree_faults.seen_on`),
# and so fire on its targets and dtypes alone; the others also fire on GPU
# targets the fault spares, where they were kept as measured.
_ASKS_THE_RECORD = {"gfx942_f16_dynamic_batch_sum", "gfx942_phase_shared_memory"}


def test_a_rules_fault_is_what_the_plan_asks_for():
    """A fault whose workaround is a plan rule: on a layer that meets it,
    the rule fires wherever the fault was seen (the per-phase form forced,
    as the GPU's f32 takes col2im), never on the CPU where the fault is a
    GPU's, and nowhere else where the rule asks the record."""
    from iree_bwdconv.options import LoweringOptions
    from iree_bwdconv.plan import plan

    layers = _rule_layers()
    assert set(layers) == {f.name for f in FAULTS.values() if f.rule}
    for fault in (f for f in FAULTS.values() if f.rule):
        for target in ("cpu", "gfx942", "cuda"):
            for dtype in ("f32", "f16", "bf16"):
                options = LoweringOptions(target=target, grad_input_form="per-phase")
                fired = fault.rule in plan(layers[fault.name](dtype), options).rules
                seen = target in fault.targets and dtype in fault.dtypes
                if seen or fault.name in _ASKS_THE_RECORD or (target == "cpu" and "cpu" not in fault.targets):
                    assert fired == seen, (fault.name, target, dtype)