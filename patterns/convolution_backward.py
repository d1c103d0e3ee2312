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

from iree_bwdconv import contraction_forms as forms
from iree_bwdconv import geometry, gradients, replacement, targets
from iree_bwdconv import linalg_builders as lb
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.spec import ConvBackwardSpec

ROOT = "torch.aten.convolution_backward"


def _im2col_matmul_applies(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """Ungrouped, without inserted zeros: an im2col gather and the named
    matmul (`contraction_forms.im2col_matmul`). On the CPU for a 1x1
    kernel at any stride and for stride 1 with 128+ channels: it ran 3x-5x
    faster than the convolution-shaped generic on 1x1 kernels and 0.7x-0.8x
    its time on ResNet-50's c128/c256 3x3 layers; with 64 grad_input
    channels it ran as fast or 1.25x slower (the gather copies the window
    k^2 times for a narrow matmul), and over a zero-inserted grad_output
    (3x3 stride 2) 1.6x slower. In f32 on GPU targets at stride 1 where
    `_weight_as_is_applies` does not (1x1 kernels, fewer than 128
    channels): 0.79x-0.89x the direct form's time on the H100. The named matmul
    keeps its row-major operands, which IREE folds away around a generic
    (docs/performance.md)."""
    if spec.groups != 1:
        return False
    if targets.f32_on_gpu(options.target, spec.dtype):
        return all(s == 1 for s in spec.stride) and not _weight_as_is_applies(spec, options=options)
    one_tap = all(k == 1 for k in spec.kernel)
    wide = all(s == 1 for s in spec.stride) and spec.in_channels >= 128
    return (one_tap or wide) and options.target == "cpu"


F32_WEIGHT_AS_IS_MIN_CHANNELS = 128


def _weight_as_is_applies(spec: ConvBackwardSpec, *, options: LoweringOptions) -> bool:
    """f32 on GPU targets, ungrouped, a kernel larger than 1x1 with 128+
    grad_input channels: the direct form reads the flipped weight as it
    is, [f, c, k] with f the reduction, instead of transposed to [c, f, k].
    IREE's own torch input reaches IREE in that layout (its transpose
    folded into the convolution's map), and in f32 on the H100 it ran
    ResNet-50's c256 14x14 layer 3.6x faster than ours transposed (1.20 ms
    against 4.28) and faster than im2col + matmul on the 3x3 layers with
    128+ channels, slower on c64 and 1x1 ones (docs/performance.md, "f32
    on GPUs")."""
    wide = any(k > 1 for k in spec.kernel) and spec.in_channels >= F32_WEIGHT_AS_IS_MIN_CHANNELS
    return spec.groups == 1 and targets.f32_on_gpu(options.target, spec.dtype) and wide


def grad_input_direct(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value,
                      *, options: LoweringOptions) -> ir.Value:
    """dx[n,g,c,i] = sum_{f,k} buf[n,g,f,i + d*k] * w[g,f,c,K-1-k], in the
    form of a named convolution (`contraction_forms.conv`)."""
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
    windowless = geometry.slides_no_window(spec.kernel, spec.input_spatial)
    if windowless and targets.widens_windowless(options.target, spec.dtype, (c_in, f_out)):
        # Such a window folds to a contraction; IREE's f16 code for it did not finish on channels off its MMA tile.
        f32 = lb.element_type(gradients.ACCUMULATOR)
        buf, w = lb.convert(buf, f32), lb.convert(w, f32)
    if _im2col_matmul_applies(spec, options=options):
        acc = forms.im2col_matmul(buf, w, spec.dilation, lb.element_type(gradients.ACCUMULATOR))
        return lb.convert(acc, lb.element_type(spec.dtype))
    if groups > 1:
        buf, w = lb.expand_dim(buf, 1, (groups, f_out)), lb.expand_dim(w, 0, (groups, f_out))
    lead = 1 if groups > 1 else 0
    as_is = _weight_as_is_applies(spec, options=options)
    if not as_is:  # the named convolution's filter: the kernel reversed, channels swapped, [(g,) c, f, *K]
        w = forms.transpose(w, [*range(lead), lead + 1, lead, *range(lead + 2, lead + 2 + r)])
    channels = [groups, c_in] if groups > 1 else [c_in]
    init = lb.zeros([batch, *channels, *spec.input_spatial], lb.element_type(gradients.ACCUMULATOR))
    acc = forms.conv(buf, w, init, [1] * r, spec.dilation, filter_reduction_first=as_is)
    if groups > 1:
        acc = lb.collapse_dims(acc, 1)
    return lb.convert(acc, lb.element_type(spec.dtype))


def rewrite(op: ir.Operation, rewriter: PatternRewriter, *, options: LoweringOptions) -> Optional[str]:
    """Replace the op; return None when rewritten, else the reason it was not."""
    spec, why_not = replacement.check_convolution_backward(op)
    if spec is None:
        return why_not
    replacement.replace_convolution_backward(op, rewriter, spec, grad_input_direct, options=options)
    return None
