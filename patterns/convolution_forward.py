"""aten.convolution (the forward) on the CPU, in the forms IREE's CPU code
runs best: groups sliced apart (`group_split`), and each group's
convolution an im2col gather and the named matmul where that wins.

Not a gradient, but every training step runs it beside ours. torch-mlir
lowers it to a named convolution, which IREE 3.13's CPU code ran 3x-17x
slower than the groups sliced apart and, on strided, 1x1 and wide (128+
channel) layers, 1.1x-14x slower than im2col + matmul
(`benchmarks/forward_cpu.py`; docs/performance.md, "Forward and grouped
convolutions on the CPU"). Depthwise and transposed convolutions, and
every convolution for GPU targets but 1x1 kernels in f16/bf16 and
ungrouped strided ones in f32, are left to torch-mlir: IREE 3.13's CUDA
code computed torch-mlir's named 1x1 convolution wrongly in f16 and bf16
on the H100 (largest error 131% of the largest value), where the im2col
matmul here (a transpose and the named matmul, for a 1x1 kernel) was
right (`benchmarks/gpu_check.py`), and ran it 1.7x-6.3x slower in f32
where strided (`targets.one_tap_strided_f32_on_gpu`). A wider kernel
whose window slides along no dim (3x1 over 3 rows) is a 1x1 kernel to
IREE, and was as wrong in f16 (105%): it takes the im2col matmul too
(`targets.windowless_half_on_gpu`). Grouped, either is one grouped
convolution over the rows it reads with its positions' loops before its
output channels' (`contraction_forms.windowless_grouped_conv`), in f32 where a group's channels
are off IREE's MMA tile (`targets.widens_windowless`): torch-mlir's named
grouped convolution of them was 117%-135% off in f16, its loops in the
order IREE's MMA code gets wrong (`mma_order`).
A depthwise convolution over 3 spatial dims, which torch-mlir cannot
lower, is ours on every target (`torch_mlir_lowers_none`).
Products accumulate in f32 for every dtype, and the bias is added before
the one rounding.
"""

from __future__ import annotations

from typing import Optional, Sequence

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg
from torch_mlir.rewrite import PatternRewriter

from iree_bwdconv import contraction_forms as forms
from iree_bwdconv import gradients, group_split, targets, torch_ir
from iree_bwdconv import linalg_builders as lb
from iree_bwdconv.linalg_builders import PARALLEL
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.spec import SUPPORTED_DTYPES

ROOT = "torch.aten.convolution"
# From this many input channels (per group) a stride-1 convolution with a
# kernel larger than 1x1 runs faster as im2col + matmul on this CPU (c128
# 28x28: 1.8 ms against 7.0; c64 56x56: 3.7 against 3.2).
IM2COL_MIN_CHANNELS = 128


def im2col_applies(channels: int, kernel: Sequence[int], strides: Sequence[int]) -> bool:
    """im2col + named matmul for a 1x1 kernel, a stride above 1 (the gather
    then reads only the pixels used) or at least IM2COL_MIN_CHANNELS input
    channels; else the convolution generic."""
    return all(k == 1 for k in kernel) or any(s > 1 for s in strides) or channels >= IM2COL_MIN_CHANNELS


def torch_mlir_lowers_none(groups: int, channels: int, rank: int) -> bool:
    """A depthwise convolution (one input channel a group) over 3 spatial
    dims, which torch-mlir's linalg lowering leaves unlowered ("failed to
    legalize operation 'torch.aten.convolution'"), on every target: we
    take it as one grouped convolution."""
    return groups > 1 and channels == groups and rank == 3


def _add_bias(value: ir.Value, bias: ir.Value) -> ir.Value:
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


def rewrite(op: ir.Operation, rewriter: PatternRewriter, *, options: LoweringOptions) -> Optional[str]:
    """Replace the op; return None when rewritten, else the reason it was not."""
    input_, weight, bias, stride, padding, dilation, transposed, _, groups = op.operands
    try:
        groups_ = torch_ir.constant_int(groups, "groups")
        (_, c, *spatial), dtype = torch_ir.vtensor_shape_and_dtype(input_.type)
        (f, _, *kernel), _ = torch_ir.vtensor_shape_and_dtype(weight.type)
        (_, _, *out_spatial), _ = torch_ir.vtensor_shape_and_dtype(op.results[0].type)
        if torch_ir.constant_bool(transposed, "transposed"):
            return "transposed=True: torch-mlir's lowering keeps it"
        strides = torch_ir.constant_list(stride, "stride", torch_ir.constant_int)
        pads = torch_ir.constant_list(padding, "padding", torch_ir.constant_int)
        dilations = torch_ir.constant_list(dilation, "dilation", torch_ir.constant_int)
    except torch_ir.PatternMismatch as err:
        return str(err)
    windowless = targets.windowless_half_on_gpu(options.target, dtype, kernel, out_spatial)
    gpu_forms = windowless or targets.one_tap_strided_f32_on_gpu(options.target, dtype, kernel, strides, groups_)
    unlowered = torch_mlir_lowers_none(groups_, c, len(spatial))
    if options.target != "cpu" and not (gpu_forms or unlowered):
        return (f"target {options.target}: torch-mlir's lowering keeps it (all but f16/bf16 1x1 kernels "
                "or windows that slide along no dim, and ungrouped strided 1x1 kernels in f32)")
    on_gpu = options.target != "cpu"
    if groups_ > 1 and not (on_gpu or unlowered or group_split.applies(groups_, c, options=options)):
        return (f"groups={groups_} with {c} input channels: depthwise, which IREE recognizes; split only "
                f"with at least {group_split.MIN_CHANNELS_PER_GROUP} channels per group")
    if dtype not in SUPPORTED_DTYPES:
        return f"dtype {dtype}: not one of {', '.join(SUPPORTED_DTYPES)}"
    if any(s is None for s in (c, *spatial, *out_spatial)) or min(pads) < 0:
        return "dynamic channel or spatial sizes, or negative padding"
    if not (len(strides) == len(pads) == len(dilations) == len(spatial)):
        return "stride, padding and dilation do not give one value per spatial dim"
    if groups_ == 1 and not (windowless or im2col_applies(c, kernel, strides)):
        return (f"{c} input channels, stride 1, kernel {kernel}: torch-mlir's named convolution is "
                "this form already")

    with rewriter.ip, op.location:
        x = lb.pad(torch_ir.to_builtin(input_), [0, 0, *pads], [0, 0, *pads])
        w = torch_ir.to_builtin(weight)
        c_g, f_g = c // groups_, f // groups_
        gather = windowless or im2col_applies(c_g, kernel, strides)
        if unlowered:
            out = forms.grouped_conv(x, w, groups_, out_spatial, strides, dilations,
                                     lb.element_type(gradients.ACCUMULATOR))
        elif on_gpu and groups_ > 1:
            out = forms.windowless_grouped_conv(x, w, groups_, out_spatial, strides, dilations, dtype,
                                                lb.element_type(gradients.ACCUMULATOR), options=options)
        else:
            parts = [_one_group(group_split.channel_slice(x, 1, g, c_g), group_split.channel_slice(w, 0, g, f_g),
                                out_spatial, strides, dilations, gather)
                     for g in range(groups_)]
            out = group_split.concat(parts, 1) if groups_ > 1 else parts[0]
        if not torch_ir.is_none(bias):
            out = _add_bias(out, torch_ir.to_builtin(bias))
        out = lb.convert(out, lb.element_type(dtype))
        rewriter.replace_op(op, [torch_ir.from_builtin(out, op.results[0].type)])
    return None
