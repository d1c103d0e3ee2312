"""Batch norm's per-channel sums split in two on GPU targets: over each
image's positions first, then over the batch.

Batch norm's statistics (`var_mean` over batch and positions) and its
backward's sums (`sum` over the same) keep one value per channel. IREE
3.13's GPU code gives each such value one workgroup, which reduces the
whole batch alone: on an H200 these were the 14 costliest dispatches of a
ResNet-50 training step in AMP (batch 32 at 128x128), 0.8 ms for 16 MB
that the GPU reads in microseconds, with 64 workgroups on 132 SMs
(docs/gpu.md, "Where a step goes"). Summed per image first, the long
reductions are one per image and channel, each over contiguous positions,
and the second sums a few values per channel.

An FX pass on each aten graph before import (`graph_compiler`), for GPU
targets. Float32 and float64 only: in f16 the partial sums would be
rounded once more than torch rounds them. `var_mean` becomes torch's own
two passes (the mean, then the mean square of the differences), each sum
split. Not yet timed on a GPU.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Optional, Sequence

import torch

aten = torch.ops.aten

GPU_TARGETS = ("cuda", "gfx942")
# Split where a channel's sum spans at least this many values of at least
# two images; below it the second dispatch's launch would cost more than
# the long reduction saves.
MIN_VALUES = 4096


def applies_to(target: str) -> bool:
    return target in GPU_TARGETS


def _value(node: Any) -> Optional[torch.Tensor]:
    value = getattr(node, "meta", {}).get("val")
    return value if isinstance(value, torch.Tensor) else None


def batch_and_positions(x: torch.Tensor, dims: Optional[Sequence[int]]) -> Optional[list[int]]:
    """The position dims, where `dims` are exactly the batch and every
    position dim of an [N, C, *positions] tensor worth splitting; else None."""
    rank = x.dim()
    if rank < 3 or dims is None or x.dtype not in (torch.float32, torch.float64):
        return None
    shape = [int(n) if isinstance(n, int) else None for n in x.shape]
    if None in shape:
        return None
    positions = list(range(2, rank))
    if sorted(d % rank for d in dims) != [0, *positions]:
        return None
    if shape[0] < 2 or math.prod(shape[0:1] + shape[2:]) < MIN_VALUES:
        return None
    return positions


def _call(graph: torch.fx.Graph, target: Any, args: tuple, kwargs: Optional[dict] = None) -> torch.fx.Node:
    """A new node with its fake value, which torch-mlir's importer reads for its type."""
    node = graph.call_function(target, args, kwargs or {})
    fake = [_value(a) if isinstance(a, torch.fx.Node) else a for a in args]
    node.meta["val"] = target(*fake, **(kwargs or {}))
    return node


def _split_sum(graph: torch.fx.Graph, x: torch.fx.Node, dims: Sequence[int], positions: list[int],
               keepdim: bool) -> torch.fx.Node:
    per_image = _call(graph, aten.sum.dim_IntList, (x, positions, True))
    return _call(graph, aten.sum.dim_IntList, (per_image, list(dims), keepdim))


def _rewrite_sum(graph: torch.fx.Graph, node: torch.fx.Node) -> bool:
    x = node.args[0]
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    if node.kwargs.get("dtype") is not None or _value(x) is None:
        return False
    positions = batch_and_positions(_value(x), dims)
    if positions is None:
        return False
    with graph.inserting_before(node):
        total = _split_sum(graph, x, dims, positions, keepdim)
    node.replace_all_uses_with(total)
    graph.erase_node(node)
    return True


def _rewrite_var_mean(graph: torch.fx.Graph, node: torch.fx.Node) -> bool:
    x = node.args[0]
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    correction = node.kwargs.get("correction")
    correction = 1 if correction is None else correction
    keepdim = node.kwargs.get("keepdim", False)
    users = list(node.users)
    if _value(x) is None or not all(u.target is operator.getitem and u.args[1] in (0, 1) for u in users):
        return False
    positions = batch_and_positions(_value(x), dims)
    if positions is None:
        return False
    shape = _value(x).shape
    count = shape[0] * math.prod(shape[2:])
    with graph.inserting_before(node):
        mean = _call(graph, aten.div.Scalar, (_split_sum(graph, x, dims, positions, True), count))
        diff = _call(graph, aten.sub.Tensor, (x, mean))
        square = _call(graph, aten.mul.Tensor, (diff, diff))
        var = _call(graph, aten.div.Scalar, (_split_sum(graph, square, dims, positions, True), count - correction))
        if not keepdim:
            mean = _call(graph, aten.squeeze.dims, (mean, list(dims)))
            var = _call(graph, aten.squeeze.dims, (var, list(dims)))
    for user in users:
        user.replace_all_uses_with(var if user.args[1] == 0 else mean)
        graph.erase_node(user)
    graph.erase_node(node)
    return True


_REWRITES = {aten.sum.dim_IntList: _rewrite_sum, aten.var_mean.correction: _rewrite_var_mean}


def split_batch_reductions(gm: torch.fx.GraphModule) -> int:
    """Rewrites `gm` in place; how many reductions it split."""
    split = 0
    for node in list(gm.graph.nodes):
        rewrite = _REWRITES.get(node.target) if node.op == "call_function" else None
        if rewrite is not None and rewrite(gm.graph, node):
            split += 1
    if split:
        gm.graph.lint()
        gm.recompile()
    return split
