"""Grouped convolutions on the CPU, one ungrouped convolution per group.

IREE 3.13's CPU code for the grouped convolution maps (those of
`linalg.conv_2d_ngchw_gfchw`, which torch-mlir emits for the forward and our
direct form for grad_input) and for the grouped im2col batch matmul of
grad_weight ran 2x-20x slower than the same work with the groups sliced
apart, each group an ungrouped convolution that IREE tiles and vectorizes
as it does any other: the forward 3x-17x with 2 to 16 channels per group
(`benchmarks/forward_cpu.py`), the g32 shape's grad_input 5x and
grad_weight 2x (docs/performance-journal.md, "Grouped convolutions on the CPU").
Depthwise convolutions (one input channel per group) are the exception:
IREE recognizes them as such, and slicing them apart ran 1.1x-1.4x slower,
so they keep the grouped form.

Slicing a channel range is a unit-stride extract_slice; the per-group results
are inserted side by side into one tensor.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from torch_mlir import ir
from torch_mlir.dialects import tensor

from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.plan import one_group_spec
from iree_bwdconv.spec import ConvBackwardSpec


def channel_slice(value: ir.Value, axis: int, group: int, width: int) -> ir.Value:
    """Channels `[group*width, (group+1)*width)` of `value` along `axis`."""
    sizes = lb.sizes_of(value)
    offsets = [0] * len(sizes)
    offsets[axis] = group * width
    sizes[axis] = width
    return lb.extract(value, offsets, sizes)


def concat(parts: Sequence[ir.Value], axis: int) -> ir.Value:
    """The parts side by side along `axis` (they agree on every other dim)."""
    sizes = lb.sizes_of(parts[0])
    width = sizes[axis]
    sizes[axis] = width * len(parts)
    result = tensor.EmptyOp(sizes, ir.RankedTensorType(parts[0].type).element_type).result
    for index, part in enumerate(parts):
        offsets = [0] * len(sizes)
        offsets[axis] = index * width
        result = lb.insert_strided(part, result, offsets, [1] * len(sizes))
    return result


GradientBuilder = Callable[[ConvBackwardSpec, ir.Value, ir.Value, ir.Value], ir.Value]

# Where each group's gradient goes in the whole one: grad_input's channels,
# grad_weight's leading dim (F for a convolution, C for a transposed one).
CONCAT_AXIS = {"grad_input": 1, "grad_weight": 0}


def per_group(
    spec: ConvBackwardSpec, gradient: str, build: GradientBuilder,
    grad_output: ir.Value, input_: Optional[ir.Value], weight: ir.Value,
) -> ir.Value:
    """`build(spec, grad_output, input_, weight)` once per group, on that
    group's channels with an ungrouped spec, concatenated (`input_` None
    where the gradient does not read it: grad_input)."""
    g, one = spec.groups, one_group_spec(spec)
    parts = [
        build(
            one,
            channel_slice(grad_output, 1, i, one.out_channels),
            None if input_ is None else channel_slice(input_, 1, i, one.in_channels),
            channel_slice(weight, 0, i, one.weight_shape[0]),
        )
        for i in range(g)
    ]
    return concat(parts, CONCAT_AXIS[gradient])
