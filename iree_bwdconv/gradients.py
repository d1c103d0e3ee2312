"""The contractions of convolution_backward as linalg.generic ops, one
rank-generic builder per gradient. Sizes and paddings come from `geometry`;
the builders only turn them into IR.

Channels are always split into an explicit group dim, so one code path
serves grouped, depthwise and ungrouped convolutions (a unit group dim
folds away). Loop dims are named as MLIR's opdsl names them: n (batch),
g (group), f (grad_output channel in group), c (input channel in group),
o/i (output/input spatial), k (kernel taps).
"""

from __future__ import annotations

from typing import Callable, Optional

from torch_mlir import ir

from . import geometry
from . import linalg_builders as lb
from . import torch_ir
from .errors import InvalidArgumentError
from .linalg_builders import PARALLEL, REDUCTION
from .spec import ConvBackwardSpec

ACCUMULATOR = "f32"


def _window(o: ir.AffineExpr, k: ir.AffineExpr, stride: int, dilation: int) -> ir.AffineExpr:
    """Padded-source index `o*s + k*d` read by output o through tap k."""
    return o * stride + k * dilation


def _finish(acc: ir.Value, spec: ConvBackwardSpec, collapse_axis: int) -> ir.Value:
    """Merge the group dim back into channels and round to the op's dtype."""
    return lb.convert(lb.collapse_dims(acc, collapse_axis), lb.element_type(spec.dtype))


def _batch(value: ir.Value) -> lb.Size:
    return lb.sizes_of(value)[0]


def grad_bias(spec: ConvBackwardSpec, grad_output: ir.Value) -> ir.Value:
    """db[f] = sum over n and every spatial position of dy[n, f, ...]."""
    r = spec.spatial_rank
    f, n, *o = lb.dims(2 + r)
    init = lb.zeros([spec.out_channels], lb.element_type(ACCUMULATOR))
    maps = [lb.affine_map(2 + r, [n, f, *o]), lb.affine_map(2 + r, [f])]
    acc = lb.reduction(grad_output, init, maps, [PARALLEL] + [REDUCTION] * (1 + r))
    return lb.convert(acc, lb.element_type(spec.dtype))


def grad_weight(spec: ConvBackwardSpec, grad_output: ir.Value, input_: ir.Value) -> ir.Value:
    """Weight gradient; reads the padded source at `o*s + k*d`, so no zero is
    ever multiplied but those of the padding itself.

    transposed=False: dw[g,f,c,k] = sum_{n,o} xp[n,g,c,o*s+k*d] * dy[n,g,f,o]
    transposed=True:  dw[g,c,f,k] = sum_{n,i} x[n,g,c,i] * dyp[n,g,f,i*s+k*d]
    """
    r, groups = spec.spatial_rank, spec.groups
    c_in, f_out = spec.in_channels // groups, spec.out_channels // groups
    if spec.transposed:
        source, windows, padded_input = spec.output_spatial, spec.input_spatial, False
    else:
        source, windows, padded_input = spec.input_spatial, spec.output_spatial, True
    window = (source, windows, spec.kernel, spec.stride, spec.padding, spec.dilation)
    if any(map(geometry.reads_only_padding, *window)):
        return lb.zeros(list(spec.weight_shape), lb.element_type(spec.dtype))
    low, high = geometry.window_padding_nd(*window)
    zero = [0, 0]
    if padded_input:
        input_ = lb.pad_or_crop(input_, zero + list(low), zero + list(high))
    else:
        grad_output = lb.pad_or_crop(grad_output, zero + list(low), zero + list(high))
    x = lb.expand_dim(input_, 1, (groups, c_in))
    dy = lb.expand_dim(grad_output, 1, (groups, f_out))

    num = 4 + 2 * r
    g, a, b, *rest = lb.dims(num)
    k, (n, *w) = rest[:r], rest[r:]
    windowed = [_window(wi, ki, s, d) for wi, ki, s, d in zip(w, k, spec.stride, spec.dilation)]
    if spec.transposed:  # out [G, C/G, F/G, *K]: a = c, b = f
        c, f = a, b
        x_map, dy_map = [n, g, c, *w], [n, g, f, *windowed]
        out_sizes = [groups, c_in, f_out, *spec.kernel]
    else:  # out [G, F/G, C/G, *K]: a = f, b = c
        f, c = a, b
        x_map, dy_map = [n, g, c, *windowed], [n, g, f, *w]
        out_sizes = [groups, f_out, c_in, *spec.kernel]
    init = lb.zeros(out_sizes, lb.element_type(ACCUMULATOR))
    maps = [lb.affine_map(num, x_map), lb.affine_map(num, dy_map), lb.affine_map(num, [g, a, b, *k])]
    iterators = [PARALLEL] * (3 + r) + [REDUCTION] * (1 + r)
    return _finish(lb.contraction(x, dy, init, maps, iterators), spec, 0)


def grad_input_transposed(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value) -> ir.Value:
    """Input gradient of a transposed convolution: a strided forward
    convolution of dy, so no zeros are inserted.

    dx[n,g,c,i] = sum_{f,k} dyp[n,g,f,i*s+k*d] * w[g,c,f,k]
    """
    r, groups = spec.spatial_rank, spec.groups
    c_in, f_out = spec.in_channels // groups, spec.out_channels // groups
    window = (spec.output_spatial, spec.input_spatial, spec.kernel, spec.stride, spec.padding, spec.dilation)
    if any(map(geometry.reads_only_padding, *window)):
        return zeros_like_input(spec, grad_output)
    low, high = geometry.window_padding_nd(*window)
    dy = lb.expand_dim(lb.pad_or_crop(grad_output, [0, 0, *low], [0, 0, *high]), 1, (groups, f_out))
    w = lb.expand_dim(weight, 0, (groups, c_in))

    num = 4 + 2 * r
    n, g, c, *rest = lb.dims(num)
    i, f, k = rest[:r], rest[r], rest[r + 1 :]
    windowed = [_window(ii, ki, s, d) for ii, ki, s, d in zip(i, k, spec.stride, spec.dilation)]
    maps = [
        lb.affine_map(num, [n, g, f, *windowed]),
        lb.affine_map(num, [g, c, f, *k]),
        lb.affine_map(num, [n, g, c, *i]),
    ]
    init = lb.zeros([_batch(grad_output), groups, c_in, *spec.input_spatial], lb.element_type(ACCUMULATOR))
    iterators = [PARALLEL] * (3 + r) + [REDUCTION] * (1 + r)
    return _finish(lb.contraction(dy, w, init, maps, iterators), spec, 1)


def zeros_like_input(spec: ConvBackwardSpec, grad_output: ir.Value) -> ir.Value:
    """An all-zero input gradient, for when every grad_output element reads
    only padding: nothing to contract."""
    sizes = [_batch(grad_output), spec.in_channels, *spec.input_spatial]
    return lb.zeros(sizes, lb.element_type(spec.dtype))


GradInputBuilder = Callable[[ConvBackwardSpec, ir.Value, ir.Value], ir.Value]


def replace_convolution_backward(
    op: ir.Operation, rewriter, spec: ConvBackwardSpec, grad_input: GradInputBuilder
) -> None:
    """Replace the op by the gradients its output_mask asks for, building
    grad_input with the pattern's own form and the others as above."""
    with rewriter.ip, op.location:
        grad_output, input_, weight = (torch_ir.to_builtin(v) for v in list(op.operands)[:3])
        builders = (
            lambda: (grad_input_transposed if spec.transposed else grad_input)(spec, grad_output, weight),
            lambda: grad_weight(spec, grad_output, input_),
            lambda: grad_bias(spec, grad_output),
        )
        results = []
        for index, build in enumerate(builders):
            type_ = torch_ir.result_type(op, index)
            results.append(torch_ir.none_value() if type_ is None else torch_ir.from_builtin(build(), type_))
        rewriter.replace_op(op, results)


def check_convolution_backward(op: ir.Operation) -> tuple[Optional[ConvBackwardSpec], Optional[str]]:
    """Preconditions every pattern shares, before any IR is built:
    (spec, None), or (None, why not)."""
    try:
        spec = torch_ir.read_convolution_backward(op)
    except (torch_ir.PatternMismatch, InvalidArgumentError) as err:
        return None, str(err)
    for index, wanted in enumerate(spec.output_mask):
        if wanted != (torch_ir.result_type(op, index) is not None):
            return None, f"result {index} is {op.results[index].type} but output_mask[{index}]={wanted}"
    return spec, None
