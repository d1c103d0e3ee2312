"""The random layers that `benchmarks/gpu_random_check.py` compiles for the
H100: valid calls of aten.convolution_backward, the same for a seed, and
(the point of the "kernel" family) reaching every form, tile and load
width of the 1x1 kernel."""

from __future__ import annotations

import pytest
import torch

from benchmarks import gpu_compile_sweep, gpu_random_check
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.kernels import catalog
from iree_bwdconv.plan.grad_input import kernel_why_not

SEED, COUNT = 20261126, 300  # the run recorded in docs/performance-journal.md


@pytest.mark.parametrize("families", [("kernel", "layer"), ("kernel-large",), ("small",)])
def test_each_case_is_a_valid_call_with_results_of_its_tensors_shapes(families):
    for layer in gpu_random_check.draws(SEED, 60, families):
        case = gpu_random_check.case(layer)
        dy, x, w = (torch.empty(case["shapes"][name], device="meta") for name in ("dy", "x", "w"))
        grads = torch.ops.aten.convolution_backward(dy, x, w, *case["arguments"])
        wanted = dict(zip(("grad_input", "grad_weight", "grad_bias"), grads))
        assert [list(wanted[name].shape) for name in case["results"]] == [
            {"grad_input": list(x.shape), "grad_weight": list(w.shape), "grad_bias": [dy.shape[1]]}[name]
            for name in case["results"]], case["name"]


def test_small_layers_are_of_one_image_and_mostly_grouped_or_dilated():
    layers = gpu_random_check.draws(SEED, 100, ("small",))
    assert all(layer["n"] == 1 for layer in layers)
    assert sum(layer["groups"] > 1 or max(layer["dilation"]) > 1 for layer in layers) > 50


def test_draws_are_the_same_for_a_seed_and_differ_between_seeds():
    assert gpu_random_check.draws(SEED, 20) == gpu_random_check.draws(SEED, 20)
    assert gpu_random_check.draws(SEED, 20) != gpu_random_check.draws(SEED + 1, 20)


def _kernel_variant(layer: dict) -> tuple[str, int, int] | None:
    """(form, tile channels, row alignment) of the kernel variant a layer
    takes, or None where the kernel's pattern does not take it."""
    if kernel_why_not(gpu_compile_sweep.spec_of(layer, layer["mask"]), LoweringOptions(target="cuda")):
        return None
    arguments = catalog.arguments(layer["c"], layer["k"], layer["sizes"], layer["out"], layer["stride"], layer["padding"])
    form = catalog.form(arguments)
    return form, catalog.tile(layer["c"], form)[0], catalog.row_alignment(arguments[catalog.ARGUMENTS.index("OHW")])


def test_the_recorded_run_reaches_every_form_tile_and_load_width_of_the_kernel():
    taken = {_kernel_variant(layer) for layer in gpu_random_check.draws(SEED, COUNT)} - {None}
    assert {form for form, _, _ in taken} == {"", *catalog.BLOCK_FORMS, catalog.PAIRS}
    assert {tile for _, tile, _ in taken} == {tile[0] for tile in catalog.TILES}
    assert {alignment for _, _, alignment in taken} == set(catalog.ROW_ALIGNMENTS)
    for form in ("", catalog.PAIRS):  # the forms every tile has
        assert {tile for f, tile, _ in taken if f == form} == {tile[0] for tile in catalog.TILES}, form
