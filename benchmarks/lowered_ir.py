"""Does a change alter any lowered IR? Lowers every convolution the project
checks, for every target, and records a digest of each text, so that a
refactor meant to change no IR can be shown to change none.

The configurations: every case of the e2e registry (also in each grad_input
form `test_every_grad_input_form_matches_eager` forces), the random sweep of
`e2e_tests.test_sweep` (CI's seed and count; its GPU subset is a prefix of
it), and every case of `benchmarks/gpu_check.py`; each for "cpu", "gfx942"
and "cuda", the GPU targets also in their plain forms. Lowering only: nothing
is compiled. A lowering that raises records the exception's type and first
line, so refusals are compared too.

    ./dev python -m benchmarks.lowered_ir snapshot before.json [--jobs N] [--save-ir DIR] [--only PART]
    ./dev python -m benchmarks.lowered_ir compare before.json after.json   # exit 1 if any differ
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

SWEEP_COUNT = 300  # IREE_BWDCONV_SWEEP_CASES's default, all run by `./dev test --full`
TARGETS = ("cpu", "gfx942", "cuda")
GPU_TARGETS = ("gfx942", "cuda")
FORMS = ("per-phase", "sub-pixel", "col2im")  # those test_e2e forces on strided cases
# Settings that change the IR; cleared so that a snapshot does not depend on the shell.
_SETTINGS = ("IREE_BWDCONV_GRAD_INPUT_FORM", "IREE_BWDCONV_OPERAND_ROOM")

Job = Callable[[], str]
_JOBS: dict[str, Job] = {}


def _options(target: str, plain: bool, form: str) -> Any:
    from iree_bwdconv.options import LoweringOptions

    return LoweringOptions(target=target, grad_input_form=form, plain_forms=plain)


def _lowered(spec_source: Callable[[], object], bias_sizes: Optional[tuple[int, ...]], target: str,
             plain: bool, form: str) -> Job:
    def run() -> str:
        from iree_bwdconv import functional

        return functional.lowered(spec_source(), bias_sizes, _options(target, plain, form))  # type: ignore[arg-type]
    return run


def _variants(target: str) -> tuple[bool, ...]:
    return (False, True) if target in GPU_TARGETS else (False,)


def _add(key: str, job: Job) -> None:
    if key in _JOBS:
        raise ValueError(f"two configurations share the key {key}")
    _JOBS[key] = job


def _e2e_jobs(source: str, cases: list, forms: bool) -> None:
    from e2e_tests import harness

    strided = {c.name for c in cases if max(c.stride) > 1 and not c.transposed and c.output_mask[0]
               and c.name not in harness.EXPECTED_FAILURES}
    for case in cases:
        spec = (lambda c=case: harness.spec_of(c))
        for target in TARGETS:
            for plain in _variants(target):
                _add(f"{source}/{case.name}/{target}" + ("/plain" if plain else ""),
                     _lowered(spec, case.bias_sizes, target, plain, "auto"))
            for form in FORMS if forms and case.name in strided else ():
                _add(f"{source}/{case.name}/{target}/form={form}",
                     _lowered(spec, case.bias_sizes, target, False, form))


def _gpu_check_job(case: Any, target: str, plain: bool) -> Job:
    def run() -> str:
        import torch

        from benchmarks import gpu_check
        from iree_bwdconv import functional, lowering

        c: gpu_check.Case = case
        dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[c.dtype]
        tensors = {name: torch.zeros(size, dtype=dtype) for name, size in gpu_check.shapes(c).items()}
        if c.kind == "forward":
            forward = gpu_check._Forward(c)
            return lowering.lower(forward, tensors["x"], tensors["w"], target=_options(target, plain, c.form))
        spec = functional.spec_of(tensors["dy"], tensors["x"], tensors["w"], *gpu_check.arguments(c),
                                  dynamic_batch=c.dynamic_batch)
        if c.kind == "upstream":  # IREE's own torch input: the same for every target
            return str(lowering.import_module(functional.ConvolutionBackward(spec, None), *tensors.values()))
        return _lowered(lambda: spec, None, target, plain, c.form)()
    return run


def build_jobs() -> dict[str, Job]:
    if _JOBS:
        return _JOBS
    from e2e_tests import cases as _  # noqa: F401 - registers the cases
    from e2e_tests.registry import CASES
    from e2e_tests.sweep import SEED, sweep

    from benchmarks import gpu_check

    _e2e_jobs("e2e", list(CASES.values()), forms=True)
    _e2e_jobs("sweep", sweep(SWEEP_COUNT, SEED), forms=False)
    for case in gpu_check.CASES:
        for target in TARGETS:
            for plain in _variants(target):
                _add(f"gpu_check/{case.name}/{target}" + ("/plain" if plain else ""),
                     _gpu_check_job(case, target, plain))
    return _JOBS


def _file_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "__", key) + ".mlir"


def _record(task: tuple[str, Optional[str]]) -> tuple[str, dict[str, object]]:
    key, save_dir = task
    try:
        text = build_jobs()[key]()
    except Exception as error:  # noqa: BLE001 - a refusal is a result too
        first = str(error).strip().splitlines()
        return key, {"error": f"{type(error).__name__}: {first[0] if first else ''}"}
    if save_dir:
        (Path(save_dir) / _file_name(key)).write_text(text)
    return key, {"sha256": hashlib.sha256(text.encode()).hexdigest(), "chars": len(text)}


def _init_worker() -> None:
    warnings.filterwarnings("ignore", ".*LeafSpec.*", FutureWarning)  # as pytest's configuration does
    for name in _SETTINGS:
        os.environ.pop(name, None)
    build_jobs()


def snapshot(out: Path, jobs: int, save_dir: Optional[Path], only: Optional[str] = None) -> None:
    _init_worker()
    if save_dir:
        save_dir.mkdir(parents=True, exist_ok=True)
    # In the order of the cases, so that a chunk holds one case's variants.
    tasks = [(key, str(save_dir) if save_dir else None) for key in build_jobs() if not only or only in key]
    start, results = time.monotonic(), {}
    with multiprocessing.get_context("spawn").Pool(jobs, initializer=_init_worker) as pool:
        for done, (key, entry) in enumerate(pool.imap_unordered(_record, tasks, chunksize=5), 1):
            results[key] = entry
            if done % 100 == 0 or done == len(tasks):
                print(f"{done}/{len(tasks)} in {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    out.write_text(json.dumps(dict(sorted(results.items())), indent=1) + "\n")
    errors = sum("error" in entry for entry in results.values())
    print(f"{len(results)} keys ({errors} refusals) in {time.monotonic() - start:.0f} s -> {out}")


def compare(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    differing = sorted(key for key in a.keys() | b.keys() if a.get(key) != b.get(key))
    for key in differing:
        print(f"{key}\n  {before.name}: {a.get(key, 'missing')}\n  {after.name}: {b.get(key, 'missing')}")
    print(f"{len(differing)} of {len(a.keys() | b.keys())} keys differ")
    return 1 if differing else 0


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    snap = commands.add_parser("snapshot")
    snap.add_argument("out", type=Path)
    snap.add_argument("--jobs", type=int, default=2)
    snap.add_argument("--save-ir", type=Path, default=None, help="also write each IR text into this folder")
    snap.add_argument("--only", default=None, help="only the keys that hold this text (a quick check)")
    comp = commands.add_parser("compare")
    comp.add_argument("before", type=Path)
    comp.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "snapshot":
        snapshot(args.out, args.jobs, args.save_ir, args.only)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
