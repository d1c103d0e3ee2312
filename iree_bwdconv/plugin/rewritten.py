"""What one stage of `iree-bwdconv-compile` did to a module."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(kw_only=True)
class Rewritten:
    """text: the module with its ops rewritten, or None where none was.
    count: ops rewritten. judged: ops of ours seen, rewritten or kept.
    log: what was done to each op seen, or why not."""

    text: Optional[str] = None
    count: int = 0
    judged: int = 0
    log: list[str] = field(default_factory=list)
