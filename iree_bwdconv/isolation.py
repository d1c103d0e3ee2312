"""torch-mlir's pass pipelines in a process of their own, for the
torch.compile backend.

torch-mlir runs its passes in the process that calls them, and some graphs
crash it: the backward of a descending `torch.sort` ended the user's
process with a segmentation fault, and a sort of a convolution's output
with "LLVM ERROR: out of memory", though fallback="eager" promised that a
graph we cannot lower runs eagerly. The backend lowers each graph in a
worker process instead. A crash, or a graph that runs past the time limit,
ends the worker (the next graph starts a new one) and raises `WorkerError`,
and the graph falls back as documented.

The worker is `python -m iree_bwdconv.isolation`, not a multiprocessing
child: those import the user's main module again, and a script without a
`__main__` guard would run twice. It gets each graph's torch-dialect text
and everything that decides its forms (the target, the plain forms, the
environment's form and operand room), so that it lowers exactly what this
process would, and answers on a pipe of its own: what torch-mlir prints
goes to this process's stderr. One worker a process, one graph at a time,
started on first use (about 3 s: it imports torch and torch-mlir). It
ends with this process, however that ends.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import subprocess
import sys
import threading
from typing import Any, BinaryIO, Optional

from .errors import WorkerError

# Environment settings the lowering reads, handed to the worker with each graph.
_SETTINGS = ("IREE_BWDCONV_GRAD_INPUT_FORM", "IREE_BWDCONV_OPERAND_ROOM")


def _lower(graph_ir: str, target: str, plain: bool, settings: dict[str, Optional[str]]) -> str:
    """In the worker: the graph's linalg, as `lowering.lower_torch` makes it."""
    from . import lowering, targets

    for name, value in settings.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    module = lowering.parse_torch_mlir(graph_ir)
    with targets.lowering_plain_forms() if plain else contextlib.nullcontext():
        return lowering.lower_torch(module, "linalg", target)


def _die_with(parent: int) -> None:
    """The worker ends when `parent` does (Linux's PR_SET_PDEATHSIG; else
    when its requests' pipe closes, after the graph at hand)."""
    import ctypes
    import signal

    with contextlib.suppress(AttributeError, OSError):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:
        sys.exit(0)


def _serve(requests: BinaryIO, replies: BinaryIO) -> None:
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        try:
            reply: tuple[str, Any] = ("done", _lower(*request))
        except Exception as error:  # noqa: BLE001 - every failure goes back to the caller
            reply = ("raised", error)
        try:
            data = pickle.dumps(reply)
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            data = pickle.dumps(("raised", WorkerError(f"lowering failed: {reply[1]!r}")))
        replies.write(data)
        replies.flush()


class _Worker:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.process = subprocess.Popen([sys.executable, "-m", __name__, str(os.getpid())],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def lower(self, request: tuple, timeout_s: float) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(pickle.dumps(request))
            self.process.stdin.flush()
        except BrokenPipeError:
            raise WorkerError(self._died()) from None
        ready, _, _ = select.select([self.process.stdout], [], [], None if timeout_s == float("inf") else timeout_s)
        if not ready:
            self.stop()
            raise WorkerError(f"lowering the graph ran past its time limit of {timeout_s:g} s; the worker was killed")
        try:
            kind, value = pickle.load(self.process.stdout)
        except (EOFError, pickle.UnpicklingError):
            raise WorkerError(self._died()) from None
        if kind == "raised":
            raise value
        return value

    def _died(self) -> str:
        code = self.process.wait(10)
        return f"the lowering worker died while lowering the graph (exit code {code}: torch-mlir crashed on it)"

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)


_worker: Optional[_Worker] = None
_lock = threading.Lock()


def lower(graph_ir: str, target: str, plain: bool, timeout_s: float) -> str:
    """The graph's linalg for `target`, made in the worker process."""
    global _worker
    request = (graph_ir, target, plain, {name: os.environ.get(name) for name in _SETTINGS})
    with _lock:
        if _worker is None or not _worker.alive():
            _worker = _Worker()
        try:
            return _worker.lower(request, timeout_s)
        except WorkerError:
            _worker = None
            raise


if __name__ == "__main__":
    _die_with(int(sys.argv[1]))
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not reach the replies
    _serve(sys.stdin.buffer, replies)
