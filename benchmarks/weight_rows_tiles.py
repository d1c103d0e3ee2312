"""The tile IREE 3.13 gives the output channels of `weight_rows`' contraction
on CUDA: where it does not divide them, the contraction reads past
grad_output's last channel, and read in place that faulted on the GPU
(docs/performance-journal.md, "The weight rows' tiles"). Static: compiled here to
IREE's executable configurations, nothing runs.

    ./dev python -m benchmarks.weight_rows_tiles   # a table, one row a layer

Every layer's rows are compiled, those the rule sends to im2col too (to
show what the rule avoids); the last column is the rule's form.
"""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple
from unittest import mock

from iree_bwdconv import functional, geometry
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import grad_weight as gw
from iree_bwdconv.plan.tuning import for_target
from iree_bwdconv.spec import ConvBackwardSpec

from . import gpu_compile_sweep


class Layer(NamedTuple):
    n: int
    c: int
    f: int
    size: tuple[int, int]
    stride: int = 1


# In place (positions a multiple of 16) and padded, small and large, f a
# multiple of 128, and f an odd multiple of 64 where the tile is 64 or 128.
LAYERS = tuple(Layer(n, c, f, size, stride)
               for f in (64, 192, 704, 1344, 1984, 2048)
               for n, c, size, stride in ((8, 64, (28, 28), 1), (32, 512, (56, 56), 1), (8, 1024, (40, 44), 1),
                                          (32, 1024, (28, 28), 1), (8, 2048, (28, 28), 1), (32, 1024, (50, 50), 2)))


def spec_of(layer: Layer, dtype: str = "f16") -> ConvBackwardSpec:
    """grad_weight alone of an ungrouped 1x1 layer (as `gpu_compile_sweep` describes a layer)."""
    rank = len(layer.size)
    kernel, stride, zeros = [1] * rank, [layer.stride] * rank, [0] * rank
    out = geometry.conv_output_size_nd(layer.size, kernel, stride, zeros, [1] * rank)
    described = dict(n=layer.n, c=layer.c, k=layer.f, sizes=list(layer.size), out=list(out), kernel=kernel,
                     stride=stride, padding=zeros, dilation=[1] * rank, groups=1, transposed=False,
                     output_padding=zeros, dtype=dtype)
    return gpu_compile_sweep.spec_of(described, [False, True, False])


def channel_tile(spec: ConvBackwardSpec) -> int:
    """IREE's workgroup tile along the output channels of the rows'
    contraction (the second dim of its iteration space: [split, f, c, ...]).
    Where grad_output's copy has padded channels (`plan.grad_weight.rows_padding`), IREE slices
    the contraction back to the real channels and reads them from the copy."""
    functional.clear_cache()
    ir_text = pipeline.iree_compile_to(functional.lowered(spec, target="cuda"), "cuda", "executable-configurations")
    for function in ir_text.split("func.func @")[1:]:
        name = function.split("(", 1)[0]
        if "_matmul_like_" in name:
            sizes = [int(size) for size in re.search(r"_matmul_like_([0-9x]+)_", name).group(1).split("x")]
            assert sizes[1] == spec.out_channels, name
            tile = re.search(r"workgroup = \[([0-9, ]+)\]", function).group(1)
            return int(tile.split(",")[1])
    raise LookupError("no matmul_like dispatch: the rows' contraction was not emitted")


def rows_tile(spec: ConvBackwardSpec) -> int:
    """`channel_tile` of the rows' contraction, taken whatever the rule says."""
    with mock.patch.object(gw, "rows_apply", lambda _spec, options, tuning: True):
        return channel_tile(spec)


def table_rows() -> Iterator[str]:
    for layer in LAYERS:
        spec = spec_of(layer)
        taken = gw.rows_apply(spec, LoweringOptions(target="cuda"), for_target("cuda"))
        positions, padded_channels = gw.rows_padding(spec, for_target("cuda"))
        tile, channels = rows_tile(spec), layer.f + padded_channels
        in_place = positions == 0
        yield (f"| n{layer.n} c{layer.c} k{layer.f} {layer.size[0]}x{layer.size[1]} s{layer.stride} "
               f"| {'in place' if in_place else f'copied, {channels} channels'} | {tile} "
               f"| {'yes' if channels % tile == 0 else 'NO'} | {'rows' if taken else 'im2col'} |")


if __name__ == "__main__":
    print("| layer (f16) | grad_output | channel tile | tile divides its channels | the rule's form |")
    print("|---|---|---|---|---|")
    for row in table_rows():
        print(row, flush=True)
