"""Validated description of one aten.convolution_backward call.

Pure Python (no torch, no MLIR): the functional API builds it from torch
tensors and the rewrite pattern from IR types, so both refuse the same bad
input with the same message before anything is compiled.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Optional, Sequence

from iree_bwdconv import geometry
from iree_bwdconv.errors import InvalidArgumentError, UnsupportedDtypeError

SUPPORTED_DTYPES = ("f32", "f16", "bf16")
MIN_SPATIAL_RANK, MAX_SPATIAL_RANK = 1, 3

Shape = tuple[Optional[int], ...]  # None marks a dynamic size (batch only)


@dataclass(frozen=True)
class ConvBackwardSpec:
    """Shapes and arguments of a convolution_backward, checked for consistency.

    For transposed=False the weight is `[F, C/G, *K]`; for transposed=True it
    is `[C, F/G, *K]`. Here C is always input's channels and F grad_output's.
    """

    grad_output_shape: Shape
    input_shape: Shape
    weight_shape: tuple[int, ...]
    dtype: str
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    transposed: bool
    output_padding: tuple[int, ...]
    groups: int
    output_mask: tuple[bool, bool, bool]

    @property
    def spatial_rank(self) -> int:
        return len(self.weight_shape) - 2

    @property
    def batch(self) -> Optional[int]:
        return self.input_shape[0]

    @property
    def in_channels(self) -> int:
        return self.input_shape[1]  # type: ignore[return-value]

    @property
    def out_channels(self) -> int:
        return self.grad_output_shape[1]  # type: ignore[return-value]

    @property
    def in_channels_per_group(self) -> int:
        return self.in_channels // self.groups

    @property
    def out_channels_per_group(self) -> int:
        return self.out_channels // self.groups

    @property
    def kernel(self) -> tuple[int, ...]:
        return self.weight_shape[2:]

    @property
    def input_spatial(self) -> tuple[int, ...]:
        return self.input_shape[2:]  # type: ignore[return-value]

    @property
    def output_spatial(self) -> tuple[int, ...]:
        return self.grad_output_shape[2:]  # type: ignore[return-value]

    @property
    def dynamic_batch(self) -> bool:
        return self.batch is None

    def per_dim(self) -> list[tuple[int, int, int, int, int]]:
        """(input size, kernel, stride, padding, dilation) of each spatial dim,
        in the argument order of geometry's per-dim functions."""
        return list(zip(self.input_spatial, self.kernel, self.stride, self.padding, self.dilation))


def _is_bool(value: object) -> bool:
    """Python's bool or numpy's."""
    return isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"))


def strict_int(name: str, value: object) -> int:
    """`value` as an int, where eager PyTorch takes it as one: a Python or
    numpy integer, or an integer tensor of one element (anything with
    `__index__`); never a bool, a float or a string."""
    if _is_bool(value):
        raise InvalidArgumentError(name, value, "expected an int, got a bool")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidArgumentError(name, value, f"expected an int, got {type(value).__name__}") from None


def strict_bool(name: str, value: object) -> bool:
    """`value` as a bool, where eager PyTorch takes it as one: Python's or
    numpy's bool, or the integer 0 or 1; never a string (eager refuses
    "False", which bool() would take as True)."""
    if _is_bool(value):
        return bool(value)
    if not isinstance(value, (str, bytes, float)) and hasattr(value, "__index__") and operator.index(value) in (0, 1):
        return bool(operator.index(value))
    raise InvalidArgumentError(name, value, f"expected a bool, got {type(value).__name__}")


def _expand(name: str, value: Sequence[int], rank: int) -> tuple[int, ...]:
    """Accept one value per spatial dim, or a single value for all of them
    (as PyTorch's convolution does); anything else is an error."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InvalidArgumentError(name, value, "expected a list of ints")
    items = tuple(strict_int(name, v) for v in value)
    if len(items) == 1 and rank > 1:
        items = items * rank
    if len(items) != rank:
        raise InvalidArgumentError(
            name, list(value), f"expected {rank} values, one per spatial dim, got {len(items)}"
        )
    return items


def _check_shape(name: str, shape: Shape, rank: int, dynamic_batch_ok: bool) -> None:
    if len(shape) != rank:
        raise InvalidArgumentError(
            f"{name}.shape", list(shape), f"expected rank {rank} like weight"
        )
    for axis, size in enumerate(shape):
        if size is None and not (axis == 0 and dynamic_batch_ok):
            raise InvalidArgumentError(
                f"{name}.shape", list(shape), f"dim {axis} is dynamic; only the batch dim may be"
            )
        if size is not None and size <= 0:
            raise InvalidArgumentError(f"{name}.shape", list(shape), f"dim {axis} is empty")


def make_spec(
    grad_output_shape: Shape,
    input_shape: Shape,
    weight_shape: Shape,
    dtypes: dict[str, str],
    bias_sizes: Optional[Sequence[int]],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
) -> ConvBackwardSpec:
    """Check every argument and return the spec; raise InvalidArgumentError
    (or UnsupportedDtypeError) naming the first bad argument otherwise."""
    for name, dtype in dtypes.items():
        if dtype not in SUPPORTED_DTYPES:
            raise UnsupportedDtypeError(
                f"{name}.dtype", dtype, f"supported dtypes are {', '.join(SUPPORTED_DTYPES)}"
            )
    if len(set(dtypes.values())) != 1:
        raise UnsupportedDtypeError("dtypes", dtypes, "grad_output, input and weight must share one dtype")
    dtype = next(iter(dtypes.values()))
    transposed = strict_bool("transposed", transposed)
    groups = strict_int("groups", groups)

    rank = len(weight_shape)
    if not MIN_SPATIAL_RANK + 2 <= rank <= MAX_SPATIAL_RANK + 2:
        raise InvalidArgumentError(
            "weight.shape", list(weight_shape), "expected 1, 2 or 3 spatial dims (rank 3 to 5)"
        )
    _check_shape("weight", weight_shape, rank, dynamic_batch_ok=False)
    _check_shape("input", input_shape, rank, dynamic_batch_ok=True)
    _check_shape("grad_output", grad_output_shape, rank, dynamic_batch_ok=True)
    spatial = rank - 2

    stride_t = _expand("stride", stride, spatial)
    padding_t = _expand("padding", padding, spatial)
    dilation_t = _expand("dilation", dilation, spatial)
    output_padding_t = _expand("output_padding", output_padding, spatial)
    if any(s < 1 for s in stride_t):
        raise InvalidArgumentError("stride", list(stride), "must be >= 1")
    if any(p < 0 for p in padding_t):
        raise InvalidArgumentError("padding", list(padding), "must be >= 0")
    if any(d < 1 for d in dilation_t):
        raise InvalidArgumentError("dilation", list(dilation), "must be >= 1")
    if any(p < 0 for p in output_padding_t):
        raise InvalidArgumentError("output_padding", list(output_padding), "must be >= 0")
    if not transposed and any(output_padding_t):
        raise InvalidArgumentError(
            "output_padding", list(output_padding), "must be 0 when transposed=False"
        )
    if transposed:
        for op_, s, d in zip(output_padding_t, stride_t, dilation_t):
            if op_ >= max(s, d):
                raise InvalidArgumentError(
                    "output_padding",
                    list(output_padding),
                    "must be smaller than max(stride, dilation) in every dim",
                )

    if isinstance(output_mask, (str, bytes)) or not hasattr(output_mask, "__len__") or len(output_mask) != 3:
        raise InvalidArgumentError("output_mask", output_mask, "expected 3 bools")
    mask = tuple(strict_bool("output_mask", m) for m in output_mask)
    if groups < 1:
        raise InvalidArgumentError("groups", groups, "must be a positive int")

    batch, in_channels = input_shape[0], input_shape[1]
    out_batch, out_channels = grad_output_shape[0], grad_output_shape[1]
    if batch != out_batch:
        raise InvalidArgumentError(
            "grad_output.shape", list(grad_output_shape), f"batch differs from input's {batch}"
        )
    if in_channels % groups:
        raise InvalidArgumentError("groups", groups, f"does not divide input channels {in_channels}")
    if out_channels % groups:
        raise InvalidArgumentError(
            "groups", groups, f"does not divide grad_output channels {out_channels}"
        )
    kernel = tuple(int(k) for k in weight_shape[2:])  # type: ignore[arg-type]
    if transposed:
        expected_weight = (in_channels, out_channels // groups, *kernel)
    else:
        expected_weight = (out_channels, in_channels // groups, *kernel)
    if tuple(weight_shape) != expected_weight:
        layout = "[C, F/groups, *K]" if transposed else "[F, C/groups, *K]"
        raise InvalidArgumentError(
            "weight.shape",
            list(weight_shape),
            f"expected {list(expected_weight)} ({layout}) for input {list(input_shape)}, "
            f"grad_output {list(grad_output_shape)}, groups={groups}",
        )

    in_spatial = tuple(input_shape[2:])
    if transposed:
        expected_out = geometry.transposed_output_size_nd(
            in_spatial, kernel, stride_t, padding_t, dilation_t, output_padding_t  # type: ignore[arg-type]
        )
    else:
        expected_out = geometry.conv_output_size_nd(
            in_spatial, kernel, stride_t, padding_t, dilation_t  # type: ignore[arg-type]
        )
    if any(o <= 0 for o in expected_out):
        raise InvalidArgumentError(
            "input.shape",
            list(input_shape),
            f"the convolution output would be empty ({list(expected_out)}) with kernel "
            f"{list(kernel)}, stride {list(stride_t)}, padding {list(padding_t)}, "
            f"dilation {list(dilation_t)}",
        )
    if tuple(grad_output_shape[2:]) != expected_out:
        raise InvalidArgumentError(
            "grad_output.shape",
            list(grad_output_shape),
            f"spatial sizes must be {list(expected_out)}, the convolution's output sizes",
        )
    # Autograd's formula passes [0] for a convolution without bias, and then
    # never asks for grad_bias.
    if bias_sizes is not None:
        if isinstance(bias_sizes, (str, bytes)) or not hasattr(bias_sizes, "__iter__"):
            raise InvalidArgumentError("bias_sizes", bias_sizes, "expected a list of ints or None")
        bias_sizes = [strict_int("bias_sizes", size) for size in bias_sizes]
    no_bias = bias_sizes is not None and list(bias_sizes) == [0] and not mask[2]
    if bias_sizes is not None and not no_bias and list(bias_sizes) != [out_channels]:
        raise InvalidArgumentError(
            "bias_sizes", list(bias_sizes),
            f"expected [{out_channels}] or None ([0] only when grad_bias is not asked for)",
        )

    return ConvBackwardSpec(
        grad_output_shape=tuple(grad_output_shape),
        input_shape=tuple(input_shape),
        weight_shape=tuple(int(s) for s in weight_shape),  # type: ignore[arg-type]
        dtype=dtype,
        stride=stride_t,
        padding=padding_t,
        dilation=dilation_t,
        transposed=bool(transposed),
        output_padding=output_padding_t,
        groups=groups,
        output_mask=mask,  # type: ignore[arg-type]
    )


def layer_spec(batch: Optional[int], in_channels: int, out_channels: int, sizes: Sequence[int],
               kernel: Sequence[int], stride: Sequence[int] = (), padding: Sequence[int] = (),
               dilation: Sequence[int] = (), groups: int = 1, dtype: str = "f32", transposed: bool = False,
               output_padding: Sequence[int] = (), output_mask: Sequence[bool] = (True, True, True)) -> ConvBackwardSpec:
    """The spec of the convolution_backward of one layer, described as a
    user describes a layer: `in_channels` and `sizes` are its input's, and
    grad_output's sizes follow (a stride, padding or dilation left empty is
    1, 0 or 1 in every dim). `batch` None is a dynamic batch."""
    rank = len(sizes)
    stride, dilation = tuple(stride) or (1,) * rank, tuple(dilation) or (1,) * rank
    padding, output_padding = tuple(padding) or (0,) * rank, tuple(output_padding) or (0,) * rank
    if len(kernel) != rank:
        raise InvalidArgumentError("kernel", list(kernel), f"expected {rank} sizes, one per spatial dim")
    if transposed:
        out = [geometry.transposed_output_size(*dim) for dim in zip(sizes, kernel, stride, padding, dilation,
                                                                      output_padding)]
        weight = (in_channels, out_channels // groups, *kernel)
    else:
        out = [geometry.conv_output_size(*dim) for dim in zip(sizes, kernel, stride, padding, dilation)]
        weight = (out_channels, in_channels // groups, *kernel)
    return make_spec((batch, out_channels, *out), (batch, in_channels, *sizes), weight,
                     {"grad_output": dtype, "input": dtype, "weight": dtype}, None, stride, padding, dilation,
                     transposed, output_padding, groups, output_mask)
