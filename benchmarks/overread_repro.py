"""The smallest module whose CUDA code reads past an operand's end
(docs/performance-journal.md, "Reads past an operand's end"): one f16 batch
matmul, 2 x (M x K) by 2 x (N x K) with f32 accumulation, the shape of
grad_weight's im2col matmul in `gpu_check`'s `1x1_s3_p1_g2_f16` (M 48,
N 32, K 484). IREE 3.13 pads it to its workgroup tile (M to 64). The
threads of the padded rows clamp their row to M, not M - 1, and their
loads are masked along K only: they read row M, past the end of the
operand's last matrix. Variants with M, N or K aligned to the tile tell
which padding does it.

    ./dev python -m benchmarks.overread_repro prepare DIR   # here: DIR/*.mlir, *.vmfb
    python3 benchmarks/overread_repro.py run DIR            # there: each under memcheck

The .mlir files are what an upstream report needs; `prepare` prints the
iree-compile command of each.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# name: (M, N, K). Only `m48` is a layer's; the others change one size.
VARIANTS = {
    "m48_n32_k484": (48, 32, 484),  # M padded (48 -> 64), K padded
    "m64_n32_k484": (64, 32, 484),  # K padded only
    "m48_n32_k512": (48, 32, 512),  # M padded only (K 512 is a multiple of its 128)
    "m64_n40_k512": (64, 40, 512),  # N padded only (40 -> 64)
}
GROUPS = 2
TIMEOUT_S = 90

# Hand-written on purpose: a report upstream should read as plain IR, with
# no package of ours between it and iree-compile.
_TEMPLATE = """\
// f16 batch matmul {g} x ({m} x {k}) by {g} x ({n} x {k}), f32 accumulation.
#lhs = affine_map<(g, m, n, k) -> (g, m, k)>
#rhs = affine_map<(g, m, n, k) -> (g, n, k)>
#out = affine_map<(g, m, n, k) -> (g, m, n)>
func.func @main(%a: tensor<{g}x{m}x{k}xf16>, %b: tensor<{g}x{n}x{k}xf16>) -> tensor<{g}x{m}x{n}xf32> {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<{g}x{m}x{n}xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<{g}x{m}x{n}xf32>) -> tensor<{g}x{m}x{n}xf32>
  %r = linalg.generic {{indexing_maps = [#lhs, #rhs, #out],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%a, %b : tensor<{g}x{m}x{k}xf16>, tensor<{g}x{n}x{k}xf16>) outs(%init : tensor<{g}x{m}x{n}xf32>) {{
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }} -> tensor<{g}x{m}x{n}xf32>
  return %r : tensor<{g}x{m}x{n}xf32>
}}
"""


def module_text(m: int, n: int, k: int) -> str:
    return _TEMPLATE.format(g=GROUPS, m=m, n=n, k=k)


def prepare(folder: Path) -> None:
    from iree_bwdconv.compiler import pipeline

    folder.mkdir(parents=True, exist_ok=True)
    for name, sizes in VARIANTS.items():
        text = module_text(*sizes)
        (folder / f"{name}.mlir").write_text(text)
        (folder / f"{name}.vmfb").write_bytes(pipeline.iree_compile(text, "cuda"))
        flags = " ".join(pipeline.TARGET_FLAGS["cuda"])
        print(f"iree-compile {flags} {name}.mlir -o {name}.vmfb")


def _inputs(m: int, n: int, k: int) -> list[str]:
    return [f"--input={GROUPS}x{m}x{k}xf16=1", f"--input={GROUPS}x{n}x{k}xf16=1"]


def _memcheck(folder: Path, name: str) -> str:
    """One variant under memcheck: how it ended, its first reports, its command."""
    sizes = VARIANTS[name]
    command = ["/usr/local/cuda/bin/compute-sanitizer", "--tool", "memcheck", "--print-limit", "2",
               sys.executable, "-m", "iree._runtime.scripts.iree_run_module", "--device=cuda",
               f"--module={folder / (name + '.vmfb')}", "--function=main", *_inputs(*sizes)]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
        said, ending = proc.stdout + proc.stderr, f"exit {proc.returncode}"
    except subprocess.TimeoutExpired as timeout:  # a bad access often leaves the call hanging
        said = b"".join(out or b"" for out in (timeout.stdout, timeout.stderr)).decode(errors="replace")
        ending = f"timeout ({TIMEOUT_S} s)"
    notes = [line.strip("= ").strip() for line in said.splitlines()
             if "Invalid" in line or "bytes after" in line or "ERROR SUMMARY" in line]
    return "\n  ".join([f"{name} (M, N, K = {sizes}): {ending}", *notes[:4], "command: " + shlex.join(command)])


def run(folder: Path) -> None:
    """Every variant under memcheck, side by side (a hang costs TIMEOUT_S once)."""
    with ThreadPoolExecutor(len(VARIANTS)) as pool:
        for report in pool.map(lambda name: _memcheck(folder, name), VARIANTS):
            print(report, flush=True)


if __name__ == "__main__":
    {"prepare": prepare, "run": run}[sys.argv[1]](Path(sys.argv[2]))
