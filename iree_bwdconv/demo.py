"""`iree-bwdconv demo`: a handful of convolution_backward calls run through
our lowering, IREE and the IREE runtime on the CPU, each compared with
eager PyTorch in float64."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from iree_bwdconv import reference
from iree_bwdconv.functional import convolution_backward


@dataclass(frozen=True)
class DemoCase:
    title: str
    grad_output: tuple[int, ...]
    input: tuple[int, ...]
    weight: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    groups: int = 1
    transposed: bool = False
    output_padding: tuple[int, ...] = (0, 0)
    dtype: torch.dtype = torch.float32


CASES = (
    DemoCase("3x3 stride 2 (ResNet downsampling)", (4, 32, 14, 14), (4, 16, 28, 28), (32, 16, 3, 3), (2, 2), (1, 1)),
    DemoCase("1x1 stride 2 (projection shortcut)", (4, 32, 14, 14), (4, 16, 28, 28), (32, 16, 1, 1), (2, 2), (0, 0)),
    DemoCase("3x3 stride 2, groups 4, f16", (4, 32, 14, 14), (4, 32, 28, 28), (32, 8, 3, 3), (2, 2), (1, 1),
             groups=4, dtype=torch.float16),
    DemoCase("3x3 depthwise stride 2, bf16", (4, 32, 14, 14), (4, 32, 28, 28), (32, 1, 3, 3), (2, 2), (1, 1),
             groups=32, dtype=torch.bfloat16),
    DemoCase("4x4 transposed stride 2 (decoder)", (4, 8, 28, 28), (4, 16, 14, 14), (16, 8, 4, 4), (2, 2), (1, 1),
             transposed=True),
    DemoCase("3x3x3 stride 2 (video)", (2, 8, 4, 4, 4), (2, 4, 8, 8, 8), (8, 4, 3, 3, 3), (2, 2, 2), (1, 1, 1)),
)


def run_case(case: DemoCase, target: str) -> tuple[list[reference.Comparison], float]:
    generator = torch.Generator().manual_seed(0)
    make = lambda shape: torch.randn(shape, generator=generator).to(case.dtype)  # noqa: E731
    tensors = make(case.grad_output), make(case.input), make(case.weight)
    rank = len(case.stride)
    output_padding = case.output_padding[:rank] + (0,) * (rank - len(case.output_padding))
    arguments = ([case.grad_output[1]], list(case.stride), list(case.padding), [1] * rank, case.transposed,
                 list(output_padding), case.groups, [True, True, True])
    start = time.perf_counter()
    got = convolution_backward(*tensors, *arguments, target=target)
    elapsed = time.perf_counter() - start
    return reference.compare(got, *tensors, arguments), elapsed


def main(target: str = "cpu") -> int:
    print(f"convolution_backward through iree-bwdconv -> IREE ({target}), vs eager PyTorch in float64\n")
    print(f"{'case':40} {'dtype':9} {'gradient':12} {'max |error|':>12} {'max |ref|':>10}  within bound")
    failures = 0
    for case in CASES:
        comparisons, elapsed = run_case(case, target)
        for index, c in enumerate(comparisons):
            title = case.title if index == 0 else ""
            dtype = str(case.dtype).removeprefix("torch.") if index == 0 else ""
            print(f"{title:40} {dtype:9} {c.gradient:12} {c.max_error:12.3e} {c.max_reference:10.3g}  "
                  f"{'yes' if c.ok else 'NO'}")
            failures += not c.ok
        print(f"{'':40} (compiled and ran in {elapsed:.1f} s)")
    print("\nall gradients within the error bound" if not failures else f"\n{failures} gradient(s) OUT OF BOUND")
    return 1 if failures else 0
