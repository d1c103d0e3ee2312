"""aten.convolution (the forward) where its plan (`plan.forward`) takes it:
on the CPU, in the forms IREE's CPU code runs best: groups sliced apart (`group_split`), and each group's
convolution an im2col gather and the named matmul where that wins.

Not a gradient, but every training step runs it beside ours. torch-mlir
lowers it to a named convolution, which IREE 3.13's CPU code ran 3x-17x
slower than the groups sliced apart and, on strided, 1x1 and wide (128+
channel) layers, 1.1x-14x slower than im2col + matmul
(`benchmarks/forward_cpu.py`; docs/performance-journal.md, "Forward and grouped
convolutions on the CPU"). Depthwise and transposed convolutions, and
every convolution for GPU targets but 1x1 kernels in f16/bf16 and
ungrouped strided ones in f32, are left to torch-mlir: IREE 3.13's CUDA
code computed torch-mlir's named 1x1 convolution wrongly in f16 and bf16
on the H100 (largest error 131% of the largest value), where the im2col
matmul here (a transpose and the named matmul, for a 1x1 kernel) was
right (`benchmarks/gpu_check.py`), and ran it 1.7x-6.3x slower in f32
where strided. A wider kernel
whose window slides along no dim (3x1 over 3 rows) is a 1x1 kernel to
IREE, and was as wrong in f16 (105%): it takes the im2col matmul too
(`plan.targets.windowless_half_on_gpu`). Grouped, either is one grouped
convolution over the rows it reads with its positions' loops before its
output channels' (`contraction_forms.windowless_grouped_conv`), in f32 where a group's channels
are off IREE's MMA tile (`plan.targets.widens_windowless`): torch-mlir's named
grouped convolution of them was 117%-135% off in f16, its loops in the
order IREE's MMA code gets wrong (`mma_order`).
A depthwise convolution over 3 spatial dims, which torch-mlir cannot
lower, is ours on every target (`plan.forward.torch_mlir_lowers_none`).
Products accumulate in f32 for every dtype, and the bias is added before
the one rounding.
"""

from __future__ import annotations

from typing import Optional, Sequence

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg
from torch_mlir.rewrite import PatternRewriter

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv.builders import gradients, group_split, torch_ir
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.builders.linalg_builders import PARALLEL
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import ForwardSpec, plan_forward
from iree_bwdconv.spec import SUPPORTED_DTYPES

ROOT = "torch.aten.convolution"


def add_bias(value: ir.Value, bias: ir.Value) -> ir.Value:
    """out[n,f,o...] = value[n,f,o...] + bias[f], in value's element type."""
    rank = ir.RankedTensorType(value.type).rank
    d = lb.dims(rank)
    acc_type = ir.RankedTensorType(value.type).element_type
    maps = [lb.affine_map(rank, d), lb.affine_map(rank, [d[1]]), lb.affine_map(rank, d)]

    @linalg.generic([value, bias], [value], maps, [PARALLEL] * rank)
    def result(a, b, _):
        return arith.addf(a, lb.extend(b, acc_type))

    return result


def _one_group(x: ir.Value, w: ir.Value, out_spatial: Sequence[int],
               strides: Sequence[int], dilations: Sequence[int], gather: bool) -> ir.Value:
    """An ungrouped convolution of the padded input `x` [n, c, ...] with `w`
    [f, c, k...], in f32: an im2col `gather` and the named matmul, or the
    convolution generic."""
    acc = lb.element_type(gradients.ACCUMULATOR)
    if gather:
        return forms.im2col_matmul(x, w, dilations, acc, strides, output_channels_first=True)
    init = lb.zeros([lb.sizes_of(x)[0], lb.sizes_of(w)[0], *out_spatial], acc)
    return forms.conv(x, w, init, strides, dilations)


def forward_spec(op: ir.Operation) -> tuple[Optional[ForwardSpec], Optional[str]]:
    """What the forward's plan reads of the op, or why the op is not one we
    can plan (transposed, not constant, unsupported dtype, dynamic sizes)."""
    input_, weight, _, stride, padding, dilation, transposed, _, groups = op.operands
    try:
        groups_ = torch_ir.constant_int(groups, "groups")
        (_, c, *spatial), dtype = torch_ir.vtensor_shape_and_dtype(input_.type)
        (f, _, *kernel), _ = torch_ir.vtensor_shape_and_dtype(weight.type)
        (_, _, *out_spatial), _ = torch_ir.vtensor_shape_and_dtype(op.results[0].type)
        if torch_ir.constant_bool(transposed, "transposed"):
            return None, "transposed=True: torch-mlir's lowering keeps it"
        strides = torch_ir.constant_list(stride, "stride", torch_ir.constant_int)
        pads = torch_ir.constant_list(padding, "padding", torch_ir.constant_int)
        dilations = torch_ir.constant_list(dilation, "dilation", torch_ir.constant_int)
    except torch_ir.PatternMismatch as err:
        return None, str(err)
    if dtype not in SUPPORTED_DTYPES:
        return None, f"dtype {dtype}: not one of {', '.join(SUPPORTED_DTYPES)}"
    if any(s is None for s in (c, *spatial, *out_spatial)) or min(pads) < 0:
        return None, "dynamic channel or spatial sizes, or negative padding"
    if not (len(strides) == len(pads) == len(dilations) == len(spatial)):
        return None, "stride, padding and dilation do not give one value per spatial dim"
    return ForwardSpec(c, f, tuple(kernel), tuple(strides), groups_, dtype, tuple(out_spatial), tuple(pads),
                       tuple(dilations)), None


def rewrite(op: ir.Operation, rewriter: PatternRewriter, *, options: LoweringOptions) -> Optional[str]:
    """Replace the op where its plan (`plan.forward`) takes it; return None
    when rewritten, else the reason it was not."""
    spec, why_not = forward_spec(op)
    if spec is None:
        return why_not
    plan = plan_forward(spec, options)
    if plan.form is None:
        return plan.why_not
    input_, weight, bias, *_ = op.operands
    pads, strides, dilations = list(spec.padding), list(spec.strides), list(spec.dilation)
    c, f, groups_, dtype = spec.in_channels, spec.out_channels, spec.groups, spec.dtype
    out_spatial = list(spec.output_spatial)

    with rewriter.ip, op.location:
        x = lb.pad(torch_ir.to_builtin(input_), [0, 0, *pads], [0, 0, *pads])
        w = torch_ir.to_builtin(weight)
        c_g, f_g = c // groups_, f // groups_
        if plan.form == "grouped":
            out = forms.grouped_conv(x, w, groups_, out_spatial, strides, dilations,
                                     lb.element_type(gradients.ACCUMULATOR))
        elif plan.form == "windowless-grouped":
            out = forms.windowless_grouped_conv(x, w, groups_, out_spatial, strides, dilations, dtype,
                                                lb.element_type(gradients.ACCUMULATOR), widened=plan.widened)
        else:
            parts = [_one_group(group_split.channel_slice(x, 1, g, c_g), group_split.channel_slice(w, 0, g, f_g),
                                out_spatial, strides, dilations, plan.gather)
                     for g in range(groups_)]
            out = group_split.concat(parts, 1) if groups_ > 1 else parts[0]
        if not torch_ir.is_none(bias):
            out = add_bias(out, torch_ir.to_builtin(bias))
        out = lb.convert(out, lb.element_type(dtype))
        rewriter.replace_op(op, [torch_ir.from_builtin(out, op.results[0].type)])
    return None
