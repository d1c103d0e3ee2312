"""Where the time of a 1x1 strided grad_input goes on the H100: the GEMM in
our NCHW form, the same GEMM channels-last as the named matmul (between
transposes), each with and without placing the result at stride in the
zero-filled grad_input, and IREE's own matmul of the GEMM alone; since
2026-11-25 also ours with other tiles given to IREE (`TILES`,
`tile_override`), the GEMM over flat positions placed by a gather of its
own (`flat-gather1d`, `flat-gather4d`) or by an elementwise weave
(`flat-woven`), the GEMM reading grad_output copied channels-last
(`wf-cl-gather`, `wf-cl-transpose`), and ours without its zero fill or
its tap's gather (`ours-no-fill`, `ours-no-gather`, `ours-neither`;
timing only).

    ./dev python -m benchmarks.gemm_1x1 prepare .bench-1x1     # here
    python3 benchmarks/run_on_gpu.py .bench-1x1 results.json   # there
    ./dev python -m benchmarks.gemm_1x1 report results.json    # here
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

from torch_mlir import ir
from torch_mlir.dialects import arith, func, linalg, tensor

from iree_bwdconv.builders import contraction_forms as forms
from iree_bwdconv.builders import linalg_builders as lb
from iree_bwdconv import lowering
from iree_bwdconv.builders import tap_tables

from . import modules, tile_override
from .gpu import grad_input_entries, print_variant_table
from .forms import RESNET50_H100
from .shapes import SHAPES, Shape

ONE_BY_ONE = [s for s in (*SHAPES, *RESNET50_H100) if s.kernel == 1]


def _module(shape: Shape, body: Callable[[ir.Value, ir.Value], ir.Value]) -> str:
    """func @main(dy, x, w) -> body(dy, w), built with our builders."""
    dy, x, w = modules.example_tensors(shape)
    with lowering.new_context(), ir.Location.unknown():
        elem = lb.element_type(shape.dtype)
        types = [ir.RankedTensorType.get(list(t.shape), elem) for t in (dy, x, w)]
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            @func.FuncOp.from_py_func(*types, name="main")
            def main(dy_v, x_v, w_v):
                return body(dy_v, w_v)
        return str(module)


def _nchw_gemm(shape: Shape, dy: ir.Value, w: ir.Value) -> ir.Value:
    """dx[n,c,o] = sum_k dy[n,k,o] w[k,c]: the 1x1 convolution ours emits."""
    n, k, oh, ow = lb.sizes_of(dy)
    filt = forms.transpose(w, [1, 0, 2, 3])
    init = lb.zeros([n, shape.c, oh, ow], lb.element_type("f32"))
    return lb.convert(forms.conv(dy, filt, init, [1, 1], [1, 1]), lb.element_type(shape.dtype))


def _rows_gemm(shape: Shape, dy: ir.Value, w: ir.Value, named: bool) -> ir.Value:
    """rows[(n,o),c] = dy^T[(n,o),k] @ w[k,c], channels-last."""
    n, k, oh, ow = lb.sizes_of(dy)
    rows = forms.collapse_range(forms.transpose(dy, [0, 2, 3, 1]), 0, 3)
    taps = forms.collapse_range(w, 1, 4)
    init = lb.zeros([n * oh * ow, shape.c], lb.element_type("f32"))
    return lb.convert(forms.matmul(rows, taps, init, named), lb.element_type(shape.dtype))


def _placed(shape: Shape, dy: ir.Value, out_nchw: ir.Value) -> ir.Value:
    n = lb.sizes_of(dy)[0]
    if shape.stride == 1:
        return out_nchw
    zeros = lb.zeros([n, shape.c, *shape.hw], lb.element_type(shape.dtype))
    return lb.insert_strided(out_nchw, zeros, [0, 0, 0, 0], [1, 1, shape.stride, shape.stride])


def _rows_to_nchw(dy: ir.Value, rows: ir.Value) -> ir.Value:
    n, _, oh, ow = lb.sizes_of(dy)
    return forms.transpose(lb.expand_dim(lb.expand_dim(rows, 0, (n, oh * ow)), 1, (oh, ow)), [0, 3, 1, 2])


def _woven(shape: Shape, dy: ir.Value, rows: ir.Value) -> ir.Value:
    """One elementwise pass: transpose back and interleave the zeros."""
    n = lb.sizes_of(dy)[0]
    if shape.stride == 1:
        return _rows_to_nchw(dy, rows)
    grid = forms.interleave({(0, 0): _rows_to_nchw(dy, rows)}, [shape.stride] * 2,
                            lb.element_type(shape.dtype))
    grid = forms.collapse_range(forms.collapse_range(grid, 4, 6), 2, 4)
    return lb.extract(grid, [0, 0, 0, 0], [n, shape.c, *shape.hw])


def _unit_dims(out_nchw: ir.Value) -> ir.Value:
    """[n, c, oh, ow] -> [n, c, oh, 1, ow, 1]."""
    n, c, oh, ow = lb.sizes_of(out_nchw)
    return lb.expand_dim(lb.expand_dim(out_nchw, 3, (ow, 1)), 2, (oh, 1))


def _crop(shape: Shape, grid6: ir.Value) -> ir.Value:
    n, c = lb.sizes_of(grid6)[:2]
    grid = forms.collapse_range(forms.collapse_range(grid6, 4, 6), 2, 4)
    return lb.extract(grid, [0, 0, 0, 0], [n, c, *shape.hw])


def _inserted_6d(shape: Shape, out_nchw: ir.Value) -> ir.Value:
    """The result into the residue-0 slab of a zero [n, c, oh, s, ow, s] grid
    (a unit-stride insert), collapsed and cropped."""
    if shape.stride == 1:
        return out_nchw
    n, c, oh, ow = lb.sizes_of(out_nchw)
    s = shape.stride
    grid = lb.zeros([n, c, oh, s, ow, s], lb.element_type(shape.dtype))
    source = _unit_dims(out_nchw)
    static, dyn = lb.static_and_dynamic(lb.sizes_of(source))
    grid = tensor.InsertSliceOp(source, grid, [], dyn, [], [0] * 6, static, [1] * 6).result
    return _crop(shape, grid)


def _padded_6d(shape: Shape, out_nchw: ir.Value) -> ir.Value:
    """The result padded with zeros from [.., oh, 1, ow, 1] to [.., oh, s, ow, s]."""
    if shape.stride == 1:
        return out_nchw
    s = shape.stride
    return _crop(shape, lb.pad(_unit_dims(out_nchw), [0] * 6, [0, 0, 0, s - 1, 0, s - 1]))


def _pairs(shape: Shape, out_nchw: ir.Value) -> ir.Value:
    """The result with a zero after each element along w ([.., ow, s], so
    that every stored word is whole), then inserted with stride s along h
    only. Stride-2 shapes without padding only."""
    if shape.stride == 1:
        return out_nchw
    n, c, oh, ow = lb.sizes_of(out_nchw)
    s = shape.stride
    elem = lb.element_type(shape.dtype)
    num = 5
    d = lb.dims(num)
    out = tensor.EmptyOp([n, c, oh, ow, s], elem).result

    @linalg.generic([out_nchw], [out], [lb.affine_map(num, d[:4]), ir.AffineMap.get_identity(num)],
                    [lb.PARALLEL] * num)
    def paired(a, _):
        first = arith.cmpi(arith.CmpIPredicate.eq, linalg.IndexOp(4).result,
                           arith.constant(ir.IndexType.get(), 0))
        return arith.select(first, a, arith.constant(elem, 0.0))

    rows = lb.extract(forms.collapse_range(paired, 3, 5), [0, 0, 0, 0], [n, c, oh, shape.hw[1]])
    zeros = lb.zeros([n, c, *shape.hw], elem)
    return lb.insert_strided(rows, zeros, [0, 0, 0, 0], [1, 1, s, 1])


def _row_major_tap(w: ir.Value) -> ir.Value:
    """T[c, f] = w[f, c, 0, 0], gathered as the lowering gathers it."""
    return tap_tables.one_tap(lb.expand_dim(w, 0, (1, lb.sizes_of(w)[0])), [0, 0])


def _channels_last_by_gather(dy: ir.Value) -> ir.Value:
    """dy[n, k, oh, ow] copied to [n, oh, ow, k] by a gather over a flat
    index (a dispatch of its own in IREE 3.13, as `tap_tables.one_tap` is)."""
    n, k, oh, ow = lb.sizes_of(dy)
    out = tensor.EmptyOp([n * oh * ow * k], ir.RankedTensorType(dy.type).element_type).result

    @linalg.generic([], [out], [ir.AffineMap.get_identity(1)], [lb.PARALLEL])
    def flat(_):
        i, y, x, f = tap_tables.unflatten(linalg.IndexOp(0).result, [n, oh, ow, k])
        return tensor.extract(dy, [i, f, y, x])

    return lb.expand_axis(flat, 0, [n, oh, ow, k])


def _weight_first_cl(shape: Shape, dy: ir.Value, w: ir.Value, gather: bool) -> ir.Value:
    """dx[n,c,oh,ow] = sum_f T[c,f] dy[n,oh,ow,f], dy channels-last (reduction
    innermost and aligned in both operands), placed at stride."""
    rows = _channels_last_by_gather(dy) if gather else forms.transpose(dy, [0, 2, 3, 1])
    n, oh, ow, k = lb.sizes_of(rows)
    taps = _row_major_tap(w)
    n_, c, y, x, f = lb.dims(5)
    maps = [lb.affine_map(5, [c, f]), lb.affine_map(5, [n_, y, x, f]), lb.affine_map(5, [n_, c, y, x])]
    init = lb.zeros([n, shape.c, oh, ow], lb.element_type("f32"))
    out = lb.contraction(taps, rows, init, maps, [lb.PARALLEL] * 4 + [lb.REDUCTION])
    return _placed(shape, dy, lb.convert(out, lb.element_type(shape.dtype)))


def _flat_weight_first(shape: Shape, dy: ir.Value, w: ir.Value) -> ir.Value:
    """rows[n, c, p] = sum_f T[c, f] dy[n, f, p] over flat positions p (the
    stride-1 form, tiles of 64 positions), rounded to the data type."""
    n, k, oh, ow = lb.sizes_of(dy)
    source = forms.collapse_range(dy, 2, 4)
    init = lb.zeros([n, shape.c, oh * ow], lb.element_type("f32"))
    taps = _row_major_tap(w)
    return lb.convert(forms.weight_first_gemm(taps, source, init), lb.element_type(shape.dtype))


def _placed_by_gather(shape: Shape, dy: ir.Value, rows: ir.Value, flat: bool) -> ir.Value:
    """grad_input[n, c, h, w] = rows[n, c, (h/s)*ow + w/s] where s divides h and
    w, else 0, by one gather (padding 0 only): over grad_input's flat index
    (`flat`) or its four dims."""
    n, c, _ = lb.sizes_of(rows)
    oh, ow = lb.sizes_of(dy)[2:]
    height, width = shape.hw
    elem = lb.element_type(shape.dtype)
    index_type = ir.IndexType.get()
    const = lambda v: arith.constant(index_type, v)  # noqa: E731
    sizes = [n, c, height, width]
    out = tensor.EmptyOp([n * c * height * width] if flat else sizes, elem).result
    rank = 1 if flat else 4

    @linalg.generic([], [out], [ir.AffineMap.get_identity(rank)], [lb.PARALLEL] * rank)
    def placed(_):
        if flat:
            i, f, y, x = tap_tables.unflatten(linalg.IndexOp(0).result, sizes)
        else:
            i, f, y, x = (linalg.IndexOp(a).result for a in range(4))
        step = const(shape.stride)
        on_grid = arith.andi(arith.cmpi(arith.CmpIPredicate.eq, arith.remui(y, step), const(0)),
                             arith.cmpi(arith.CmpIPredicate.eq, arith.remui(x, step), const(0)))
        p = arith.addi(arith.muli(arith.divui(y, step), const(ow)), arith.divui(x, step))
        value = tensor.extract(rows, [i, f, p])
        return arith.select(on_grid, value, arith.constant(elem, 0.0))

    return lb.expand_axis(placed, 0, sizes) if flat else placed


def _flat_woven(shape: Shape, dy: ir.Value, w: ir.Value) -> ir.Value:
    """The GEMM over flat positions left in f32, then one elementwise pass
    over a [n, c, oh, s, ow, s] grid that rounds it and writes the zeros
    (`interleave` with one part), cropped to grad_input."""
    n, k, oh, ow = lb.sizes_of(dy)
    init = lb.zeros([n, shape.c, oh * ow], lb.element_type("f32"))
    rows = forms.weight_first_gemm(_row_major_tap(w), forms.collapse_range(dy, 2, 4), init)
    if shape.stride == 1:
        return lb.convert(lb.expand_dim(rows, 2, (oh, ow)), lb.element_type(shape.dtype))
    grid = forms.interleave({(0, 0): lb.expand_dim(rows, 2, (oh, ow))}, [shape.stride] * 2,
                            lb.element_type(shape.dtype))
    return _crop(shape, grid)


def _ours_without(shape: Shape, dy: ir.Value, w: ir.Value, fill: bool, gather: bool) -> ir.Value:
    """Ours (the weight-first GEMM, its result rounded and inserted with
    stride into zeros) without the zero fill of grad_input (`fill`: the
    insert goes into an empty tensor) or without the tap's gather
    (`gather`: the weight's bytes reshaped to [c, f], not transposed).
    Timing only: neither computes grad_input."""
    n, k, oh, ow = lb.sizes_of(dy)
    taps = _row_major_tap(w) if gather else lb.expand_axis(forms.collapse_range(w, 0, 4), 0, [shape.c, k])
    init = lb.zeros([n, shape.c, oh, ow], lb.element_type("f32"))
    rows = lb.convert(forms.weight_first_gemm(taps, dy, init), lb.element_type(shape.dtype))
    sizes, elem = [n, shape.c, *shape.hw], lb.element_type(shape.dtype)
    into = lb.zeros(sizes, elem) if fill else tensor.EmptyOp(sizes, elem).result
    return lb.insert_strided(rows, into, [0, 0, 0, 0], [1, 1, shape.stride, shape.stride])


# Tiles for the strided GEMM's loops (n, c, oh, ow, f) given to IREE
# (`tile_override`): workgroup, subgroup, reduction, threads. IREE's own
# choice on these shapes is ([2, 128, 1, 32, 0], [2, 4, 1, 2, 0], [0, 0, 0, 0, 2], 128).
TILES = {
    "rows4": ([1, 128, 4, 32, 0], [1, 4, 2, 2, 0], [0, 0, 0, 0, 2], 256),
    "k64": ([2, 128, 1, 32, 0], [2, 4, 1, 2, 0], [0, 0, 0, 0, 4], 128),
    "c256": ([1, 256, 2, 32, 0], [1, 4, 2, 2, 0], [0, 0, 0, 0, 2], 256),
}


def _tiled(shape: Shape, name: str) -> str:
    workgroup, subgroup, reduction, threads = TILES[name]
    padding = [*workgroup[:4], 32]
    info = tile_override.compilation_info(workgroup, subgroup, reduction, padding, threads, shape.dtype)
    return tile_override.with_tiles(modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda"), info)


def variants(shape: Shape) -> dict[str, str]:
    if shape.stride > 1:
        tiled = {f"ours-{name}": _tiled(shape, name) for name in TILES}
    else:
        tiled = {}
    return {
        **tiled,
        "flat-gather1d": _module(shape, lambda dy, w: _placed_by_gather(shape, dy, _flat_weight_first(shape, dy, w), True)),
        "flat-woven": _module(shape, lambda dy, w: _flat_woven(shape, dy, w)),
        "ours-no-fill": _module(shape, lambda dy, w: _ours_without(shape, dy, w, False, True)),
        "ours-no-gather": _module(shape, lambda dy, w: _ours_without(shape, dy, w, True, False)),
        "ours-neither": _module(shape, lambda dy, w: _ours_without(shape, dy, w, False, False)),
        "flat-gather4d": _module(shape, lambda dy, w: _placed_by_gather(shape, dy, _flat_weight_first(shape, dy, w), False)),
        "wf-cl-gather": _module(shape, lambda dy, w: _weight_first_cl(shape, dy, w, True)),
        "wf-cl-transpose": _module(shape, lambda dy, w: _weight_first_cl(shape, dy, w, False)),
        "nchw-pairs": _module(shape, lambda dy, w: _pairs(shape, _nchw_gemm(shape, dy, w))),
        "nchw-insert-6d": _module(shape, lambda dy, w: _inserted_6d(shape, _nchw_gemm(shape, dy, w))),
        "nchw-pad-6d": _module(shape, lambda dy, w: _padded_6d(shape, _nchw_gemm(shape, dy, w))),
        "ours": modules.ours(shape, modules.GRAD_INPUT_ONLY, "cuda"),
        "nchw-gemm-only": _module(shape, lambda dy, w: _nchw_gemm(shape, dy, w)),
        "cl-named-gemm-only": _module(shape, lambda dy, w: _rows_gemm(shape, dy, w, True)),
        "cl-named": _module(shape, lambda dy, w: _placed(shape, dy, _rows_to_nchw(
            dy, _rows_gemm(shape, dy, w, True)))),
        "cl-named-woven": _module(shape, lambda dy, w: _woven(shape, dy, _rows_gemm(shape, dy, w, True))),
        "cl-generic": _module(shape, lambda dy, w: _placed(shape, dy, _rows_to_nchw(
            dy, _rows_gemm(shape, dy, w, False)))),
    }


def prepare(folder: Path, names: Optional[Sequence[str]] = None) -> None:
    """Every variant, or those in `names`, for every 1x1 shape."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, shape in enumerate(ONE_BY_ONE):
        texts = {name: text for name, text in variants(shape).items() if not names or name in names}
        manifest += grad_input_entries(folder, f"g{index}", shape, texts)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    command, path = sys.argv[1], Path(sys.argv[2])
    prepare(path, sys.argv[3:]) if command == "prepare" else print_variant_table(path, ONE_BY_ONE)
