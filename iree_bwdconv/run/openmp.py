"""torch's OpenMP workers beside IREE's task workers on one CPU.

After each parallel region libgomp (torch's OpenMP runtime) keeps its
workers spinning for GOMP_SPINCOUNT iterations (300,000 unless
OMP_WAIT_POLICY says otherwise) before they sleep. Between two eager ops
that saves a wake-up; while an IREE module runs, the spinning workers take
cores from IREE's task workers. On a 2-core machine the demo CNN's training
step ran 3.5-5.3 ms with the default and 2.3-2.4 ms with a spin count of
3000, eager PyTorch 2.1-2.9 ms either way (docs/training.md).

libgomp reads the variable once, when torch is imported, so only a process
that sets it before importing torch gets it: `iree-bwdconv train` does; a
script using the backend sets it in its environment.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

SPIN_VARIABLE = "GOMP_SPINCOUNT"
SPIN_COUNT = "3000"
# Either variable set by the user is a choice we leave alone.
_USER_CHOICES = (SPIN_VARIABLE, "OMP_WAIT_POLICY")


def limit_spinning() -> bool:
    """Set GOMP_SPINCOUNT for this process if torch is not imported yet and
    the user chose nothing; True when the limit is (now) in effect."""
    if any(name in os.environ for name in _USER_CHOICES):
        return os.environ.get(SPIN_VARIABLE) == SPIN_COUNT
    if "torch" in sys.modules:
        return False
    os.environ[SPIN_VARIABLE] = SPIN_COUNT
    return True


def spinning_advice(torch_threads: int) -> Optional[str]:
    """A sentence for the log when torch's workers may spin against IREE's."""
    if torch_threads <= 1 or any(name in os.environ for name in _USER_CHOICES):
        return None
    return (f"torch's {torch_threads} OpenMP threads spin for a while after each op and slow IREE's CPU "
            f"workers; set {SPIN_VARIABLE}={SPIN_COUNT} in the environment before starting Python "
            "(docs/training.md, 'Threads on the CPU')")
