"""Each gradient against the best named-op form of the same work, per target:
grad_input and grad_weight of the data-gradient shapes and a ResNet-50
sample, as ours (the target's forms), upstream (IREE's own torch input),
the named-op forms torch-mlir emits for the same work, and torch eager.

On this CPU (compile and time here, one run, interleaved):

    ./dev python -m benchmarks.forms cpu [SHAPE-NAME-PART]

On the H100 (the GPU machine has no compiler; see benchmarks/gpu.py):

    ./dev python -m benchmarks.forms prepare .bench-forms [grad_input|grad_weight]
    python3 benchmarks/run_on_gpu.py .bench-forms results.json     # there
    ./dev python -m benchmarks.forms report results.json
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F

from iree_bwdconv import lowering
from iree_bwdconv.compiler import pipeline
from iree_bwdconv import options as lowering_options

from . import cpu, modules
from .shapes import SHAPES, Shape

MASKS = {"grad_input": (True, False, False), "grad_weight": (False, True, False)}

RESNET50_H100 = (
    Shape("R50 3x3 s1 n32 c64 k64 56x56", 32, 64, 64, (56, 56), 3, 1, 1),
    Shape("R50 3x3 s1 n32 c128 k128 28x28", 32, 128, 128, (28, 28), 3, 1, 1),
    Shape("R50 3x3 s1 n32 c256 k256 14x14", 32, 256, 256, (14, 14), 3, 1, 1),
    Shape("R50 1x1 s1 n32 c256 k64 56x56", 32, 256, 64, (56, 56), 1, 1, 0),
    Shape("R50 1x1 s2 n32 c256 k512 56x56 (projection)", 32, 256, 512, (56, 56), 1, 2, 0),
    Shape("R50 7x7 s2 n32 c3 k64 224x224 (stem)", 32, 3, 64, (224, 224), 7, 2, 3),
)


class _NamedForm(torch.nn.Module):
    """A named-op form of one gradient, `forward(dy, x, w)`, for `shape`."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.shape = shape


class GradInputAsTransposedConv(_NamedForm):
    """grad_input as torch-mlir lowers a transposed convolution: grad_output
    scattered into zeros, then a named convolution with the flipped weight."""

    def forward(self, dy, x, w):
        s, p = self.shape.stride, self.shape.padding
        extra = [x.shape[2 + i] + 2 * p - ((dy.shape[2 + i] - 1) * s + w.shape[2 + i]) for i in range(2)]
        return F.conv_transpose2d(dy, w, None, s, p, extra, self.shape.groups)


class GradInputAsMatmul(_NamedForm):
    """1x1 grad_input: the GEMM as a named matmul, its result placed at stride."""

    def forward(self, dy, x, w):
        n, k, oh, ow = dy.shape
        s, h, wd = self.shape.stride, x.shape[2], x.shape[3]
        rows = dy.permute(0, 2, 3, 1).reshape(n * oh * ow, k) @ w.reshape(k, -1)
        y = rows.reshape(n, oh, ow, -1).permute(0, 3, 1, 2)
        if s == 1:
            return y
        spread = F.pad(y[:, :, :, None, :, None], (0, s - 1, 0, 0, 0, s - 1))
        return spread.reshape(n, -1, oh * s, ow * s)[:, :, :h, :wd]


class GradWeightAsConv(_NamedForm):
    """grad_weight as a forward convolution of x^T with dy^T as the filter,
    dilated by the stride (a named convolution); ungrouped only."""

    def forward(self, dy, x, w):
        s, p, kernel = self.shape.stride, self.shape.padding, self.shape.kernel
        out = F.conv2d(x.transpose(0, 1), dy.transpose(0, 1), None, 1, p, s)
        return out[:, :, :kernel, :kernel].transpose(0, 1)


class GradWeightAsMatmul(_NamedForm):
    """1x1 grad_weight: the strided input's pixels against grad_output's, one named matmul."""

    def forward(self, dy, x, w):
        n, k, oh, ow = dy.shape
        s = self.shape.stride
        xs = x[:, :, : (oh - 1) * s + 1 : s, : (ow - 1) * s + 1 : s]
        cols = xs.permute(1, 0, 2, 3).reshape(x.shape[1], -1)
        return (dy.permute(1, 0, 2, 3).reshape(k, -1) @ cols.transpose(0, 1)).reshape(k, -1, 1, 1)


def named_forms(shape: Shape, gradient: str) -> dict[str, torch.nn.Module]:
    """The named-op forms of the same work that torch-mlir can express."""
    if gradient == "grad_input":
        forms = {"named-conv": GradInputAsTransposedConv(shape)}
        if shape.kernel == 1 and shape.groups == 1:
            forms["named-matmul"] = GradInputAsMatmul(shape)
        return forms
    if shape.groups > 1:  # not one named convolution without G-fold work
        return {}
    forms = {"named-conv": GradWeightAsConv(shape)}
    if shape.kernel == 1:
        forms["named-matmul"] = GradWeightAsMatmul(shape)
    return forms


def variants(shape: Shape, gradient: str, target: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (MLIR text, extra iree-compile flags)."""
    mask = MASKS[gradient]
    out = {"ours": (modules.ours(shape, mask, target), ()),
           "upstream": (modules.raw_torch(shape, mask), modules.UPSTREAM_FLAGS)}
    tensors = modules.example_tensors(shape)
    for name, module in named_forms(shape, gradient).items():
        out[name] = (lowering.lower(module, *tensors, target=lowering_options.from_environment(target)), ())
    return out


def check_named_forms(shape: Shape) -> None:
    """A named form that computed something else would make the table lie."""
    dy, x, w = (torch.randn(t.shape, dtype=torch.float64) for t in modules.example_tensors(shape))
    for gradient, mask in MASKS.items():
        want = torch.ops.aten.convolution_backward(dy, x, w, *modules.arguments(shape, mask))[mask.index(True)]
        for name, module in named_forms(shape, gradient).items():
            got = module(dy, x, w)
            if got.shape != want.shape or not torch.allclose(got, want, atol=1e-9 * want.abs().max().item()):
                raise AssertionError(f"{name} is not {gradient} on {shape.name}")


def run_cpu(only: str = "") -> int:
    """Every CPU shape, or those whose name contains `only`."""
    torch.set_num_threads(2)
    print("| shape | gradient | eager ms | ours ms | upstream ms | named-conv ms | named-matmul ms | ours / best named | ours / eager |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in (s for s in cpu.SHAPES if only in s.name):
            check_named_forms(shape)
            for gradient, mask in MASKS.items():
                files = {}
                for name, (text, flags) in variants(shape, gradient, "cpu").items():
                    files[name] = Path(tmp) / f"{name}.vmfb"
                    files[name].write_bytes(pipeline.iree_compile(text, "cpu", flags))
                samples: dict[str, list[float]] = {name: [] for name in ["eager", *files]}
                for _ in range(cpu.ROUNDS):  # interleaved, so drift hits all alike
                    samples["eager"].append(cpu.eager_ms(shape, mask))
                    for name, vmfb in files.items():
                        samples[name].append(cpu.iree_ms(vmfb, shape))
                med = {k: statistics.median(v) for k, v in samples.items()}
                print(_row(shape.name, gradient, med), flush=True)
    return 0


def _row(shape: str, gradient: str, med: dict[str, float | None]) -> str:
    def cell(name: str) -> str:
        return f"{med[name]:.2f}" if med.get(name) else "-"

    named = [med[n] for n in ("named-conv", "named-matmul") if med.get(n)]
    vs_named = f"{med['ours'] / min(named):.2f}" if named and med.get("ours") else "-"
    vs_eager = f"{med['ours'] / med['eager']:.2f}" if med.get("ours") and med.get("eager") else "-"
    return (f"| {shape} | {gradient} | {cell('eager')} | {cell('ours')} | {cell('upstream')} | "
            f"{cell('named-conv')} | {cell('named-matmul')} | {vs_named} | {vs_eager} |")


def prepare(folder: Path, gradients: tuple[str, ...] = tuple(MASKS), target: str = "cuda") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, shape in enumerate((*SHAPES, *RESNET50_H100)):
        check_named_forms(shape.scaled(8))
        for gradient in gradients:
            for name, (text, flags) in variants(shape, gradient, target).items():
                manifest.append(modules.compiled_entry(folder, text, target, flags, shape=shape.name, mask=gradient,
                                                       variant=name, vmfb=f"s{index}-{gradient}-{name}.vmfb",
                                                       inputs=modules.input_specs(shape)))
            manifest.append(modules.eager_entry(shape, gradient))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


def report(results_path: Path) -> None:
    results = json.loads(results_path.read_text())
    table: dict[tuple[str, str], dict[str, float | None]] = {}
    for r in results:
        name = "eager" if r["variant"] == "torch-eager" else r["variant"]
        table.setdefault((r["shape"], r["mask"]), {})[name] = r.get("median_ms")
    print("| shape | gradient | eager ms | ours ms | upstream ms | named-conv ms | named-matmul ms | ours / best named | ours / eager |")
    print("|---|---|---|---|---|---|---|---|---|")
    for shape in (*SHAPES, *RESNET50_H100):
        for gradient in MASKS:
            if (shape.name, gradient) in table:
                print(_row(shape.name, gradient, table[(shape.name, gradient)]))


if __name__ == "__main__":
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.export's, once per module
    command = sys.argv[1]
    if command == "cpu":
        sys.exit(run_cpu(sys.argv[2] if len(sys.argv) > 2 else ""))
    if command == "prepare":
        prepare(Path(sys.argv[2]), tuple(sys.argv[3:]) or tuple(MASKS))
    else:
        report(Path(sys.argv[2]))
