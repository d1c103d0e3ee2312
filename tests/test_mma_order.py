"""`mma_order`: the contractions IREE 3.13's CUDA code computes wrongly in
f16/bf16 (the innermost loop of N before M's), judged on IREE's configured
dispatches, and `pipeline` refusing a CUDA module that holds one.

Which orders are wrong was measured on an H100
(`benchmarks/results/h100_mma_order_2026-11-27.txt`: 48 cases, the flag
and the numbers agreeing on each); the tests below pin the judgment to
those cases."""

from __future__ import annotations

import itertools
import shlex
import subprocess
from pathlib import Path

import pytest
import torch

from benchmarks import gpu_check
from benchmarks import mma_order as grid
from iree_bwdconv.builders import contraction_forms
from iree_bwdconv import functional
from iree_bwdconv.compiler import mma_order, pipeline
from iree_bwdconv.errors import WrongCodeError
from iree_bwdconv.plan import grad_input as gi, grad_weight as gw

GEMM = ([0, 2], [2, 1], [0, 1])  # A[m, k], B[k, n] -> C[m, n]: loops (m, n, k)


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_roles_of_every_loop_order_of_a_batched_gemm(order):
    b, m, n, k = order
    maps = ([b, k, m], [b, k, n], [b, n, m])
    roles = mma_order.dim_roles(*maps, num_dims=4)
    assert roles == mma_order.DimRoles((b,), (m,), (n,), (k,))
    assert mma_order.n_before_m(roles) == (n < m)


R = mma_order.DimRoles


@pytest.mark.parametrize("maps, roles", [
    (GEMM, R((), (0,), (1,), (2,))),
    (([2, 0, 3], [3, 1], [2, 1, 0]), R((), (0, 2), (1,), (3,))),  # a batch of A and C alone is a dim of M
    (([1, 4], [0, 4, 2, 3], [0, 1, 2, 3]), R((), (1,), (0, 2, 3), (4,))),  # the weight-first GEMM
    (([0, 4, 1], [0, 4, 2, 3], [0, 1, 2, 3]), R((0,), (1,), (2, 3), (4,))),
    (([0, None], [2, 1], [0, 1]), None),  # a window: not a contraction
    (([0, 2], [2, 1], [0, 1, 3]), None),  # a dim of the result alone
    (([0, 2, 3], [2, 1], [0, 1]), None),  # a reduction of the first operand alone
])
def test_roles(maps, roles):
    num_dims = 1 + max(d for operand in maps for d in operand if d is not None)
    assert mma_order.dim_roles(*maps, num_dims=num_dims) == roles


def test_only_the_innermost_dims_of_m_and_n_count():
    weight_first = mma_order.dim_roles([1, 4], [0, 4, 2, 3], [0, 1, 2, 3], 5)
    assert not mma_order.n_before_m(weight_first)  # right on the H100 (every 1x1 gpu_check case)
    inner_m_last = mma_order.dim_roles([0, 2, 3], [3, 1], [0, 1, 2], 4)
    assert mma_order.n_before_m(inner_m_last)
    assert not mma_order.n_before_m(mma_order.dim_roles(*GEMM, 3))


def _case(name_part: str) -> dict:
    (case,) = [c for c in grid.cases() if c["name"].endswith(name_part) and c["sizes"] == grid.SIZES[0]
               and c["dtype"] == "f16"]
    return case


@pytest.fixture
def repro_dir(tmp_path):
    return tmp_path


def test_a_cuda_module_whose_dispatch_runs_n_before_m_is_refused(repro_dir):
    text = grid.module_text(_case("Abkm_Bkn_Cbnm_bnmk"))  # 1.35 of the largest value off on the H100
    with pytest.raises(WrongCodeError) as err:
        pipeline.iree_compile(text, "cuda", repro_dir=str(repro_dir))
    assert "matmul_like_2x128x256x192_f16xf16xf32" in str(err.value) and "N before M" in str(err.value)
    saved = Path(err.value.repro_path)
    assert saved.parent == repro_dir and saved.read_text() == text
    # The command compiles (the code is wrong, not missing) and dumps the dispatch named.
    rerun = subprocess.run(shlex.split(err.value.command), capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    dumped = Path(err.value.command.split(pipeline.CONFIGURATIONS_FLAG + "=")[1])
    assert mma_order.misordered_in(dumped)


def test_the_same_contraction_in_gemm_order_compiles():
    assert pipeline.iree_compile(grid.module_text(_case("Abkm_Bkn_Cbnm_bmnk")), "cuda")


def test_the_order_judged_is_the_dispatch_one_after_irees_folding():
    # N before M as written, but IREE folds the batch into M (A [b, m, k],
    # C [b, m, n]) and the dispatch runs (bm, n, k): right on the H100.
    assert pipeline.iree_compile(grid.module_text(_case("Abmk_Bkn_Cbmn_bnmk")), "cuda")


def test_a_folder_the_caller_names_is_judged_too(tmp_path):
    flag = f"{pipeline.CONFIGURATIONS_FLAG}={tmp_path / 'mine'}"
    with pytest.raises(WrongCodeError) as err:
        pipeline.iree_compile(grid.module_text(_case("Abkm_Bkn_Cbnm_bnmk")), "cuda", (flag,))
    assert list((tmp_path / "mine").glob("*.mlir"))
    assert err.value.command.count(pipeline.CONFIGURATIONS_FLAG) == 1  # given once, as iree-compile wants


@pytest.mark.parametrize("target", ["cpu", "gfx942"])
def test_other_targets_are_not_judged(target):
    assert pipeline.iree_compile(grid.module_text(_case("Abkm_Bkn_Cbnm_bnmk")), target)


# gpu_check's known-wrong cases and their right neighbours (each right on
# the H100 when last run): the refusal picks out exactly the wrong ones.
_NEIGHBOURS = ("1x1_s2_g4_direct_f16", "1x1_s2_g4_f16", "upstream_1x1_s1_f16", "upstream_1x1_s2_f16", "upstream_1x1_s1_f32",
               "upstream_3x3_s2_c64_f16", "1x1_s1_f16", "forward_1x1_s1_f16", "transposed_1x1_s2_f16")


@pytest.mark.parametrize("name", _NEIGHBOURS)
def test_the_cuda_refusal_picks_out_gpu_checks_known_wrong_cases(name):
    case = next(c for c in gpu_check.CASES if c.name == name)
    flags = ("--iree-input-type=torch",) if case.kind == "upstream" else ()
    known_wrong = name in gpu_check.KNOWN_WRONG
    if known_wrong:
        with pytest.raises(WrongCodeError):
            pipeline.iree_compile(gpu_check._mlir(case), "cuda", flags)
    else:
        assert pipeline.iree_compile(gpu_check._mlir(case), "cuda", flags)


def test_judged_compile_returns_refused_code_with_what_is_wrong_in_it():
    vmfb, wrong = pipeline.judged_compile(grid.module_text(_case("Abkm_Bkn_Cbnm_bnmk")), "cuda")
    assert vmfb and [found.dispatch for found in wrong] == ["main_dispatch_0_matmul_like_2x128x256x192_f16xf16xf32"]
    vmfb, wrong = pipeline.judged_compile(grid.module_text(_case("Abkm_Bkn_Cbnm_bmnk")), "cuda")
    assert vmfb and wrong == []


# gpu_check's forms whose window slides along no dim, kept in f16 since
# their loops run positions before output channels (`contraction_forms.conv`;
# 16 or 32 channels a group): each right on the H100
# (benchmarks/results/h100_windowless_check_2026-11-27.txt).
_WINDOWLESS = ("1x1_s2_g4_f16", "1x1_s2_g4_direct_f16", "3x3_s2_d3_g4_f16", "transposed_1x1_s2_g4_f16",
               "forward_3x1_h3_g4_f16", "forward_1x1_s1_g4_f16")


def _judged_for_cuda(name: str) -> list[mma_order.Misordered]:
    case = next(c for c in gpu_check.CASES if c.name == name)
    functional.clear_cache()
    try:
        return pipeline.judged_compile(gpu_check._mlir(case), "cuda")[1]
    finally:
        functional.clear_cache()


@pytest.mark.parametrize("name", _WINDOWLESS)
def test_windowless_convolutions_keep_f16_in_the_order_that_is_right(name, monkeypatch):
    # Their phases woven: stored in place (3x3_s2_d3_g4), a grouped phase of
    # one tap is a GEMM (plan rule phase_grouped_one_tap_gemm), not the
    # convolution this checks, and IREE's code for its phase of 2x2 taps in
    # its region reads past an operand, which `compile_fallback` meets by
    # weaving the phases (test_compile_fallback).
    monkeypatch.setattr(gi, "phase_stored_in_place", lambda *args: False)
    assert _judged_for_cuda(name) == []
    # The same forms in opdsl's loop order (output channels first): f16 MMA contractions with the fault.
    monkeypatch.setattr(contraction_forms, "positions_first", lambda *args: False)
    assert _judged_for_cuda(name)


@pytest.mark.parametrize("kernel", [(3, 3), (2, 2)])
def test_a_transposed_weight_gradient_over_one_input_position_runs_in_the_right_order(kernel, monkeypatch):
    # A transposed layer's weight gradient sums over its input's positions,
    # not its output's: over one input position its window slides along no
    # dim though its output has several. Forced to take the contraction
    # (the lowering takes im2col there today), its loops must still be in
    # the order IREE's MMA code gets right.
    case = gpu_check.Case("transposed_one_position", 32, 64, 64, (1, 1), kernel, 1, 0, 1, "auto", "f16",
                          kind="transposed")
    tensors = [torch.zeros(size, dtype=torch.float16) for size in gpu_check.shapes(case).values()]
    spec = functional.spec_of(*tensors, *gpu_check.arguments(case)[:-1], [False, True, False])
    monkeypatch.setattr(gw, "by_im2col", lambda spec, options, tuning: (False, "forced"))
    functional.clear_cache()
    try:
        assert pipeline.judged_compile(functional.lowered(spec, target="cuda"), "cuda")[1] == []
    finally:
        functional.clear_cache()
