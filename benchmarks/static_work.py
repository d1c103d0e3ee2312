"""Static work of grad_input on every benchmark shape (issue: strided data
gradients): multiply-adds executed by contractions over useful ones (those of
the forward convolution), from our linalg IR and from iree-compile's flow IR
for gfx942, with dispatch, splat and slow_memcpy counts; upstream is IREE's
own torch input on the raw export.

    ./dev python -m benchmarks.static_work [MATCH]   # only the shapes whose name MATCH (a regex) finds
"""

from __future__ import annotations

import re
import sys

from iree_bwdconv.compiler import pipeline
from iree_bwdconv.errors import PipelineError

from . import ir_stats, modules
from .shapes import SHAPES, Shape


def row(shape: Shape, mask: tuple[bool, bool, bool]) -> str:
    useful = shape.useful_macs * sum(mask[:2])  # grad_input and grad_weight each do the forward's work
    ours = modules.ours(shape, mask, target="gfx942")
    linalg_macs, _ = ir_stats.contraction_macs(ours)
    ours_flow = ir_stats.flow_stats(pipeline.iree_compile_to(ours, "gfx942", "flow"))
    try:
        up = ir_stats.flow_stats(
            pipeline.iree_compile_to(modules.raw_torch(shape, mask), "gfx942", "flow", modules.UPSTREAM_FLAGS))
        upstream = f"{up.macs / useful:.2f} | {up.dispatches} | {up.splats} | {up.slow_memcpy}"
    except PipelineError as err:
        upstream = f"fails: {err.diagnostics.strip().splitlines()[0][:60]} | | |"
    return (f"| {shape.name} | {shape.dtype} | {linalg_macs / useful:.3f} | {ours_flow.macs / useful:.3f} | "
            f"{ours_flow.contractions} | {ours_flow.dispatches} | {ours_flow.splats} | {ours_flow.slow_memcpy} | "
            f"{upstream} |")


def main(match: str = "") -> int:
    for title, mask in (("grad_input only", modules.GRAD_INPUT_ONLY), ("all three gradients", modules.ALL_GRADS)):
        print(f"\n### {title}\n")
        print("| shape | dtype | ours MAC ratio (linalg) | ours MAC ratio (gfx942 flow) | contractions | dispatches "
              "| splats | slow_memcpy | upstream MAC ratio | upstream dispatches | upstream splats | upstream slow_memcpy |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for shape in SHAPES:
            if re.search(match, shape.name):
                print(row(shape, mask), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
