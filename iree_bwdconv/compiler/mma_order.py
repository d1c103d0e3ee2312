"""The contractions IREE 3.13's CUDA code computes wrongly in f16 and bf16.

Where a contraction's loops put the innermost dim of its second operand's
rows (N) before the innermost of its first operand's (M), IREE's CUDA code for the MMA
intrinsics returns wrong numbers: 112%-186% of the largest value off,
where the same contraction with its loops in (batch, M, N, K) order is
right, whatever the operands' and the result's layouts
(`benchmarks/mma_order.py`, docs/performance-journal.md "Loop order and the MMA
intrinsics"). IREE keeps a generic's loop order and folds unit dims
before it forms dispatches, so the order that counts is the dispatch's:
this module reads it from IREE's configured executables
(`--iree-hal-dump-executable-configurations-to`), after IREE's own
folding, and `pipeline` refuses a CUDA module that holds one.

Only contractions are judged: each operand indexed by loop dims alone.
A convolution's window (`oh + kh`) is IREE's to order, and its named
convolutions with a window were right.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from iree.compiler import ir

from iree_bwdconv.compiler import iree_ir


@dataclass(frozen=True)
class DimRoles:
    """A contraction's loop dims by role, each a sorted tuple of positions."""

    batch: tuple[int, ...]
    m: tuple[int, ...]  # the first operand's and the result's, not the second's
    n: tuple[int, ...]  # the second operand's and the result's, not the first's
    k: tuple[int, ...]  # both operands', not the result's


# Where a dim appears (first operand, second operand, result) -> its role.
_ROLE_BY_PLACES = {(True, True, True): "batch", (True, False, True): "m", (False, True, True): "n",
                   (True, True, False): "k"}


def dim_roles(lhs: Sequence[Optional[int]], rhs: Sequence[Optional[int]],
              result: Sequence[Optional[int]], num_dims: int) -> Optional[DimRoles]:
    """Each argument is an operand's indexing map as the loop dim of each
    of its results (None for any other expression). None where the op is
    not a contraction: an expression other than a dim, or a dim that
    fits no role."""
    operands = (lhs, rhs, result)
    if any(dim is None for operand in operands for dim in operand):
        return None
    dims: dict[str, list[int]] = {"batch": [], "m": [], "n": [], "k": []}
    for dim in range(num_dims):
        role = _ROLE_BY_PLACES.get(tuple(dim in operand for operand in operands))
        if role is None:
            return None
        dims[role].append(dim)
    return DimRoles(**{role: tuple(found) for role, found in dims.items()})


def n_before_m(roles: DimRoles) -> bool:
    """Whether N's innermost loop comes before M's: the order IREE 3.13's
    CUDA MMA code gets wrong. Only the innermost dim of each counts: an
    outer dim of N before M, as the images of the GEMM with the weight
    first, was right."""
    return bool(roles.m and roles.n) and max(roles.n) < max(roles.m)


@dataclass(frozen=True)
class Misordered:
    """A dispatch whose contraction has the order `n_before_m` names."""

    dispatch: str
    maps: str
    roles: DimRoles

    def __str__(self) -> str:
        return f"{self.dispatch}: loops {self.roles} (N before M), indexing maps {self.maps}"


def _dims_of(map_attr: ir.Attribute) -> tuple[list[Optional[int]], int]:
    affine_map = ir.AffineMapAttr(map_attr).value
    dims = [expr.position if isinstance(expr, ir.AffineDimExpr) else None for expr in affine_map.results]
    return dims, affine_map.n_dims


def _is_mma_contraction(op: ir.Operation) -> bool:
    return (op.name.startswith("linalg.") and "indexing_maps" in op.attributes
            and "lowering_config" in op.attributes and "mma_kind" in str(op.attributes["lowering_config"]))


def _function_name(op: ir.Operation) -> str:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return ir.StringAttr(parent.attributes["sym_name"]).value if parent is not None else "?"


def misordered(configured: str) -> list[Misordered]:
    """The contractions of one configured executable (IREE's dump) whose
    loops run N before M and that IREE lowers to MMA intrinsics."""
    found = []
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(configured)
        for op in iree_ir.ops_where(module, _is_mma_contraction):
            maps = list(ir.ArrayAttr(op.attributes["indexing_maps"]))
            inputs = len(op.operands) - len(op.results)
            if inputs < 2:
                continue
            (lhs, num_dims), (rhs, _), (result, _) = (_dims_of(maps[i]) for i in (0, 1, inputs))
            roles = dim_roles(lhs, rhs, result, num_dims)
            if roles is not None and n_before_m(roles):
                found.append(Misordered(_function_name(op), str(op.attributes["indexing_maps"]), roles))
    return found


def misordered_in(folder: Path, since: float = 0.0) -> list[Misordered]:
    """Every such contraction in a folder of configured executables (those
    written at `since`, a time.time(), or later: a folder that a caller
    named may hold an earlier compile's)."""
    paths = sorted(path for path in folder.glob("*.mlir") if path.stat().st_mtime >= since)
    return [found for path in paths for found in misordered(path.read_text())]
