"""aten.convolution (the forward) with groups, on the CPU: one ungrouped
convolution per group, side by side (`group_split`).

Not a gradient, but it runs in every training step beside ours: torch-mlir
lowers a grouped convolution to `linalg.conv_2d_ngchw_gfchw`, which IREE
3.13's CPU code ran 4x-20x slower than the groups sliced apart
(`benchmarks/grouped_cpu.py`; the demo CNN's 4-group 3x3 layer took 0.49
ms of a 1.4 ms forward graph). The contraction is `contraction_forms.conv`
over the padded input, in f32 for every dtype, plus the bias; every other
convolution is left to torch-mlir.
"""

from __future__ import annotations

from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg
from torch_mlir.rewrite import PatternRewriter

from iree_bwdconv import contraction_forms as forms
from iree_bwdconv import gradients, group_split, targets, torch_ir
from iree_bwdconv import linalg_builders as lb
from iree_bwdconv.linalg_builders import PARALLEL
from iree_bwdconv.spec import SUPPORTED_DTYPES

ROOT = "torch.aten.convolution"


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


def rewrite(op: ir.Operation, rewriter: PatternRewriter) -> Optional[str]:
    """Replace the op; return None when rewritten, else the reason it was not."""
    input_, weight, bias, stride, padding, dilation, transposed, _, groups = op.operands
    try:
        groups_ = torch_ir.constant_int(groups, "groups")
        (_, c, *spatial), dtype = torch_ir.vtensor_shape_and_dtype(input_.type)
        (f, *_), _ = torch_ir.vtensor_shape_and_dtype(weight.type)
        (_, _, *out_spatial), _ = torch_ir.vtensor_shape_and_dtype(op.results[0].type)
        if torch_ir.constant_bool(transposed, "transposed"):
            return "transposed=True: torch-mlir's lowering keeps it"
        strides = torch_ir.constant_list(stride, "stride", torch_ir.constant_int)
        pads = torch_ir.constant_list(padding, "padding", torch_ir.constant_int)
        dilations = torch_ir.constant_list(dilation, "dilation", torch_ir.constant_int)
    except torch_ir.PatternMismatch as err:
        return str(err)
    if targets.current() != "cpu":
        return f"target {targets.current()}: only the CPU's grouped convolutions are split"
    if not group_split.applies(groups_, c):
        return (f"groups={groups_} with {c} input channels: split only with at least "
                f"{group_split.MIN_CHANNELS_PER_GROUP} channels per group")
    if dtype not in SUPPORTED_DTYPES:
        return f"dtype {dtype}: not one of {', '.join(SUPPORTED_DTYPES)}"
    if any(s is None for s in (c, *spatial, *out_spatial)) or min(pads) < 0:
        return "dynamic channel or spatial sizes, or negative padding"
    rank = len(spatial)
    if not (len(strides) == len(pads) == len(dilations) == rank):
        return "stride, padding and dilation do not give one value per spatial dim"

    with rewriter.ip, op.location:
        x = lb.pad(torch_ir.to_builtin(input_), [0, 0, *pads], [0, 0, *pads])
        w = torch_ir.to_builtin(weight)
        acc = lb.element_type(gradients.ACCUMULATOR)
        batch = lb.sizes_of(x)[0]
        c_g, f_g = c // groups_, f // groups_
        parts = []
        for g in range(groups_):
            init = lb.zeros([batch, f_g, *out_spatial], acc)
            parts.append(forms.conv(group_split.channel_slice(x, 1, g, c_g),
                                    group_split.channel_slice(w, 0, g, f_g), init, strides, dilations))
        out = group_split.concat(parts, 1)
        if not torch_ir.is_none(bias):
            out = _add_bias(out, torch_ir.to_builtin(bias))
        out = lb.convert(out, lb.element_type(dtype))
        rewriter.replace_op(op, [torch_ir.from_builtin(out, op.results[0].type)])
    return None
