"""grad_input of a transposed convolution: a strided forward convolution of
grad_output with the weight as it is (already output channel first), so
no zeros are inserted and no phases are needed. An f16/bf16 1x1 kernel on
GPU targets is a GEMM over every stride-th element of grad_output instead,
or, like a wider kernel that slides along no dim, the rows it reads copied
(in f32 off IREE's MMA tile) and a convolution over them without stride,
its positions' loops before its channels' (`contraction_forms.conv`); a
strided ungrouped one in f32 an im2col gather and the named matmul (wider
kernels keep the strided convolution, which ran faster than im2col on five
of six layers). `plan.grad_input.transposed_form` says which.
"""

from __future__ import annotations

import math

from torch_mlir import ir

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv import geometry
from iree_bwdconv.builders import gradients
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.plan import Plan
from iree_bwdconv.spec import ConvBackwardSpec


def grad_input_transposed(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, *, plan: Plan) -> ir.Value:
    """Input gradient of a transposed convolution: a strided forward
    convolution of dy, so no zeros are inserted, in the form
    `plan.grad_input.transposed_form` names.

    dx[n,g,c,i] = sum_{f,k} dyp[n,g,f,i*s+k*d] * w[g,c,f,k]
    """
    groups, form = spec.groups, plan.grad_input.transposed_form
    window = (spec.output_spatial, spec.input_spatial, spec.kernel, spec.stride, spec.padding, spec.dilation)
    if any(map(geometry.reads_only_padding, *window)):
        return gradients.zeros_like_input(spec, grad_output)
    low, high = geometry.window_padding_nd(*window)
    dy = lb.pad_or_crop(grad_output, [0, 0, *low], [0, 0, *high])
    w = weight  # [C, F/G, *K]: already the filter layout, output channel first
    stride, dilation = spec.stride, spec.dilation
    acc_type = lb.element_type(gradients.ACCUMULATOR)
    if form == "im2col-matmul":
        acc = forms.im2col_matmul(dy, w, spec.dilation, acc_type, stride, output_channels_first=True)
        return lb.convert(acc, lb.element_type(spec.dtype))
    if form == "weight-first-gemm":
        return _transposed_one_tap_gemm(spec, dy, w)
    if form == "windowless-conv":
        acc = forms.windowless_grouped_conv(dy, w, groups, spec.input_spatial, stride, dilation, spec.dtype, acc_type,
                                            widened=plan.grad_input.widened_windowless)
    else:
        acc = forms.grouped_conv(dy, w, groups, spec.input_spatial, stride, dilation, acc_type)
    return lb.convert(acc, lb.element_type(spec.dtype))


def _transposed_one_tap_gemm(spec: ConvBackwardSpec, dy: ir.Value, weight: ir.Value) -> ir.Value:
    """dx[n,(g,)c,i] = sum_f w[(g,)c,f] * dy[n,(g,)f,i*s] for a transposed
    1x1 kernel (dy padded for those reads): every stride-th element of dy
    copied, then one GEMM over flat positions with the weight, already
    [c, f], first (`contraction_forms.weight_first_gemm`, the operand order
    IREE 3.13's CUDA code computes right in f16)."""
    r, groups = spec.spatial_rank, spec.groups
    if any(s > 1 for s in spec.stride):
        source = lb.subsample(dy, spec.stride, spec.input_spatial, lb.element_type(spec.dtype))
    else:
        source = lb.extract(dy, [0] * (2 + r), [lb.sizes_of(dy)[0], spec.out_channels, *spec.input_spatial])
    source = forms.collapse_range(source, 2, 2 + r)
    taps = forms.collapse_range(weight, 1, 2 + r)
    channels = [spec.in_channels]
    if groups > 1:
        channels = [groups, spec.in_channels_per_group]
        source = lb.expand_dim(source, 1, (groups, spec.out_channels_per_group))
        taps = lb.expand_dim(taps, 0, tuple(channels))
    acc_type = lb.element_type(gradients.ACCUMULATOR)
    init = lb.zeros([lb.sizes_of(dy)[0], *channels, math.prod(spec.input_spatial)], acc_type)
    acc = forms.weight_first_gemm(taps, source, init)
    if groups > 1:
        acc = lb.collapse_dims(acc, 1)
    return lb.convert(forms.expand_trailing(acc, list(spec.input_spatial)), lb.element_type(spec.dtype))
