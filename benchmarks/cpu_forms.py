"""Which linalg form of a convolution gradient IREE's CPU backend runs best:
ours (as the lowering emits it for the CPU) against the named-op forms of
the same work and torch eager, n2 c64 k64 56x56 f32, in one run.

    ./dev python -m benchmarks.cpu_forms
"""

from __future__ import annotations

import time
from typing import Callable

import torch

import iree_bwdconv
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.run.runtime import LoadedModule

from . import modules
from .forms import GradWeightAsConv
from .shapes import Shape

N, C, K, H = 2, 64, 64, 56
REPEATS = 20


def best_ms(call: Callable[[], object]) -> float:
    """Minimum over REPEATS calls after warm-up: the machine is shared."""
    for _ in range(3):
        call()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


class Backward(torch.nn.Module):
    def __init__(self, stride: int, padding: int, mask: list[bool]) -> None:
        super().__init__()
        self.stride, self.padding, self.mask = stride, padding, mask

    def forward(self, dy, x, w):
        s, p = self.stride, self.padding
        grads = torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], 1, self.mask)
        return grads[self.mask.index(True)]


class GradInputAsConv(torch.nn.Module):
    """Stride 1: a forward convolution with the flipped, transposed weight (linalg.conv_2d_nchw_fchw)."""

    def forward(self, dy, x, w):
        return torch.nn.functional.conv2d(dy, w.flip(2, 3).transpose(0, 1), None, 1, w.shape[-1] // 2)


class GradInputIm2col(torch.nn.Module):
    def forward(self, dy, x, w):
        cols = torch.nn.functional.unfold(dy, w.shape[-1], padding=w.shape[-1] // 2)
        return (w.flip(2, 3).transpose(0, 1).reshape(x.shape[1], -1) @ cols).reshape(x.shape)


def iree_ms(module: torch.nn.Module, args, form: str = "auto") -> float:
    loaded = LoadedModule(pipeline.iree_compile(iree_bwdconv.lower(module, *args, target=modules.options_for("cpu", form)),
                                                "cpu"))
    return best_ms(lambda: loaded(*args))


def main() -> None:
    torch.manual_seed(0)
    rows = []
    for k, s in ((3, 1), (3, 2), (1, 2)):
        p = k // 2
        x, w = torch.randn(N, C, H, H), torch.randn(K, C, k, k)
        dy = torch.randn_like(torch.nn.functional.conv2d(x, w, None, s, p))
        args = (dy, x, w)
        for mask, name in (([True, False, False], "grad_input"), ([False, True, False], "grad_weight")):
            if name == "grad_weight" and s != 1:
                continue
            eager = best_ms(lambda: torch.ops.aten.convolution_backward(
                dy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], 1, mask))
            what = f"{name} {k}x{k} s{s}"
            rows.append((what, "torch eager (oneDNN)", eager))
            rows.append((what, "ours (the CPU's forms)", iree_ms(Backward(s, p, mask), args)))
            if name == "grad_input" and s > 1:
                for form in ("per-phase", "direct"):
                    rows.append((what, f"ours, {form} forced", iree_ms(Backward(s, p, mask), args, form)))
            if (name, s) == ("grad_input", 1):
                rows.append((what, "named conv_2d_nchw_fchw", iree_ms(GradInputAsConv(), args)))
                rows.append((what, "im2col + matmul", iree_ms(GradInputIm2col(), args)))
            if name == "grad_weight":
                shape = Shape(what, N, C, K, (H, H), k, s, p, dtype="f32")
                rows.append((what, "named conv_2d_nchw_fchw over transposes", iree_ms(GradWeightAsConv(shape), args)))
            print(f"{what} done", flush=True)
    print(f"\nn{N} c{C} k{K} {H}x{H} f32, minimum of {REPEATS} calls, ms\n")
    print("| gradient | form | ms |\n|---|---|---|")
    for what, form, ms in rows:
        print(f"| {what} | {form} | {ms:.2f} |")


if __name__ == "__main__":
    main()
