"""Reading torch-dialect IR and crossing between torch value tensors and
builtin tensors, for the rewrite patterns (torch-mlir's bindings)."""

from __future__ import annotations

import re
from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d

from iree_bwdconv import geometry
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv.spec import ConvBackwardSpec, Shape, make_spec


class PatternMismatch(Exception):
    """The op is not in a form a pattern handles; the message says why."""


_VTENSOR = re.compile(r"^!torch\.vtensor<\[([^\]]*)\],(\w+)>$")
_TORCH_DTYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16"}


def vtensor_shape_and_dtype(type_: ir.Type) -> tuple[Shape, str]:
    """Shape (None for `?`) and element type name of a `!torch.vtensor`.

    The torch types have no Python accessors in the bindings, so the type's
    own printed form is read; anything but a ranked value tensor is refused.
    """
    match = _VTENSOR.match(str(type_))
    if not match:
        raise PatternMismatch(f"operand type {type_} is not a ranked value tensor")
    dims_text, dtype = match.groups()
    shape = tuple(None if d == "?" else int(d) for d in dims_text.split(",") if d)
    return shape, dtype


def _defining_op(value: ir.Value, what: str) -> ir.Operation:
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        raise PatternMismatch(f"{what} is a block argument, not a constant")
    return owner.operation if isinstance(owner, ir.OpView) else owner


def constant_int(value: ir.Value, what: str) -> int:
    op = _defining_op(value, what)
    if op.name != "torch.constant.int":
        raise PatternMismatch(f"{what} is not a torch.constant.int (found {op.name})")
    return ir.IntegerAttr(op.attributes["value"]).value


def constant_bool(value: ir.Value, what: str) -> bool:
    op = _defining_op(value, what)
    if op.name != "torch.constant.bool":
        raise PatternMismatch(f"{what} is not a torch.constant.bool (found {op.name})")
    return ir.BoolAttr(op.attributes["value"]).value


def is_none(value: ir.Value) -> bool:
    return str(value.type) == "!torch.none"


def constant_list(value: ir.Value, what: str, read) -> list:
    op = _defining_op(value, what)
    if op.name != "torch.prim.ListConstruct":
        raise PatternMismatch(f"{what} is not a constant list (found {op.name})")
    return [read(v, f"{what}[{i}]") for i, v in enumerate(op.operands)]


def read_convolution_backward(op: ir.Operation) -> ConvBackwardSpec:
    """The op's spec, or PatternMismatch / InvalidArgumentError saying why not."""
    (grad_output, input_, weight, bias_sizes, stride, padding, dilation,
     transposed, output_padding, groups, output_mask) = op.operands
    types = {
        "grad_output": vtensor_shape_and_dtype(grad_output.type),
        "input": vtensor_shape_and_dtype(input_.type),
        "weight": vtensor_shape_and_dtype(weight.type),
    }
    dtypes = {name: _TORCH_DTYPES.get(dtype, dtype) for name, (_, dtype) in types.items()}
    return make_spec(
        grad_output_shape=types["grad_output"][0],
        input_shape=types["input"][0],
        weight_shape=types["weight"][0],
        dtypes=dtypes,
        bias_sizes=None if is_none(bias_sizes) else constant_list(bias_sizes, "bias_sizes", constant_int),
        stride=constant_list(stride, "stride", constant_int),
        padding=constant_list(padding, "padding", constant_int),
        dilation=constant_list(dilation, "dilation", constant_int),
        transposed=constant_bool(transposed, "transposed"),
        output_padding=constant_list(output_padding, "output_padding", constant_int),
        groups=constant_int(groups, "groups"),
        output_mask=constant_list(output_mask, "output_mask", constant_bool),
    )


def to_builtin(value: ir.Value) -> ir.Value:
    """`torch_c.to_builtin_tensor`: the boundary TorchToLinalg also uses."""
    shape, dtype = vtensor_shape_and_dtype(value.type)
    type_ = lb.tensor_type([lb.dynamic() if s is None else s for s in shape], lb.element_type(dtype))
    return ir.Operation.create("torch_c.to_builtin_tensor", results=[type_], operands=[value]).result


def from_builtin(value: ir.Value, vtensor_type: ir.Type) -> ir.Value:
    return ir.Operation.create(
        "torch_c.from_builtin_tensor", results=[vtensor_type], operands=[value]
    ).result


def none_value() -> ir.Value:
    return torch_d.ConstantNoneOp().result


def result_type(op: ir.Operation, index: int) -> Optional[ir.Type]:
    """The op's result type at `index`, or None where it is `!torch.none`."""
    type_ = op.results[index].type
    return None if str(type_) == "!torch.none" else type_


def transposed_input_padding(spec: ConvBackwardSpec, op: ir.Operation) -> list[int]:
    """The zero rows after a transposed convolution's input, per spatial
    dim, that make it `read_transposed_convolution`'s grad_output."""
    x_shape, _ = vtensor_shape_and_dtype(op.operands[0].type)
    return [rows - size for rows, size in zip(spec.grad_output_shape[2:], x_shape[2:])]


def read_transposed_convolution(op: ir.Operation) -> ConvBackwardSpec:
    """The spec of the convolution_backward whose grad_input a transposed
    `aten.convolution` computes: the strided convolution it transposes,
    from its output's shape (input) to its input's (grad_output), with its
    weight as it is ([C_in, C_out/G, *K] is that convolution's [F, C/G, *K]).
    That convolution's grad_output is as long as its output over the
    transposed one's output: the input, and where output_padding reaches a
    stride (allowed below the dilation) `output_padding // stride` rows
    more, zeros that the caller pads the input with
    (`transposed_input_padding`). PatternMismatch or InvalidArgumentError
    where it is not one."""
    input_, weight, _, stride, padding, dilation, transposed, output_padding, groups = op.operands
    if not constant_bool(transposed, "transposed"):
        raise PatternMismatch("transposed=False: not a transposed convolution")
    (x_shape, x_dtype), (w_shape, w_dtype) = vtensor_shape_and_dtype(input_.type), vtensor_shape_and_dtype(weight.type)
    y_shape, _ = vtensor_shape_and_dtype(op.results[0].type)
    rank = len(w_shape) - 2
    steps = constant_list(stride, "stride", constant_int)
    pads = constant_list(padding, "padding", constant_int)
    dilations = constant_list(dilation, "dilation", constant_int)
    extra = constant_list(output_padding, "output_padding", constant_int)
    if any(size is None for size in (*x_shape[1:], *y_shape[1:])):
        raise PatternMismatch("dynamic channel or spatial sizes")
    if tuple(y_shape[2:]) != geometry.transposed_output_size_nd(x_shape[2:], w_shape[2:], steps, pads, dilations,
                                                                   extra):
        raise PatternMismatch(f"output sizes {list(y_shape[2:])} are not the transposed convolution's")
    rows = geometry.conv_output_size_nd(y_shape[2:], w_shape[2:], steps, pads, dilations)
    return make_spec(
        grad_output_shape=(*x_shape[:2], *rows),
        input_shape=(x_shape[0], *y_shape[1:]),
        weight_shape=w_shape,
        dtypes={"grad_output": _TORCH_DTYPES.get(x_dtype, x_dtype), "input": _TORCH_DTYPES.get(x_dtype, x_dtype),
                "weight": _TORCH_DTYPES.get(w_dtype, w_dtype)},
        bias_sizes=None, stride=steps, padding=pads, dilation=dilations, transposed=False,
        output_padding=[0] * rank, groups=constant_int(groups, "groups"), output_mask=[True, False, False])
