"""Random layers, compiled here for CUDA and run on the H100 against torch's
float64 results by `check_on_gpu.py`: `gpu_check`'s hand-picked cases say
that the layers someone thought of are right; these draws look for a
wrong number in the layers nobody thought of, at sizes where IREE picks
its MMA code and where the 1x1 kernel's forms, tiles and loads switch.

Three families, of which a run alternates those it names ("kernel" and
"layer" unless told):
- "kernel": 1x1 kernels, 1-D and 2-D, strides 1-3 and padding per dim,
  input channels mostly a multiple of 8, f16/bf16 mostly: the hand-written
  kernel's space (`iree_bwdconv.kernels.catalog`), sizes odd and even;
- "kernel-large": the same at the sizes of real networks, up to 1024
  input and 2048 output channels, many tiles and images;
- "layer": `gpu_compile_sweep.draw`'s realistic layers (1-D to 3-D,
  kernels 1-5, dilation, groups, transposed, f32/f16/bf16);
- "small": layers of one image, a few channels and a few positions a dim,
  grouped and dilated more often than not: where IREE folds the unit dims
  of a convolution's result (the CPU stored some such results wrongly,
  docs/performance-journal.md "A batchless convolution on the CPU").
Each asks for a random subset of the three gradients, grad_input always.
With the word `plain` among the families, every layer is lowered in the
plain forms (`LoweringOptions.plain_forms`), which a compile that fails in the
usual ones falls back to.

    ./dev python -m benchmarks.gpu_random_check prepare .bench-random SEED COUNT [FAMILY ...] [plain]
    python3 benchmarks/check_on_gpu.py .bench-random [memcheck]   # there
"""

from __future__ import annotations

import json
import math
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Optional, Sequence

from iree_bwdconv import functional, geometry
from iree_bwdconv import options as lowering_options
from iree_bwdconv.errors import InvalidArgumentError, PipelineError

from .gpu_compile_sweep import arguments, draw as draw_layer, layer as drawn_layer, spec_of, tensor_shapes

_WORKERS = 2


# Elements of dy and x together that a large draw stays under (256 MB in
# f32), which keeps a case to seconds on the GPU machine.
_LARGE_ELEMENTS = 1 << 26


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return round(2 ** rng.uniform(math.log2(low), math.log2(high)))


def draw_kernel_layer(rng: random.Random, large: bool = False) -> Optional[dict]:
    """A random 1x1 layer in the strided 1x1 kernel's space, or None where
    its output would be empty (or, `large`, its tensors too big)."""
    rank = rng.choice((1, 2, 2, 2))
    stride = [rng.choice((1, 2, 2, 2, 3)) for _ in range(rank)]
    padding = [rng.choice((0, 0, 0, 1, 2)) for _ in range(rank)]
    if rng.random() < 0.4:  # where the kernel writes whole blocks or pairs
        stride, padding = [2] * rank, [0] * rank
    high = (4000 if rank == 1 else 240) if large else (300 if rank == 1 else 90)
    sizes = [_log_uniform(rng, 4, high) if large else rng.randint(1, high) for _ in range(rank)]
    out = geometry.conv_output_size_nd(sizes, [1] * rank, stride, padding, [1] * rank)
    if min(out) < 1:
        return None
    if large:
        n, c, k = _log_uniform(rng, 1, 32), 8 * _log_uniform(rng, 1, 128), _log_uniform(rng, 8, 2048)
        if n * (c * math.prod(sizes) + k * math.prod(out)) > _LARGE_ELEMENTS:
            return None
    else:
        c = 8 * rng.randint(1, 34) if rng.random() < 0.9 else rng.randint(1, 40)
        n, k = rng.randint(1, 5), rng.randint(1, 300)
    return dict(n=n, c=c, k=k, sizes=sizes, out=list(out), kernel=[1] * rank,
                stride=stride, padding=padding, dilation=[1] * rank, groups=1, transposed=False,
                output_padding=[0] * rank, dtype=rng.choice(("f16", "f16", "bf16", "bf16", "f32")))


def draw_small_layer(rng: random.Random) -> Optional[dict]:
    """A random layer of one image and tiny sizes, or None where its output
    would be empty."""
    rank = rng.choice((1, 2, 2, 3))
    groups = rng.choice((1, 2, 3))
    c, k = groups * rng.randint(1, 2), groups * rng.randint(1, 3)
    if rng.random() < 0.2:  # depthwise
        groups, c, k = c, c, c
    kernel = [rng.randint(1, 3) for _ in range(rank)]
    stride = [rng.choice((1, 2, 2, 3)) for _ in range(rank)]
    dilation = [rng.choice((1, 1, 2)) for _ in range(rank)]
    padding = [rng.randint(0, 2) for _ in range(rank)]
    transposed = rng.random() < 0.25
    output_padding = [rng.randrange(max(s, d)) if transposed else 0 for s, d in zip(stride, dilation)]
    sizes = [rng.randint(1, 6) for _ in range(rank)]
    return drawn_layer(rng, (1,), c, k, sizes, kernel, stride, padding, dilation, groups, transposed, output_padding)


FAMILIES = {"kernel": draw_kernel_layer, "kernel-large": lambda rng: draw_kernel_layer(rng, large=True),
            "layer": draw_layer, "small": draw_small_layer}


def _mask(rng: random.Random) -> list[bool]:
    return [True, rng.random() < 0.6, rng.random() < 0.4]


def draws(seed: int, count: int, families: Sequence[str] = ("kernel", "layer")) -> list[dict]:
    """`count` layers, alternating `families`, each with its name and mask."""
    rng, layers = random.Random(seed), []
    while len(layers) < count:
        family = families[len(layers) % len(families)]
        layer = FAMILIES[family](rng)
        if layer is not None:
            layers.append(dict(layer, mask=_mask(rng), name=f"r{seed}_{len(layers)}_{family}_{layer['dtype']}"))
    return layers


def case(layer: dict) -> dict:
    """`check_on_gpu.py`'s description of a layer: its tensors' shapes,
    aten.convolution_backward's arguments after them, the results asked for."""
    results = [name for name, wanted in zip(("grad_input", "grad_weight", "grad_bias"), layer["mask"]) if wanted]
    return dict(name=layer["name"], kind="transposed" if layer["transposed"] else "backward", form="auto",
                dtype=layer["dtype"], shapes=tensor_shapes(layer), arguments=arguments(layer, layer["mask"]),
                results=results, layer=layer)


def _compile(folder: Path, described: dict, plain: bool) -> Optional[str]:
    """Compiles a case into folder as the API compiles it for users, its
    second tries included (`functional.compiled_vmfb`; in the plain forms if
    `plain`); None if the lowering refuses it or IREE fails on it (either is
    printed), else its name."""
    try:
        spec = spec_of(described["layer"], described["layer"]["mask"])
    except InvalidArgumentError as err:
        print(described["name"], "refused:", err, flush=True)
        return None
    options = lowering_options.from_environment("cuda")
    try:
        vmfb = functional.compiled_vmfb(spec, (described["shapes"]["dy"][1],),
                                        options.in_plain_forms() if plain else options)
        (folder / f"{described['name']}.vmfb").write_bytes(vmfb)
    except PipelineError as err:
        print(described["name"], "FAILED to compile:", str(err).splitlines()[0], flush=True)
        return None
    print(described["name"], flush=True)
    return described["name"]


def prepare(folder: Path, seed: int, count: int, families: Sequence[str] = ("kernel", "layer"),
            plain: bool = False) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    described = [case(layer) for layer in draws(seed, count, families)]
    with ProcessPoolExecutor(_WORKERS) as pool:
        compiled = set(pool.map(_compile, [folder] * len(described), described, [plain] * len(described)))
    kept = [d for d in described if d["name"] in compiled]
    (folder / "cases.json").write_text(json.dumps(kept, indent=1))
    print(f"{len(kept)} of {len(described)} layers compiled into {folder}")


if __name__ == "__main__":
    if sys.argv[1] != "prepare":
        raise SystemExit(__doc__)
    families = [word for word in sys.argv[5:] if word != "plain"]
    prepare(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), families or ("kernel", "layer"), "plain" in sys.argv[5:])
