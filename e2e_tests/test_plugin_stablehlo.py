"""`iree-bwdconv-compile` on StableHLO: strided transposed convolutions as
JAX writes them (`lhs_dilate`), which IREE's input phase lowers to the
zero-insertion form in three ops: a named convolution, a depthwise one
(with and without a channel multiplier) and, for other groupings, a
`linalg.generic`. Each file is compiled for the CPU, rewritten, run on the
IREE runtime and compared in float64 with what StableHLO defines: the
data dilated, padded and convolved at stride 1 with the filter as given."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from iree_bwdconv import plugin, reference
from iree_bwdconv.run import runtime

from .harness import EXECUTABLE_FORMATS
from .test_plugin import CPU, GPU, INPUTS

_CONV = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d, 3: torch.nn.functional.conv3d}


@dataclass(frozen=True)
class HloConvolution:
    """What a file's `stablehlo.convolution` says: shapes, its dims' letters
    in StableHLO's dim_numbers order (`b`, `f`, spatial digits; `o`, `i`),
    the lhs and rhs dilations, the padding and the feature groups."""

    data_shape: tuple[int, ...]
    filter_shape: tuple[int, ...]
    data_dims: str
    filter_dims: str
    lhs_dilation: int
    rhs_dilation: tuple[int, ...]
    padding: tuple[int, int]
    groups: int
    dtype: torch.dtype = torch.float32

    @property
    def rank(self) -> int:
        return len(self.data_shape) - 2

    def defined(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """StableHLO's definition, in x's dtype's float64 image."""
        spatial = "".join(str(i) for i in range(self.rank))
        x = x.double().permute(*[self.data_dims.index(d) for d in "bf" + spatial])
        w = w.double().permute(*[self.filter_dims.index(d) for d in "oi" + spatial])
        dilated = torch.zeros(*x.shape[:2], *[(n - 1) * self.lhs_dilation + 1 for n in x.shape[2:]],
                              dtype=torch.float64)
        dilated[(slice(None), slice(None), *[slice(None, None, self.lhs_dilation)] * self.rank)] = x
        padded = torch.nn.functional.pad(dilated, [*self.padding] * self.rank)
        y = _CONV[self.rank](padded, w, dilation=self.rhs_dilation, groups=self.groups)
        return y.permute(*["bf".index(d) if d in "bf" else 2 + int(d) for d in self.data_dims])

    def bound(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """The oracle's bound on |got - defined| (`reference.error_bound`)."""
        length = self.filter_shape[self.filter_dims.index("i")] * math.prod(
            self.filter_shape[self.filter_dims.index(str(i))] for i in range(self.rank))
        return reference.error_bound(self.defined(x, w), self.defined(x.abs(), w.abs()), length, self.dtype)


CASES = {
    "stablehlo_grouped_nhwc_k3_s2_g2": HloConvolution((2, 5, 6, 8), (3, 3, 4, 4), "b01f", "01io", 2, (1, 1),
                                                      (1, 2), 2),
    "stablehlo_grouped_nchw_k3_s2_d2_g4": HloConvolution((2, 8, 5, 6), (4, 2, 3, 3), "bf01", "oi01", 2, (2, 1),
                                                         (1, 2), 4),
    "stablehlo_depthwise_nhwc_k3_s2": HloConvolution((2, 5, 6, 8), (3, 3, 1, 8), "b01f", "01io", 2, (1, 1),
                                                     (1, 2), 8),
    "stablehlo_depthwise_nhwc_k3_s2_m2": HloConvolution((2, 5, 6, 4), (3, 3, 1, 8), "b01f", "01io", 2, (1, 1),
                                                        (1, 2), 4),
    "stablehlo_grouped_1d_k5_s2_g2_bf16": HloConvolution((2, 7, 6), (5, 3, 4), "b0f", "0io", 2, (1,), (2, 3), 2,
                                                         torch.bfloat16),
    "stablehlo_nhwc_k3_s2_op3": HloConvolution((2, 5, 6, 8), (3, 3, 8, 4), "b01f", "01io", 2, (1, 1), (1, 4), 1),
    "stablehlo_depthwise_3d_k3_s2": HloConvolution((2, 3, 4, 5, 6), (3, 3, 3, 1, 6), "b012f", "012io", 2,
                                                   (1, 1, 1), (1, 2), 6),
}


def _compiled(name: str, flags) -> plugin.Compiled:
    done = plugin.compile_command_line((INPUTS / f"{name}.mlir").read_text(), plugin.parse(list(flags)))
    assert done.rewritten == 1, "\n".join(done.log)
    return done


def test_every_input_file_is_a_case():
    assert {path.stem for path in INPUTS.glob("stablehlo_*.mlir")} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_stablehlo_transposed_convolution_matches_its_definition_float64(name: str):
    case = CASES[name]
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(case.data_shape, generator=generator).to(case.dtype)
    w = torch.randn(case.filter_shape, generator=generator).to(case.dtype)
    (got,) = runtime.run(_compiled(name, CPU).output, [x, w])
    want = case.defined(x, w)
    assert got.shape == want.shape and got.dtype == case.dtype
    excess = (got.double() - want).abs() - case.bound(x, w)
    assert excess.max() <= 0, f"{name}: off by up to {excess.max():.3g} past the bound"


@pytest.mark.parametrize("target", sorted(GPU))
def test_stablehlo_generic_form_compiles_for_gpu_targets(target: str):
    done = _compiled("stablehlo_grouped_nhwc_k3_s2_g2", GPU[target])
    assert EXECUTABLE_FORMATS[target].encode() in done.output
