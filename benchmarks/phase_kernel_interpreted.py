"""The phase kernel's dispatches as the lowering makes them, run on this
CPU: for each f16 `gpu_check` case the plan gives the phase kernel, the
Triton source (`iree_bwdconv/kernels/phase_grad_input.py`) in Triton's
interpreter, called with the i32 arguments, the workgroup grid and the
buffers of the case's `hal.dispatch.extern`, against torch's float64
result. grad_input starts as NaN, so a position the dispatch never
writes shows. Checks what CI cannot: that what IREE will pass is what the
kernel reads. Needs Triton in the environment (`./dev python -m pip install
triton==3.9.0`, the version that wrote the PTX), no GPU:

    ./dev python -m benchmarks.phase_kernel_interpreted [CASE ...]   # every such f16 case by default
"""

from __future__ import annotations

import os
import re
import sys

os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported

import torch

from iree_bwdconv import functional
from iree_bwdconv.kernels import catalog

from . import gpu_check

_DISPATCH = re.compile(r'hal.dispatch.extern "(phase_grad_input_\w+)"\[%c(\d+)(?:_\d+)?, %c(\d+)(?:_\d+)?, '
                       r'%c(\d+)(?:_\d+)?\]')


def dispatch(mlir: str) -> tuple[str, list[int], tuple[int, int, int]]:
    """The variant, i32 arguments and workgroup grid of the module's one
    phase-kernel dispatch (its count region: ceil-divided position and
    channel tiles, then the images x groups x phases)."""
    (found,) = _DISPATCH.findall(mlir)
    name, workload = found[0], [int(w) for w in found[1:]]
    variant = catalog.variant_by_name(name)
    arguments = [int(c) for c in re.findall(r"arith.constant (-?\d+) : i32", mlir)]
    grid = (-(-workload[0] // variant.block_positions), -(-workload[1] // variant.block_channels), workload[2])
    return name, arguments, grid


def _case_tensors(case: gpu_check.Case) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(the weight and dy the dispatch reads, float64 grad_input) on random values."""
    generator = torch.Generator().manual_seed(0)
    t = {n: torch.randn(s, generator=generator).half() for n, s in gpu_check.shapes(case).items()}
    if case.kind == "transposed-forward":
        x, w = t["x"], t["w"]
        rank = x.dim() - 2
        conv = getattr(torch.nn.functional, f"conv_transpose{rank}d")
        expected = conv(x.double(), w.double(), None, gpu_check._per_dim(case.stride, rank),
                        gpu_check._per_dim(case.padding, rank), case.output_padding, case.groups)
        return w, x, expected
    expected = torch.ops.aten.convolution_backward(t["dy"].double(), t["x"].double(), t["w"].double(),
                                                   *gpu_check.arguments(case))[0]
    return t["w"], t["dy"], expected


def check(case: gpu_check.Case, mlir: str) -> float:
    """The largest error of `mlir`'s interpreted dispatch (the case lowered)
    over the largest magnitude."""
    sys.path.insert(0, str(catalog.HERE))
    from phase_grad_input import phase_grad_input  # noqa: E402 (the Triton source, beside the catalog)

    weight, dy, expected = _case_tensors(case)
    name, arguments, grid = dispatch(mlir)
    groups, channels, _, h, w, oh, ow = arguments[:7]
    # As the kernel sees them: 1-D as one row; a transposed forward's input grown to dy's size by the
    # zeros its output_padding adds
    rows = dy.reshape(dy.shape[0], dy.shape[1], -1, dy.shape[-1])
    grown = torch.zeros(dy.shape[0], dy.shape[1], oh, ow, dtype=dy.dtype)
    grown[:, :, :rows.shape[2], :rows.shape[3]] = rows
    dx = torch.full((expected.shape[0], groups * channels, h, w), float("nan"), dtype=torch.float16)
    block = catalog._manifest()[name]["block"]
    phase_grad_input[grid](weight.contiguous(), grown, dx, *arguments,
                           BLOCK_C=block[0], BLOCK_Q=block[1], BLOCK_K=block[2])
    got = dx.double().reshape(expected.shape)
    return ((got - expected).abs().max() / expected.abs().max()).item()


def main(names: list[str]) -> int:
    lowered = {case: _lowered(case) for case in gpu_check.CASES if case.dtype == "f16"
               and (not names or case.name in names) and case.kind in ("backward", "transposed-forward")}
    cases = [case for case, mlir in lowered.items() if "phase_grad_input" in mlir]
    wrong = 0
    for case in cases:
        error = check(case, lowered[case])
        right = error < 2e-2  # NaN (a position never written) is not
        wrong += not right
        print(f"{case.name}: {error:.2e}{'' if right else '  WRONG'}", flush=True)
    print(f"{len(cases) - wrong} of {len(cases)} right")
    return 1 if wrong else 0


def _lowered(case: gpu_check.Case) -> str:
    """The case as the plan lowers it (on zeros: the IR depends only on the shapes)."""
    if case.kind == "transposed-forward":
        return gpu_check._mlir(case)
    t = {n: torch.zeros(s, dtype=torch.float16) for n, s in gpu_check.shapes(case).items()}
    spec = functional.spec_of(t["dy"], t["x"], t["w"], *gpu_check.arguments(case))
    return functional.lowered(spec, target=gpu_check.case_options(case))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
