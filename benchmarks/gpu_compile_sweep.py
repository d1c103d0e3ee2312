"""Random layers at realistic sizes (n4-n8, 16-64 channels, 1-D up to 220,
2-D up to 40x40, 3-D up to 14^3; kernels 1-5, strides 1-3 per dim,
dilation, groups, transposed, f32/f16/bf16), all three gradients with a
bias, lowered and compiled for CUDA and gfx942: what fails to compile at
sizes where IREE picks its MMA code, which the CI sweep's small cases
never reach. One JSON line per (layer, target), with the first error
lines of a failure and whether the plain forms, which the functional API
and the backend fall back to, compiled.

    ./dev python -m benchmarks.gpu_compile_sweep SEED SECONDS OUT.jsonl
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Optional, Sequence

import torch

from iree_bwdconv import functional, geometry
from iree_bwdconv.compiler import pipeline
from iree_bwdconv import options as lowering_options
from iree_bwdconv.errors import InvalidArgumentError, PipelineError
from iree_bwdconv.spec import ConvBackwardSpec

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
_SIZES = {1: (80, 220), 2: (14, 40), 3: (8, 14)}


def draw(rng: random.Random) -> Optional[dict]:
    """A random layer, or None where its output would be empty."""
    rank = rng.choice((1, 2, 2, 3))
    kernel = [rng.choice((1, 2, 3, 3, 5)) for _ in range(rank)]
    stride = [rng.choice((1, 2, 2, 3)) for _ in range(rank)]
    dilation = [rng.choice((1, 1, 1, 2)) for _ in range(rank)]
    padding = [rng.randrange(0, (d * (k - 1)) // 2 + 2) for k, d in zip(kernel, dilation)]
    sizes = [rng.randrange(*_SIZES[rank]) for _ in range(rank)]
    c, k = rng.choice((16, 32, 64)), rng.choice((16, 32, 64))
    groups = rng.choice((1, 1, 2, 4, 16))
    groups = groups if c % groups == 0 and k % groups == 0 else 1
    transposed = rng.random() < 0.2
    output_padding = [rng.randrange(max(s, d)) if transposed else 0 for s, d in zip(stride, dilation)]
    return layer(rng, (4, 8), c, k, sizes, kernel, stride, padding, dilation, groups, transposed, output_padding)


def layer(rng: random.Random, images: Sequence[int], c: int, k: int, sizes: list[int], kernel: list[int],
          stride: list[int], padding: list[int], dilation: list[int], groups: int, transposed: bool,
          output_padding: list[int]) -> Optional[dict]:
    """A drawn layer with its output sizes, or None where its output would
    be empty; its batch (one of `images`, drawn unless there is one) and
    dtype drawn last."""
    if transposed:
        out = geometry.transposed_output_size_nd(sizes, kernel, stride, padding, dilation, output_padding)
    else:
        out = geometry.conv_output_size_nd(sizes, kernel, stride, padding, dilation)
    if min(out) < 1:
        return None
    n = images[0] if len(images) == 1 else rng.choice(images)
    return dict(n=n, c=c, k=k, sizes=sizes, out=list(out), kernel=kernel, stride=stride, padding=padding,
                dilation=dilation, groups=groups, transposed=transposed, output_padding=output_padding,
                dtype=rng.choice(("f16", "f16", "bf16", "f32")))


def tensor_shapes(layer: dict) -> dict[str, list[int]]:
    """dy, x and w of a layer: the result of its forward (or transposed)
    convolution, that convolution's input, and its weight."""
    n, c, k, groups = layer["n"], layer["c"], layer["k"], layer["groups"]
    weight = [c, k // groups] if layer["transposed"] else [k, c // groups]
    return {"dy": [n, k, *layer["out"]], "x": [n, c, *layer["sizes"]], "w": [*weight, *layer["kernel"]]}


def arguments(layer: dict, mask: Sequence[bool]) -> list:
    """aten.convolution_backward's arguments after its three tensors, for
    the gradients `mask` asks for."""
    return [[layer["k"]], layer["stride"], layer["padding"], layer["dilation"], layer["transposed"],
            layer["output_padding"], layer["groups"], list(mask)]


def spec_of(layer: dict, mask: Sequence[bool]) -> ConvBackwardSpec:
    """The layer's validated configuration (shapes only: no tensor is allocated)."""
    dtype = DTYPES[layer["dtype"]]
    tensors = (torch.empty(size, dtype=dtype, device="meta") for size in tensor_shapes(layer).values())
    return functional.spec_of(*tensors, *arguments(layer, mask))


def _first_errors(layer: dict, target: str, plain: bool = False) -> Optional[str]:
    """The first error lines of the layer's compile for `target` (in the
    plain forms where `plain`), or None."""
    options = lowering_options.from_environment(target)
    options = options.in_plain_forms() if plain else options
    functional.clear_cache()
    try:
        pipeline.iree_compile(functional.lowered(spec_of(layer, [True, True, True]), (layer["k"],), target=options),
                              target)
    except PipelineError as err:
        return " | ".join(line for line in err.diagnostics.splitlines() if "error" in line.lower())[:300]
    return None


def compile_for(layer: dict, target: str) -> str:
    """"ok", or the first errors of the usual forms and whether the plain
    forms (the fallback's) compiled."""
    errors = _first_errors(layer, target)
    if errors is None:
        return "ok"
    plain = _first_errors(layer, target, plain=True)
    return f"FAIL {errors} || plain forms: {'ok' if plain is None else 'FAIL ' + plain}"


def main(seed: int, seconds: float, out_path: str) -> None:
    rng, deadline = random.Random(seed), time.time() + seconds
    with open(out_path, "a") as out:
        while time.time() < deadline:
            layer = draw(rng)
            if layer is None:
                continue
            for target in ("cuda", "gfx942"):
                try:
                    result = compile_for(layer, target)
                except InvalidArgumentError:
                    break
                out.write(json.dumps(dict(layer, target=target, result=result)) + "\n")
                out.flush()


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]), sys.argv[3])
