"""Runs on the GPU machine: interleaved rounds of a manifest's entries, each
round timing every entry once as `run_on_gpu.py` does (iree-benchmark-module's
median of its repetitions), then each entry's time against a baseline
variant of the same shape and mask, round by round.

One run of `run_on_gpu.py` gives one median per entry, and from run to run
those moved seed 003's c32 1x1 layer between 1.21x and 1.31x of IREE's
matmul, across issue 3's 1.3x line. Rounds in one run, the two timed side
by side in each, give the spread of the ratio itself rather than of two
medians taken minutes apart.

    python3 benchmarks/rounds_on_gpu.py FOLDER RESULTS.json ROUNDS \
        [--baseline iree-matmul] [--variants ours-auto,iree-matmul] [--mask grad_input] [--shape "c32 k224"]  # there
    python3 benchmarks/rounds_on_gpu.py --report RESULTS.json [--line 1.3]                                    # anywhere

FOLDER is one `benchmarks.gpu prepare` wrote ($MANIFEST names its manifest
as for `run_on_gpu.py`); the entries timed are those of the variants, the
mask and a shape whose name holds the part given (all where not given).
The report gives, per entry, the median of its rounds and its ratio to the
baseline's: the median, the range and the rounds past the line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Callable

import run_on_gpu


def run(folder: Path, out: Path, rounds: int, baseline: str, keep: Callable[[dict], bool]) -> None:
    entries = [e for e in json.loads((folder / os.environ.get("MANIFEST", "manifest.json")).read_text())
               if "vmfb" in e and "compile_error" not in e and keep(e)]
    for entry in entries:
        for spec in entry["inputs"]:
            run_on_gpu.random_input(folder, spec)
    run_on_gpu.warm_jit_cache(folder, entries)
    records = [{**{k: e[k] for k in ("shape", "mask", "variant")}, "ms": []} for e in entries]
    for index in range(rounds):
        for entry, record in zip(entries, records):
            try:
                record["ms"].append(run_on_gpu.iree_median_ms(folder, entry))
            except Exception as err:  # a lost sample must not lose the rounds
                record["ms"].append(None)
                record["error"] = str(err)[-500:]
        print(f"round {index + 1} of {rounds}", flush=True)
        out.write_text(json.dumps({"baseline": baseline, "entries": records}, indent=1))


def report(results: Path, line: float) -> None:
    data = json.loads(results.read_text())
    entries, baseline = data["entries"], data["baseline"]
    base = {(e["shape"], e["mask"]): e["ms"] for e in entries if e["variant"] == baseline}
    print(f"| shape | mask | variant | rounds | median ms | {baseline} median ms | "
          f"ratio median | ratio range | rounds over {line} |")
    print("|---|---|---|---|---|---|---|---|---|")
    for e in entries:
        other = base.get((e["shape"], e["mask"]))
        if e["variant"] == baseline or other is None:
            continue
        pairs = [(a, b) for a, b in zip(e["ms"], other) if a is not None and b is not None]
        if not pairs:
            print(f"| {e['shape']} | {e['mask']} | {e['variant']} | 0 | - | - | - | - | - |")
            continue
        ratios = [a / b for a, b in pairs]
        print(f"| {e['shape']} | {e['mask']} | {e['variant']} | {len(pairs)} "
              f"| {statistics.median(a for a, _ in pairs):.4f} | {statistics.median(b for _, b in pairs):.4f} "
              f"| {statistics.median(ratios):.3f} | {min(ratios):.3f}-{max(ratios):.3f} "
              f"| {sum(r > line for r in ratios)} |")


def main(argv: list[str]) -> None:
    if argv[0] == "--report":
        parser = argparse.ArgumentParser(prog="rounds_on_gpu.py --report")
        parser.add_argument("results", type=Path)
        parser.add_argument("--line", type=float, default=1.3)
        args = parser.parse_args(argv[1:])
        report(args.results, args.line)
        return
    parser = argparse.ArgumentParser(prog="rounds_on_gpu.py")
    parser.add_argument("folder", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("rounds", type=int)
    parser.add_argument("--baseline", default="iree-matmul")
    parser.add_argument("--variants", default="", help="comma-separated; all where empty")
    parser.add_argument("--mask", default="")
    parser.add_argument("--shape", default="", help="a part of the shape's name")
    args = parser.parse_args(argv)
    variants = set(filter(None, args.variants.split(",")))

    def keep(entry: dict) -> bool:
        return ((not variants or entry["variant"] in variants) and args.mask in ("", entry["mask"])
                and args.shape in entry["shape"])

    run(args.folder, args.results, args.rounds, args.baseline, keep)

if __name__ == "__main__":
    main(sys.argv[1:])
