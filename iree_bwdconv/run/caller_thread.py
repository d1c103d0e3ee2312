"""The thread that calls a CPU module while IREE's workers run it.

IREE 3.13's local-task device wakes the caller from the worker that ends
the call's last task, and the woken caller then spins until that worker
has left the callback that woke it (`iree_async_semaphore_multi_wait`
waits for each fired timepoint's `completed` flag). Where IREE has a worker
on every CPU, the woken caller often lands on that very worker's CPU, takes
it from the worker and spins on a flag only the worker can set, until the
scheduler moves one of them. On the project's 2-CPU machine that made
ResNet-50's stem grad_weight take a median 2.4-3.0 ms a call and 6-8 ms at
the 90th percentile; with the caller under SCHED_BATCH, whose wake-ups
do not preempt, 2.0-2.3 and 2.3-3.5 (docs/performance-journal.md, "The caller's
wake-up on the CPU").

So a CPU call runs with its calling thread under SCHED_BATCH, and the
thread's policy is put back after. Only a thread under SCHED_OTHER is
changed: any other policy is its owner's choice. Linux lets any thread
switch between these two at its own nice value; elsewhere nothing changes.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, Optional

_BATCH: Optional[int] = getattr(os, "SCHED_BATCH", None)


def _policy() -> Optional[int]:
    """This thread's scheduling policy, None where the OS does not say."""
    try:
        return os.sched_getscheduler(0)
    except (AttributeError, OSError):
        return None


@contextlib.contextmanager
def batch_scheduling() -> Iterator[None]:
    """Runs the block with this thread under SCHED_BATCH if it was under
    SCHED_OTHER, which it is again after the block."""
    if _BATCH is None or _policy() != os.SCHED_OTHER:
        yield
        return
    try:
        os.sched_setscheduler(0, _BATCH, os.sched_param(0))
    except OSError:  # a sandbox that forbids it: the call is only slower
        yield
        return
    try:
        yield
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
