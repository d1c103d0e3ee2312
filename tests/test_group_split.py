"""`group_split`: when grouped convolutions are split on the CPU
(`plan.forward.group_split_applies`), and the spec of one group's share
(`plan.one_group_spec`). Its numbers are checked through the backward
(the e2e registry's grouped cases) and the forward pattern
(tests/test_convolution_forward.py)."""

from __future__ import annotations

import pytest

from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import forward, one_group_spec
from iree_bwdconv.plan.tuning import for_target
from iree_bwdconv.spec import make_spec


@pytest.mark.parametrize("groups, channels, target, expected", [
    (4, 8, "cpu", True), (2, 4, "cpu", True), (8, 8, "cpu", False), (1, 8, "cpu", False), (4, 8, "cuda", False),
])
def test_applies(groups, channels, target, expected):
    assert forward.group_split_applies(groups, channels, LoweringOptions(target=target), for_target(target)) is expected


# (grad_output, input, weight) shapes, stride 2, 4 groups: C=8, F=12.
SPEC_SHAPES = {
    False: ((2, 12, 4, 4), (2, 8, 8, 8), (12, 2, 3, 3)),  # weight [F, C/G, k]
    True: ((2, 12, 8, 8), (2, 8, 4, 4), (8, 3, 3, 3)),  # weight [C, F/G, k]
}


@pytest.mark.parametrize("transposed", [False, True])
def test_ungrouped_spec_is_one_groups_share(transposed):
    grad_output, input_, weight = SPEC_SHAPES[transposed]
    spec = make_spec(grad_output, input_, weight, {"weight": "f32"}, None, [2, 2], [1, 1], [1, 1], transposed,
                     [1, 1] if transposed else [0, 0], 4, [True, True, False])
    one = one_group_spec(spec)
    assert one.groups == 1
    assert (one.in_channels, one.out_channels) == (2, 3)
    assert one.weight_shape == (weight[0] // 4, *weight[1:])
    assert (one.input_spatial, one.output_spatial) == (spec.input_spatial, spec.output_spatial)
