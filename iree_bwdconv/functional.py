"""`convolution_backward` with the signature and results of
`torch.ops.aten.convolution_backward`, computed through our lowering, IREE
and the IREE runtime. Modules are compiled once per configuration."""

from __future__ import annotations

import functools
import threading
from typing import Optional, Sequence, Union

import torch
from torch._subclasses.fake_tensor import FakeTensor

from iree_bwdconv.compiler import compile_fallback, pipeline
from iree_bwdconv import options as lowering_options
from iree_bwdconv.errors import InvalidArgumentError
from iree_bwdconv import lowering
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.run.runtime import LoadedModule
from iree_bwdconv.spec import ConvBackwardSpec, make_spec, strict_bool

GRAD_INPUT_FORM_VARIABLE = lowering_options.GRAD_INPUT_FORM_VARIABLE
_DTYPE_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
_cache: dict[tuple, LoadedModule] = {}
_cache_lock = threading.Lock()
_export_lock = threading.Lock()


def dtype_name(dtype: torch.dtype) -> str:
    return _DTYPE_NAMES.get(dtype, str(dtype).removeprefix("torch."))


def compile(mlir: str, target: str = "cpu") -> bytes:  # noqa: A001 - the public name
    """Compile linalg-on-tensors MLIR text to a .vmfb for "cpu", "gfx942" or "cuda"."""
    return pipeline.iree_compile(mlir, target, repro_dir=lowering_options.repro_dir_from_environment())


class ConvolutionBackward(torch.nn.Module):
    """aten.convolution_backward with its arguments fixed, returning only the
    gradients `output_mask` asks for (the IREE calling convention has no
    None results)."""

    def __init__(self, spec: ConvBackwardSpec, bias_sizes: Optional[Sequence[int]]) -> None:
        super().__init__()
        self.spec = spec
        # PyTorch's meta function needs the sizes to shape grad_bias.
        if bias_sizes is None and spec.output_mask[2]:
            bias_sizes = [spec.out_channels]
        self.bias_sizes = None if bias_sizes is None else list(bias_sizes)

    def forward(self, grad_output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor):
        s = self.spec
        grads = torch.ops.aten.convolution_backward(
            grad_output, input, weight, self.bias_sizes, list(s.stride), list(s.padding),
            list(s.dilation), s.transposed, list(s.output_padding), s.groups, list(s.output_mask),
        )
        return tuple(g for g, wanted in zip(grads, s.output_mask) if wanted)


def _check_tensor(name: str, value: object) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise InvalidArgumentError(name, type(value).__name__, "expected a torch.Tensor")
    return value


def _check_has_values(name: str, value: torch.Tensor) -> None:
    """A meta or fake tensor describes a configuration (`spec_of` takes
    them) but holds nothing to compute with."""
    if value.device.type == "meta" or isinstance(value, FakeTensor):
        raise InvalidArgumentError(f"{name}.device", value.device.type,
                                   "a meta or fake tensor holds no values to compute with")


def spec_of(
    grad_output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor, bias_sizes, stride,
    padding, dilation, transposed, output_padding, groups, output_mask, dynamic_batch: bool = False,
) -> ConvBackwardSpec:
    """Validate the call (before anything compiles) and describe it."""
    tensors = {"grad_output": grad_output, "input": input, "weight": weight}
    for name, value in tensors.items():
        _check_tensor(name, value)
    go_shape, in_shape = tuple(grad_output.shape), tuple(input.shape)
    if dynamic_batch and go_shape[:1] != in_shape[:1]:
        raise InvalidArgumentError(
            "grad_output.shape", list(go_shape), f"batch differs from input's {list(in_shape[:1])}"
        )
    if dynamic_batch:
        go_shape, in_shape = (None, *go_shape[1:]), (None, *in_shape[1:])
    return make_spec(
        grad_output_shape=go_shape,
        input_shape=in_shape,
        weight_shape=tuple(weight.shape),
        dtypes={name: dtype_name(t.dtype) for name, t in tensors.items()},
        bias_sizes=bias_sizes, stride=stride, padding=padding, dilation=dilation,
        transposed=transposed, output_padding=output_padding, groups=groups,
        output_mask=output_mask,
    )


_TORCH_DTYPES = {name: dtype for dtype, name in _DTYPE_NAMES.items()}


def options_for(target: Union[str, LoweringOptions]) -> LoweringOptions:
    """The options a target's name asks for here, at an edge: that target
    and the environment's settings (`options.from_environment`)."""
    return target if isinstance(target, LoweringOptions) else lowering_options.from_environment(target)


def lowered(spec: ConvBackwardSpec, bias_sizes: Optional[tuple[int, ...]] = None,
            target: Union[str, LoweringOptions] = "cpu") -> str:
    """Linalg MLIR of the configuration as `target` asks for it (a target's
    name, or the options), traced on zeros of its shapes. One thread at a
    time: torch.export is not thread-safe (four threads' first calls at
    once failed inside it, and it saves and restores
    torch.backends.mkldnn.enabled around each export, so that overlapping
    exports left it off for the whole process)."""
    options = options_for(target)
    with _export_lock:
        return _lowered(spec, bias_sizes, options)


def zero_examples(spec: ConvBackwardSpec) -> list[torch.Tensor]:
    """grad_output, input and weight as zeros of the spec's shapes, to trace
    on; torch.export specializes a size-1 dim, so a dynamic batch is 2."""
    return [torch.zeros([2 if size is None else size for size in shape], dtype=_TORCH_DTYPES[spec.dtype])
            for shape in (spec.grad_output_shape, spec.input_shape, spec.weight_shape)]


@functools.lru_cache(maxsize=256)
def _imported(spec: ConvBackwardSpec, bias_sizes: Optional[tuple[int, ...]]) -> str:
    """The configuration traced and imported as raw torch-dialect IR, once
    for every target and set of options: torch.export takes 0.2-0.9 s a
    layer, twenty times the lowering that follows it."""
    dynamic_shapes = None
    if spec.dynamic_batch:
        dim = torch.export.Dim("batch")
        dynamic_shapes = ({0: dim}, {0: dim}, None)
    module = lowering.import_module(ConvolutionBackward(spec, bias_sizes), *zero_examples(spec),
                                    dynamic_shapes=dynamic_shapes)
    return str(module)


@functools.lru_cache(maxsize=256)
def _lowered(spec: ConvBackwardSpec, bias_sizes: Optional[tuple[int, ...]], options: LoweringOptions) -> str:
    return lowering.lower_torch(lowering.parse_torch_mlir(_imported(spec, bias_sizes)), "linalg", options)


def clear_cache() -> None:
    """Forget compiled modules and lowered IR (whose patterns read module
    constants that tests change)."""
    _lowered.cache_clear()
    with _cache_lock:
        _cache.clear()


def compiled_vmfb(spec: ConvBackwardSpec, bias_sizes: Optional[tuple[int, ...]],
                  target: Union[str, LoweringOptions]) -> bytes:
    """The configuration compiled for `target`, in the plain forms where
    the usual ones fail to compile there (`compile_fallback`)."""
    return compile_fallback.compile_lowering(lambda forms: lowered(spec, bias_sizes, forms), options_for(target))


def compiled_module(spec: ConvBackwardSpec, bias_sizes: Optional[tuple[int, ...]],
                    target: Union[str, LoweringOptions]) -> LoadedModule:
    """The loaded module for `spec` on `target`, compiled on first use."""
    options = options_for(target)
    key = (spec, bias_sizes, options)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    loaded = LoadedModule(compiled_vmfb(spec, bias_sizes, options), options.target,
                          cuda_cache_bytes=options.cuda_cache_bytes)
    with _cache_lock:
        return _cache.setdefault(key, loaded)


def convolution_backward(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    bias_sizes: Optional[Sequence[int]],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
    *,
    target: str = "cpu",
    dynamic_batch: bool = False,
) -> tuple[Optional[torch.Tensor], Optional[torch.Tensor], Optional[torch.Tensor]]:
    """Same arguments and results as torch.ops.aten.convolution_backward.

    With dynamic_batch=True one module, compiled with a dynamic batch dim,
    serves every batch size of the configuration.
    """
    if target not in pipeline.TARGET_FLAGS:
        raise InvalidArgumentError("target", target, f"expected one of {', '.join(pipeline.TARGET_FLAGS)}")
    spec = spec_of(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                   output_padding, groups, output_mask, strict_bool("dynamic_batch", dynamic_batch))
    for name, value in (("grad_output", grad_output), ("input", input), ("weight", weight)):
        _check_has_values(name, value)
    if not any(spec.output_mask):
        return None, None, None
    sizes = None if bias_sizes is None else tuple(int(b) for b in bias_sizes)
    loaded = compiled_module(spec, sizes, lowering_options.from_environment(target))
    outputs = iter(loaded(grad_output, input, weight))
    return tuple(next(outputs) if wanted else None for wanted in spec.output_mask)  # type: ignore[return-value]
