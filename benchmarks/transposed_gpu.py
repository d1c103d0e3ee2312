"""grad_input of transposed convolutions (transposed=True) on the GPU: a
strided forward convolution of grad_output with the weight as it is stored,
[c, f, k] (output channel first, the named convolution's layout). Its
forms, each forced: the lowering's (`auto`), the same convolution reading
the weight transposed to [f, c, k] (reduction first, the layout IREE ran
3.6x faster in f32 for the stride-1 data gradient; docs/performance-journal.md,
"f32 on GPUs"), an im2col gather with the named matmul (ungrouped), and
for grouped 1x1 kernels the weight-first GEMM the ungrouped ones take in
f16/bf16 (`gemm`);
beside upstream (which IREE 3.13 fails to lower for transposed=True),
the named convolution of the same work and torch eager, in f32 and f16, on decoder layers
(DCGAN's, U-Net's). Right (with `check_on_gpu.py`) and how fast (with
`run_on_gpu.py`).

    ./dev python -m benchmarks.transposed_gpu prepare .bench-transposed [NAME-PART]  # here
    python3 benchmarks/check_on_gpu.py .bench-transposed                  # there
    python3 benchmarks/run_on_gpu.py .bench-transposed results.json       # there
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Iterator
from unittest import mock

import torch
from torch_mlir import ir

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv import functional, geometry, lowering
from iree_bwdconv.builders import transposed
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv import options as lowering_options
from iree_bwdconv.plan import Plan
from iree_bwdconv.plan import grad_input as gi
from iree_bwdconv.spec import ConvBackwardSpec

from . import gpu_check, modules

# name, n, c (the transposed convolution's input channels), k (its output
# channels), hw (its input size), kernel, stride, padding, groups
LAYERS = (
    ("T4x4_s2_p1_n32_c512_k256_16", 32, 512, 256, 16, 4, 2, 1, 1),   # DCGAN's generator
    ("T4x4_s2_p1_n32_c256_k128_32", 32, 256, 128, 32, 4, 2, 1, 1),
    ("T4x4_s2_p1_n8_c1024_k512_8", 8, 1024, 512, 8, 4, 2, 1, 1),
    ("T2x2_s2_p0_n16_c512_k256_28", 16, 512, 256, 28, 2, 2, 0, 1),   # U-Net's up-convolutions
    ("T2x2_s2_p0_n16_c128_k64_112", 16, 128, 64, 112, 2, 2, 0, 1),
    ("T3x3_s2_p1_n16_c128_k64_56", 16, 128, 64, 56, 3, 2, 1, 1),
    ("T4x4_s2_p1_n32_c256_k256_32_g8", 32, 256, 256, 32, 4, 2, 1, 8),
    ("T1x1_s2_p0_n16_c512_k256_28", 16, 512, 256, 28, 1, 2, 0, 1),    # 1x1 up-projections: f16/bf16
    ("T1x1_s2_p0_n16_c512_k256_28_g4", 16, 512, 256, 28, 1, 2, 0, 4),  # widened by a strided copy
    ("T1x1_s2_p0_n32_c1024_k512_14", 32, 1024, 512, 14, 1, 2, 0, 1),  # more 1x1 layers for f32's rule
    ("T1x1_s2_p0_n8_c256_k128_56", 8, 256, 128, 56, 1, 2, 0, 1),
    ("T1x1_s2_p0_n16_c64_k32_112", 16, 64, 32, 112, 1, 2, 0, 1),
    ("T1x1_s1_p0_n32_c256_k64_56", 32, 256, 64, 56, 1, 1, 0, 1),
)


def reduction_first(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, *, plan: Plan) -> ir.Value:
    """`transposed.grad_input_transposed` with its filter transposed to
    [(g,) f, c, k] and read reduction first."""
    groups, r = spec.groups, spec.spatial_rank
    c_in, f_out = spec.in_channels_per_group, spec.out_channels_per_group
    window = (spec.output_spatial, spec.input_spatial, spec.kernel, spec.stride, spec.padding, spec.dilation)
    low, high = geometry.window_padding_nd(*window)
    dy = lb.pad_or_crop(grad_output, [0, 0, *low], [0, 0, *high])
    w = lb.expand_dim(weight, 0, (groups, c_in))  # [g, c, f, k]
    w = forms.transpose(w, [0, 2, 1, *range(3, 3 + r)])  # [g, f, c, k]
    if groups == 1:
        w = lb.collapse_dims(w, 0)
    else:
        dy = lb.expand_dim(dy, 1, (groups, f_out))
    channels = [groups, c_in] if groups > 1 else [c_in]
    init = lb.zeros([lb.sizes_of(grad_output)[0], *channels, *spec.input_spatial], lb.element_type("f32"))
    acc = forms.conv(dy, w, init, spec.stride, spec.dilation, filter_reduction_first=True)
    if groups > 1:
        acc = lb.collapse_dims(acc, 1)
    return lb.convert(acc, lb.element_type(spec.dtype))


def im2col_matmul(spec: ConvBackwardSpec, grad_output: ir.Value, weight: ir.Value, *, plan: Plan) -> ir.Value:
    """An im2col gather of grad_output and the named matmul (ungrouped)."""
    window = (spec.output_spatial, spec.input_spatial, spec.kernel, spec.stride, spec.padding, spec.dilation)
    low, high = geometry.window_padding_nd(*window)
    dy = lb.pad_or_crop(grad_output, [0, 0, *low], [0, 0, *high])
    acc = forms.im2col_matmul(dy, weight, spec.dilation, lb.element_type("f32"), spec.stride,
                              output_channels_first=True)
    return lb.convert(acc, lb.element_type(spec.dtype))


class NamedConv(torch.nn.Module):
    """The same work as torch-mlir lowers it: grad_input of a transposed
    convolution is the forward convolution of grad_output (a named
    `linalg.conv_2d_nchw_fchw`, or the grouped one)."""

    def __init__(self, stride: int, padding: int, groups: int) -> None:
        super().__init__()
        self.stride, self.padding, self.groups = stride, padding, groups

    def forward(self, dy, x, w):
        return torch.nn.functional.conv2d(dy, w, None, self.stride, self.padding, 1, self.groups)


# What each variant replaces: the whole grad_input (`transposed`), or (for
# `gemm`, which matters in f16/bf16 1x1 only) the plan's rule that takes the
# weight-first GEMM (`plan.grad_input`), forced on grouped layers too.
VARIANTS = {
    "auto": None,
    "reduction-first": (transposed, "grad_input_transposed", reduction_first),
    "im2col": (transposed, "grad_input_transposed", im2col_matmul),
    "gemm": (gi, "transposed_gemm_applies", lambda spec, tuning: True),
}


@contextlib.contextmanager
def _variant(name: str) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        if VARIANTS[name] is not None:
            stack.enter_context(mock.patch.object(*VARIANTS[name]))
        functional.clear_cache()
        try:
            yield
        finally:
            functional.clear_cache()


def prepare(folder: Path, match: str = "") -> None:
    """Every layer whose name contains `match`, in f32 and f16."""
    folder.mkdir(parents=True, exist_ok=True)
    cases, manifest = [], []
    for dtype in ("f32", "f16"):
        for name, n, c, k, hw, kernel, stride, padding, groups in LAYERS:
            if match not in name:
                continue
            layer = gpu_check.Case(f"{name}_{dtype}", n, c, k, hw, (kernel, kernel), stride, padding, groups,
                                   "auto", dtype, kind="transposed")
            shapes, arguments = gpu_check.shapes(layer), gpu_check.arguments(layer)
            arguments[-1] = [True, False, False]  # grad_input only
            tensors = {key: torch.zeros(size, dtype=gpu_check._DTYPES[dtype]) for key, size in shapes.items()}
            spec = functional.spec_of(tensors["dy"], tensors["x"], tensors["w"], *arguments)
            inputs = ["x".join(map(str, shapes[key])) + f"x{dtype}" for key in ("dy", "x", "w")]
            texts = {}
            for variant in VARIANTS:
                if (variant == "im2col" and groups > 1) or (variant == "gemm" and (groups == 1 or kernel > 1)):
                    continue
                with _variant(variant):
                    texts[variant] = (functional.lowered(spec, target="cuda"), ())
                cases.append(dict(layer._replace(name=f"{layer.name}_{variant}", form=variant)._asdict(),
                                  shapes=shapes, arguments=arguments, known_wrong=None, results=["grad_input"]))
            upstream = lowering.import_module(functional.ConvolutionBackward(spec, None), *tensors.values())
            texts["upstream"] = (str(upstream), modules.UPSTREAM_FLAGS)  # IREE 3.13 refuses it: recorded
            named = NamedConv(stride, padding, groups)
            texts["named-conv"] = (lowering.lower(named, *tensors.values(), target=lowering_options.from_environment("cuda")), ())
            for variant, (text, flags) in texts.items():
                manifest.append(modules.compiled_entry(folder, text, "cuda", flags, shape=layer.name,
                                                       mask="grad_input", variant=variant,
                                                       vmfb=f"{layer.name}_{variant}.vmfb", inputs=inputs))
            eager = dict(n=n, c=c, k=k, hw=[hw, hw], kernel=kernel, stride=stride, padding=padding, groups=groups,
                         dtype=dtype, transposed=True)
            manifest.append(dict(shape=layer.name, mask="grad_input", variant="torch-eager", eager=eager))
    (folder / "cases.json").write_text(json.dumps(cases, indent=1))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    prepare(Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
