"""Which f16/bf16 contractions IREE 3.13's CUDA code gets wrong: one
batched GEMM, C[b] = A[b] x B, in every layout of its operands and its
result and three orders of its loops, with f32 accumulation; the evidence
behind `iree_bwdconv.compiler.mma_order` (docs/performance-journal.md, "Loop order and the
MMA intrinsics").

    ./dev python -m benchmarks.mma_order prepare DIR   # here: DIR/*.mlir, *.vmfb, cases.json
    python3 benchmarks/mma_order.py run DIR            # there: each against float64
    ./dev python -m benchmarks.mma_order scan TARGET   # here: gpu_check's f16/bf16 cases, judged

`prepare` prints, per case, whether `mma_order` flags IREE's configured
dispatch; `run` prints each case's largest error over the largest value,
and last any case where the flag and the numbers disagree. `scan` compiles
`gpu_check`'s f16/bf16 cases for a GPU target as given and prints, per
case, its MMA dispatches and those the rule flags: for gfx942, which
`pipeline` does not judge (docs/performance-journal.md, "Loop order and the MMA
intrinsics").
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

# Dims by letter: b a batch (A's, B's if B has it, and C's), m and p rows
# of A (M), n and q rows of B (N), k the reduction. A case is A's, B's and
# C's dims and the loops' order.
ORDERS = ("bmnk", "bnmk", "bkmn")  # (batch, M, N, K) as a GEMM's; N before M; the reduction first
LAYOUTS = tuple(("b" + a, b, "b" + c) for a, b, c in
                itertools.product(("mk", "km"), ("kn", "nk"), ("mn", "nm")))
# Two dims of M or of N: which one's place counts.
SEVERAL = (
    (("mk", "nkq", "nmq"), "nmqk"),  # N's outer dim first, its inner one after M (the weight-first GEMM)
    (("mk", "nqk", "nqm"), "nqmk"),  # all of N first
    (("mk", "nqk", "mnq"), "mnqk"),
    (("mpk", "nk", "mnp"), "mnpk"),  # M's inner dim after N
    (("pmk", "nk", "pmn"), "pmnk"),
    (("pmk", "nk", "npm"), "npmk"),
)
# (batch, M, N, K): tiles of IREE's whole; padded tiles; seed 003's 1x1 control.
SIZES = ((2, 256, 128, 192), (2, 200, 72, 100), (32, 625, 1024, 2048))

# Hand-written on purpose: a report upstream should read as plain IR, with
# no package of ours between it and iree-compile.
_TEMPLATE = """\
// C[b] = A[b] x B in {t}, f32 accumulation; loops ({loops}).
#a = affine_map<({loops}) -> ({a})>
#b = affine_map<({loops}) -> ({b})>
#c = affine_map<({loops}) -> ({c})>
func.func @main(%a: tensor<{a_type}>, %b: tensor<{b_type}>) -> tensor<{c_type}> {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<{acc_type}>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<{acc_type}>) -> tensor<{acc_type}>
  %acc = linalg.generic {{indexing_maps = [#a, #b, #c], iterator_types = [{iterators}]}}
      ins(%a, %b : tensor<{a_type}>, tensor<{b_type}>) outs(%init : tensor<{acc_type}>) {{
  ^bb0(%x: {t}, %y: {t}, %sum: f32):
    %xf = arith.extf %x : {t} to f32
    %yf = arith.extf %y : {t} to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %sum, %p : f32
    linalg.yield %s : f32
  }} -> tensor<{acc_type}>
  %result = arith.truncf %acc : tensor<{acc_type}> to tensor<{c_type}>
  return %result : tensor<{c_type}>
}}
"""


def _sizes(case: dict) -> dict[str, int]:
    batch, m, n, k = case["sizes"]
    return dict(b=batch, m=m, p=32, n=n, q=24, k=k)


def _type(case: dict, dims: str, element: str) -> str:
    return "x".join(str(_sizes(case)[d]) for d in dims) + "x" + element


def module_text(case: dict) -> str:
    a, b, c = case["layout"]
    order, dtype = case["order"], case["dtype"]
    return _TEMPLATE.format(
        t=dtype, loops=", ".join(order), a=", ".join(a), b=", ".join(b), c=", ".join(c),
        a_type=_type(case, a, dtype), b_type=_type(case, b, dtype),
        c_type=_type(case, c, dtype), acc_type=_type(case, c, "f32"),
        iterators=", ".join('"reduction"' if d == "k" else '"parallel"' for d in order))


def cases() -> list[dict]:
    grid = [("f16", SIZES[0], layout, order) for order in ORDERS for layout in LAYOUTS]
    grid += [("f16", SIZES[1], layout, "bnmk") for layout in LAYOUTS]
    grid += [("bf16", SIZES[0], layout, "bnmk") for layout in LAYOUTS]
    grid += [("f16", SIZES[2], ("bkm", "kn", "bnm"), order) for order in ("bmnk", "bnmk")]
    grid += [("f16", (1, 64, 48, 96), layout, order) for layout, order in SEVERAL]
    return [dict(name="{}_b{}m{}n{}k{}_A{}_B{}_C{}_{}".format(dtype, *sizes, *layout, order),
                 dtype=dtype, sizes=sizes, layout=layout, order=order) for dtype, sizes, layout, order in grid]


def prepare(folder: Path) -> None:
    from iree_bwdconv.compiler import pipeline

    folder.mkdir(parents=True, exist_ok=True)
    described = []
    for case in cases():
        text = module_text(case)
        (folder / f"{case['name']}.mlir").write_text(text)
        vmfb, wrong = pipeline.judged_compile(text, "cuda")
        (folder / f"{case['name']}.vmfb").write_bytes(vmfb)
        case["flagged"] = bool(wrong)
        described.append(case)
        print(case["name"], "flagged" if case["flagged"] else "-", flush=True)
    (folder / "cases.json").write_text(json.dumps(described, indent=1))


def _run_one(folder: Path, case: dict, scratch: str) -> float:
    """The case's largest error over its largest value, on random inputs."""
    import numpy as np
    import torch

    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[case["dtype"]]
    sizes = _sizes(case)
    a_dims, b_dims, c_dims = case["layout"]
    generator = torch.Generator().manual_seed(0)
    a = torch.randn([sizes[d] for d in a_dims], generator=generator).to(dtype)
    b = torch.randn([sizes[d] for d in b_dims], generator=generator).to(dtype)
    reference = torch.einsum(f"{a_dims},{b_dims}->{c_dims}", a.double(), b.double())
    flags = []
    for tensor, name in ((a, "a"), (b, "b")):  # numpy has no bf16: raw bits
        tensor.view(torch.int16).numpy().tofile(f"{scratch}/{name}.bin")
        flags.append("--input=" + "x".join(map(str, tensor.shape)) + f"x{case['dtype']}=@{scratch}/{name}.bin")
    subprocess.run([sys.executable, "-m", "iree._runtime.scripts.iree_run_module", "--device=cuda",
                    f"--module={folder / (case['name'] + '.vmfb')}", "--function=main", *flags,
                    f"--output=@{scratch}/out.bin"], check=True, capture_output=True, timeout=120)
    bits = torch.from_numpy(np.fromfile(f"{scratch}/out.bin", dtype=np.int16))
    got = bits.view(dtype).reshape(reference.shape).double()
    return float((got - reference).abs().max() / reference.abs().max())


def run(folder: Path) -> None:
    disagree = []
    with tempfile.TemporaryDirectory() as scratch:
        for case in json.loads((folder / "cases.json").read_text()):
            error = _run_one(folder, case, scratch)
            print(f"{case['name']} {error:.2e} {'flagged' if case['flagged'] else '-'}", flush=True)
            if (error > 2e-2) != case["flagged"]:
                disagree.append(case["name"])
    print("flag and numbers disagree: " + " ".join(disagree) if disagree else "flag and numbers agree on every case")


def _judged(case, target: str) -> str:
    from iree_bwdconv.compiler import mma_order, pipeline
    from iree_bwdconv.errors import PipelineError

    from . import gpu_check

    flags = ("--iree-input-type=torch",) if case.kind == "upstream" else ()
    with tempfile.TemporaryDirectory() as configured:
        try:
            dump = f"{pipeline.CONFIGURATIONS_FLAG}={configured}"
            pipeline.iree_compile(gpu_check._mlir(case), target, (*flags, dump), as_given=True)
        except PipelineError as err:
            return f"{case.name} compile failed: {err.diagnostics.strip().splitlines()[0][:120]}"
        dumped = list(Path(configured).glob("*.mlir"))
        mma = sum("mma_kind" in path.read_text() for path in dumped)
        found = mma_order.misordered_in(Path(configured))
    return f"{case.name} mma dispatches {mma}" + "".join(f"\n  N before M: {wrong}" for wrong in found)


def scan(target: str) -> None:
    from . import gpu_check

    for case in gpu_check.CASES:
        if case.dtype != "f32":
            print(_judged(case, target), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "scan":
        scan(sys.argv[2])
    else:
        {"prepare": prepare, "run": run}[sys.argv[1]](Path(sys.argv[2]))
