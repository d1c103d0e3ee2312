"""What it would cost on the CPU to never multiply a padding zero by the
weight (docs/reliability.md, "Not yet as eager: an infinite weight").

Our grad_input forms sum a fixed set of taps at every position and read
zeros where a tap falls in grad_output's padding; with an `inf` in the
weight, `0 * inf` makes those positions NaN where eager's are finite. The
cheapest form that avoids it keeps every sum and guards each product:
`a == 0 or b == 0 ? 0 : a * b`. Then wherever eager is finite ours is too
(each product eager forms is formed alike; the others are zeros). This
script makes that form of each layer's grad_input from the lowering's own
(named contractions generalized, each `mulf` of a reduction guarded),
checks it against eager with an infinite weight, and times both forms on
this CPU: the median of interleaved calls through the project's runtime.

    ./dev python -m benchmarks.finite_padding [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
import time

import torch
from torch_mlir import ir
from torch_mlir.dialects import arith

from iree_bwdconv import functional, geometry, lowering
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.run.runtime import LoadedModule

# (name, batch, channels, out_channels, size, kernel, stride, padding, groups)
LAYERS = (
    ("3x3 s2 c64 k128 28x28", 4, 64, 128, 28, 3, 2, 1, 1),
    ("3x3 s1 c64 k64 28x28", 4, 64, 64, 28, 3, 1, 1, 1),
    ("5x5 s2 c32 k64 32x32", 4, 32, 64, 32, 5, 2, 2, 1),
    ("3x3 s2 dw c128 28x28", 4, 128, 128, 28, 3, 2, 1, 128),
    ("7x7 s2 c3 k64 64x64 (stem)", 4, 3, 64, 64, 7, 2, 3, 1),
)


def spec_of(batch: int, channels: int, out_channels: int, size: int, kernel: int, stride: int, padding: int,
            groups: int):
    out = geometry.conv_output_size(size, kernel, stride, padding, 1)
    dy, x = torch.zeros(batch, out_channels, out, out), torch.zeros(batch, channels, size, size)
    w = torch.zeros(out_channels, channels // groups, kernel, kernel)
    return functional.spec_of(dy, x, w, None, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], groups,
                              [True, False, False])


def _guard_products(module: ir.Module) -> int:
    """Each `arith.mulf` in a reduction's body replaced by `a == 0 or b == 0
    ? 0 : a * b`; returns how many."""
    products: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        parent = op.parent
        if (op.name == "arith.mulf" and parent is not None and parent.name == "linalg.generic"
                and "reduction" in str(parent.attributes["iterator_types"])):
            products.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in products:
        lhs, rhs = op.operands
        with ir.InsertionPoint(op), op.location:
            zero = arith.ConstantOp(lhs.type, 0.0).result
            either = arith.OrIOp(arith.CmpFOp(arith.CmpFPredicate.OEQ, lhs, zero).result,
                                 arith.CmpFOp(arith.CmpFPredicate.OEQ, rhs, zero).result).result
            product = arith.MulFOp(lhs, rhs).result
            guarded = arith.SelectOp(either, zero, product).result
        op.result.replace_all_uses_with(guarded)
        op.erase()
    return len(products)


def finite_form(text: str) -> tuple[str, int]:
    """`text` with every contraction generalized and its products guarded."""
    module = lowering.parse_torch_mlir(text)
    pipeline.run_pipeline(module, "builtin.module(func.func(linalg-generalize-named-ops))", "generalize named ops")
    count = _guard_products(module)
    return str(module), count


def _inputs(spec, seed: int = 0) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator)
            for shape in (spec.grad_output_shape, spec.input_shape, spec.weight_shape)]


def _eager_finite_kept(module: LoadedModule, spec, arguments: list) -> tuple[int, int]:
    """With one weight `inf`: positions eager leaves finite and ours makes
    non-finite, and eager's finite positions."""
    dy, x, w = _inputs(spec, 1)
    w[0, 0, 0, 0] = float("inf")
    eager = torch.ops.aten.convolution_backward(dy, x, w, None, *arguments)[0]
    (ours,) = module(dy, x, w)
    finite = torch.isfinite(eager)
    return int((finite & ~torch.isfinite(ours)).sum()), int(finite.sum())


def main(rounds: int) -> int:
    torch.set_num_threads(2)
    print("| layer | products guarded | eager-finite made non-finite (usual / guarded) | ms usual | ms guarded | "
          "guarded / usual |")
    print("|---|---|---|---|---|---|")
    for name, batch, c, k, size, kernel, stride, padding, groups in LAYERS:
        spec = spec_of(batch, c, k, size, kernel, stride, padding, groups)
        arguments = [[stride] * 2, [padding] * 2, [1, 1], False, [0, 0], groups, [True, False, False]]
        usual = functional.lowered(spec, None, LoweringOptions(target="cpu"))
        guarded, count = finite_form(usual)
        modules = {form: LoadedModule(pipeline.iree_compile(text, "cpu"), "cpu")
                   for form, text in (("usual", usual), ("guarded", guarded))}
        ok = {form: _eager_finite_kept(module, spec, arguments) for form, module in modules.items()}
        dy, x, w = _inputs(spec)
        reference = torch.ops.aten.convolution_backward(dy, x, w, None, *arguments)[0]
        for form, module in modules.items():
            (got,) = module(dy, x, w)
            assert torch.allclose(got, reference, rtol=1e-4, atol=1e-4), f"{name}: {form} form is off"
        samples: dict[str, list[float]] = {form: [] for form in modules}
        for _ in range(rounds):
            for form, module in modules.items():
                started = time.perf_counter()
                module(dy, x, w)
                samples[form].append((time.perf_counter() - started) * 1e3)
        ms = {form: statistics.median(values[1:]) for form, values in samples.items()}
        print(f"| {name} | {count} | {ok['usual'][0]} / {ok['guarded'][0]} of {ok['usual'][1]} "
              f"| {ms['usual']:.2f} | {ms['guarded']:.2f} | {ms['guarded'] / ms['usual']:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 21))
