"""The IREE target a lowering is for. The linalg forms IREE 3.13 compiles
best differ per target (docs/performance.md), so the patterns ask."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

TARGETS = ("cpu", "gfx942", "cuda")
DEFAULT = "cpu"
_current: contextvars.ContextVar[str] = contextvars.ContextVar("iree_bwdconv_target", default=DEFAULT)


def current() -> str:
    return _current.get()


def half_precision_on_gpu(dtype: str) -> bool:
    """f16/bf16 on a GPU target. IREE 3.13's CUDA code computed several
    f16/bf16 contractions wrongly on the H100 where f32 and the CPU were
    right (docs/performance.md, "Read first"); the patterns avoid those
    forms under this test. gfx942's code comes from the same IREE pipeline
    and is treated alike, untested."""
    return current() != "cpu" and dtype in ("f16", "bf16")


def f32_on_gpu(dtype: str) -> bool:
    """f32 on a GPU target. Every H100 figure the GPU forms were first
    drawn from was of f16/bf16 layers; in f32 IREE 3.13 has no MMA for
    them and compiled several of those forms 3x-18x slower than a plain
    matmul layout (docs/performance.md, "f32 on GPUs"). gfx942 takes the
    same forms, unmeasured (no MI300 here)."""
    return current() != "cpu" and dtype == "f32"


def check(target: str) -> str:
    if target not in TARGETS:
        raise ValueError(f"target={target!r}: expected one of {', '.join(TARGETS)}")
    return target


@contextlib.contextmanager
def lowering_for(target: str) -> Iterator[None]:
    token = _current.set(check(target))
    try:
        yield
    finally:
        _current.reset(token)
