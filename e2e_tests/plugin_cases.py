"""Decoder layers for `iree-bwdconv-compile`, registered by name as the
e2e suite registers its cases, and the frontends that make their IR: ONNX
(`torch.onnx.export`, then `iree-import-onnx`), the torch dialect
(torch-mlir's FX importer) and linalg (torch-mlir's TorchToLinalg, the
zero-insertion form)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
from torch_mlir import fx

from .registry import DTYPES

_CONV = {1: torch.nn.ConvTranspose1d, 2: torch.nn.ConvTranspose2d, 3: torch.nn.ConvTranspose3d}
ROUTES = ("onnx", "torch", "linalg")
ENTRY = {"onnx": "main_graph", "torch": "main", "linalg": "main"}


@dataclass(frozen=True)
class DecoderCase:
    rank: int
    in_channels: int
    out_channels: int
    sizes: tuple[int, ...]
    kernel: int
    stride: int
    padding: int = 0
    output_padding: int = 0
    dilation: int = 1
    groups: int = 1
    dtype: str = "f32"
    bias: bool = False
    dynamic_batch: bool = False
    routes: tuple[str, ...] = ROUTES

    @property
    def name(self) -> str:
        parts = [f"ConvTranspose{self.rank}D", f"k{self.kernel}", f"s{self.stride}", f"p{self.padding}",
                 f"op{self.output_padding}", f"d{self.dilation}", f"g{self.groups}", self.dtype]
        parts += ["bias"] * self.bias + ["dynamic_batch"] * self.dynamic_batch
        return "_".join(parts)

    def module(self) -> torch.nn.Module:
        torch.manual_seed(0)
        conv = _CONV[self.rank](self.in_channels, self.out_channels, self.kernel, stride=self.stride,
                                padding=self.padding, output_padding=self.output_padding, dilation=self.dilation,
                                groups=self.groups, bias=self.bias)
        return conv.to(DTYPES[self.dtype]).eval()

    def input(self, batch: int = 2) -> torch.Tensor:
        generator = torch.Generator().manual_seed(batch)
        return torch.randn(batch, self.in_channels, *self.sizes, generator=generator).to(DTYPES[self.dtype])


CASES: dict[str, DecoderCase] = {}


def _register(case: DecoderCase) -> None:
    CASES[case.name] = case


_register(DecoderCase(2, 8, 4, (5, 6), kernel=4, stride=2, padding=1))
_register(DecoderCase(2, 8, 6, (5, 5), kernel=3, stride=2, padding=1, output_padding=1, bias=True))
_register(DecoderCase(2, 6, 8, (4, 7), kernel=2, stride=2))
_register(DecoderCase(1, 6, 4, (7,), kernel=5, stride=3, padding=2, dilation=2, routes=("onnx", "linalg")))
_register(DecoderCase(3, 4, 3, (3, 4, 3), kernel=3, stride=2, padding=1, output_padding=1, routes=("onnx", "torch")))
_register(DecoderCase(2, 8, 6, (5, 5), kernel=4, stride=2, padding=1, groups=2, routes=("onnx", "linalg")))
_register(DecoderCase(2, 16, 8, (6, 6), kernel=4, stride=2, padding=1, dtype="f16", routes=("torch", "linalg")))
# bf16 weights and bias as resource constants: cpu_bf16_resource_constant (docs/iree-faults.md)
_register(DecoderCase(2, 8, 4, (5, 6), kernel=4, stride=2, padding=1, dtype="bf16", bias=True,
                      routes=("torch", "linalg")))
_register(DecoderCase(2, 8, 4, (5, 6), kernel=3, stride=2, padding=1, output_padding=1, dynamic_batch=True,
                      routes=("onnx", "linalg")))


def onnx_text(case: DecoderCase) -> str:
    """The case exported to ONNX and imported by `iree-import-onnx`."""
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, imported = Path(folder) / "decoder.onnx", Path(folder) / "decoder.mlir"
        axes = {"x": {0: "n"}, "y": {0: "n"}} if case.dynamic_batch else None
        torch.onnx.export(case.module(), (case.input(),), str(model), dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["y"], dynamic_axes=axes)
        importer = Path(sys.executable).parent / "iree-import-onnx"
        subprocess.run([str(importer), str(model), "-o", str(imported)], check=True, capture_output=True)
        return imported.read_text()


def fx_text(case: DecoderCase, output_type: str) -> str:
    dynamic: Optional[dict] = {"input": {0: torch.export.Dim("n")}} if case.dynamic_batch else None
    return str(fx.export_and_import(case.module(), case.input(), output_type=output_type, dynamic_shapes=dynamic))


def source(case: DecoderCase, route: str) -> str:
    """The case's IR as `route`'s frontend makes it."""
    if route == "onnx":
        return onnx_text(case)
    return fx_text(case, "raw" if route == "torch" else "linalg-on-tensors")
