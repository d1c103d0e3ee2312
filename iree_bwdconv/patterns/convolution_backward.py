"""aten.convolution_backward -> linalg.generic, every gradient, any rank.

grad_input of a non-transposed convolution is computed here in the direct
form: grad_output scattered into zeros (stride s leaves s-1 zeros between
elements) and padded, then a stride-1 contraction with the kernel read in
reverse. the kernel is reversed by a gather (`lb.flip`) along its dims of size > 1
only: a 1x1 kernel gets no flip at all.
"""

from __future__ import annotations

from typing import Optional

from torch_mlir import ir
from torch_mlir.rewrite import PatternRewriter

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv import geometry
from iree_bwdconv.builders import gradients, replacement
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import Plan, plan as plan_of
from iree_bwdconv.plan.rules import RULES
from iree_bwdconv.spec import ConvBackwardSpec

ROOT = "torch.aten.convolution_backward"
NAME = "convolution_backward"


def grad_input_direct(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, *, plan: Plan) -> ir.Value:
    """dx[n,g,c,i] = sum_{f,k} buf[n,g,f,i + d*k] * w[g,f,c,K-1-k], in the
    form of a named convolution (`contraction_forms.conv`), or an im2col
    gather and the named matmul, as `plan.grad_input` says."""
    choice = plan.grad_input
    r, groups = spec.spatial_rank, spec.groups
    c_in, f_out = spec.in_channels_per_group, spec.out_channels_per_group
    places = [geometry.scatter_placement(i, o, k, s, p, d)
              for (i, k, s, p, d), o in zip(spec.per_dim(), spec.output_spatial)]
    if any(p.last == p.first for p in places):
        return gradients.zeros_like_input(spec, grad_output)

    batch = lb.sizes_of(grad_output)[0]
    counts = [p.last - p.first for p in places]
    used = lb.extract(grad_output, [0, 0, *(p.first for p in places)], [batch, spec.out_channels, *counts])
    if all(s == 1 for s in spec.stride):
        high = [p.length - p.offset - n for p, n in zip(places, counts)]
        buf = lb.pad(used, [0, 0, *(p.offset for p in places)], [0, 0, *high])
    else:
        zero_buf = lb.zeros([batch, spec.out_channels, *(p.length for p in places)],
                            lb.element_type(spec.dtype))
        buf = lb.insert_strided(used, zero_buf, [0, 0, *(p.offset for p in places)], [1, 1, *spec.stride])
    w = lb.flip(weight, range(2, 2 + r))
    if choice.widened_windowless:
        # Such a window folds to a contraction; IREE's f16 code for it did not finish on channels off its MMA tile.
        f32 = lb.element_type(gradients.ACCUMULATOR)
        buf, w = lb.convert(buf, f32), lb.convert(w, f32)
    if choice.im2col_matmul:
        acc = forms.im2col_matmul(buf, w, spec.dilation, lb.element_type(gradients.ACCUMULATOR))
        return lb.convert(acc, lb.element_type(spec.dtype))
    if groups > 1:
        buf, w = lb.expand_dim(buf, 1, (groups, f_out)), lb.expand_dim(w, 0, (groups, f_out))
    lead = 1 if groups > 1 else 0
    as_is = choice.weight_as_is
    if not as_is:  # the named convolution's filter: the kernel reversed, channels swapped, [(g,) c, f, *K]
        w = forms.transpose(w, [*range(lead), lead + 1, lead, *range(lead + 2, lead + 2 + r)])
    channels = [groups, c_in] if groups > 1 else [c_in]
    init = lb.zeros([batch, *channels, *spec.input_spatial], lb.element_type(gradients.ACCUMULATOR))
    acc = forms.conv(buf, w, init, [1] * r, spec.dilation, filter_reduction_first=as_is)
    if groups > 1:
        acc = lb.collapse_dims(acc, 1)
    return lb.convert(acc, lb.element_type(spec.dtype))


def rewrite(op: ir.Operation, rewriter: PatternRewriter, *, options: LoweringOptions) -> Optional[str]:
    """Replace the op where its plan picks the direct form (or the
    transposed one, or none: grad_input not asked for); return None when
    rewritten, else the reason it was not."""
    spec, why_not = replacement.check_convolution_backward(op)
    if spec is None:
        return why_not
    plan = plan_of(spec, options)
    if plan.pattern != NAME:
        rule = next(name for name in plan.rules if RULES[name].gradient == "grad_input")
        return f"the plan's grad_input form is {plan.grad_input.form} ({rule}: {RULES[rule].says})"
    replacement.replace_convolution_backward(op, rewriter, plan, grad_input_direct)
    return None
