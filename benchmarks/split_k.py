"""H100 timings of the weight gradient with and without split-K: the
matmul over an im2col gather as one reduction over every batch and output
position, against the same reduction split into partial sums (about 2^20,
2^22 or 2^24 partial outputs, chunks of at least 512 terms) and summed.
The evidence for `Tuning.split_target_partials` (docs/performance-journal.md).

    ./dev python -m benchmarks.split_k prepare .bench-split     # here
    python3 benchmarks/run_on_gpu.py .bench-split results.json  # there
    ./dev python -m benchmarks.split_k report results.json      # here
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator
from unittest import mock

from iree_bwdconv import lowering
from iree_bwdconv import options as lowering_options
from iree_bwdconv.plan import grad_weight as gw
from iree_bwdconv.plan import tuning

from . import modules
from .gpu import print_variant_table
from .forms import RESNET50_H100
from .shapes import SHAPES, Shape

GRAD_WEIGHT_ONLY = (False, True, False)
TARGETS = {"split-2^20": 1 << 20, "split-2^22": 1 << 22, "split-2^24": 1 << 24}


@contextlib.contextmanager
def _forced(im2col: bool | None, target_partials: int) -> Iterator[None]:
    """The lowering with the weight gradient's form and split forced."""
    with contextlib.ExitStack() as stack:
        if im2col is not None:
            stack.enter_context(mock.patch.object(gw, "by_im2col", lambda spec, options, _: (im2col, "forced")))
        stack.enter_context(mock.patch.dict(tuning.TUNING, {
            target: dataclasses.replace(record, split_target_partials=target_partials)
            for target, record in tuning.TUNING.items()}))
        yield


def variants(shape: Shape) -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (MLIR text, extra iree-compile flags)."""
    raw = modules.raw_torch(shape, GRAD_WEIGHT_ONLY)
    out = {"upstream": (raw, modules.UPSTREAM_FLAGS)}
    options = lowering_options.from_environment("cuda")
    lower = lambda: lowering.lower_torch(lowering.parse_torch_mlir(raw), options=options)  # noqa: E731
    with _forced(False, 0):
        out["contraction"] = (lower(), ())
    with _forced(False, TARGETS["split-2^22"]):
        out["contraction-split"] = (lower(), ())
    with _forced(True, 0):
        out["im2col"] = (lower(), ())
    for name, partials in TARGETS.items():
        with _forced(True, partials):
            out[name] = (lower(), ())
    return out


def prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest, jobs = [], []
    for index, shape in enumerate((*SHAPES, *RESNET50_H100)):
        dy, x, w = modules.example_tensors(shape)
        inputs = ["x".join(map(str, t.shape)) + "x" + shape.dtype for t in (dy, x, w)]
        for name, (text, flags) in variants(shape).items():
            entry = dict(shape=shape.name, mask="grad_weight", variant=name, vmfb=f"s{index}-{name}.vmfb",
                         inputs=inputs)
            manifest.append(entry)
            jobs.append((entry, text, flags))
        eager = dict(n=shape.n, c=shape.c, k=shape.k, hw=shape.hw, kernel=shape.kernel, stride=shape.stride,
                     padding=shape.padding, groups=shape.groups, dtype=shape.dtype)
        manifest.append(dict(shape=shape.name, mask="grad_weight", variant="torch-eager", eager=eager))

    def compile_one(job) -> None:
        entry, text, flags = job
        entry.update(modules.compiled_entry(folder, text, "cuda", flags, **entry))

    with ThreadPoolExecutor(max_workers=2) as pool:  # iree-compile runs outside the GIL
        list(pool.map(compile_one, jobs))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    command, path = sys.argv[1], Path(sys.argv[2])
    names = ["torch-eager", "upstream", "contraction", "contraction-split", "im2col", *TARGETS]
    prepare(path) if command == "prepare" else print_variant_table(path, (*SHAPES, *RESNET50_H100), names)
