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

The worker is `python -m iree_bwdconv.torch_compile.isolation`, not a multiprocessing
child: those import the user's main module again, and a script without a
`__main__` guard would run twice. It gets each graph's torch-dialect text
and the `LoweringOptions` that decide its forms, so that it lowers exactly
what this process would, and answers on a pipe of its own: what torch-mlir prints
goes to this process's stderr. A worker lowers one graph at a time; graphs
lowered at once from several threads (the backend compiles a forward and
a backward graph side by side) each get a worker, started on first use
(about 3 s: it imports torch and torch-mlir) and kept for the next graph.
Workers end with this process, however that ends.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import select
import subprocess
import sys
import threading
from concurrent.futures import Future
from typing import Any, BinaryIO, Optional

from iree_bwdconv.errors import WorkerError
from iree_bwdconv.options import LoweringOptions

def _lower(graph_ir: str, options: LoweringOptions) -> str:
    """In the worker: the graph's linalg, as `lowering.lower_torch` makes it."""
    from iree_bwdconv import lowering

    return lowering.lower_torch(lowering.parse_torch_mlir(graph_ir), "linalg", options)


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


_idle: list[_Worker] = []
_lock = threading.Lock()
_spawns: "queue.Queue[Future]" = queue.Queue()
_spawner: Optional[threading.Thread] = None


def _spawn_forever() -> None:
    while True:
        future = _spawns.get()
        try:
            future.set_result(_Worker())
        except BaseException as err:  # noqa: BLE001 - handed to the thread that asked
            future.set_exception(err)


def _new_worker() -> _Worker:
    """A worker started by one thread that lives as long as this process:
    Linux ends a worker when the thread that started it ends (its
    PR_SET_PDEATHSIG follows the thread), and graphs compile in threads
    that end with their graph."""
    global _spawner
    with _lock:
        if _spawner is None:
            _spawner = threading.Thread(target=_spawn_forever, name="iree-bwdconv-workers", daemon=True)
            _spawner.start()
    future: Future = Future()
    _spawns.put(future)
    return future.result()


def _take() -> _Worker:
    with _lock:
        while _idle:
            worker = _idle.pop()
            if worker.alive():
                return worker
    return _new_worker()


def lower(graph_ir: str, options: LoweringOptions, timeout_s: float) -> str:
    """The graph's linalg as `options` ask for it, made in a worker process."""
    request = (graph_ir, options)
    worker = _take()
    try:
        return worker.lower(request, timeout_s)
    except WorkerError:
        raise  # the worker died or was killed: the next graph starts another
    finally:
        if worker.alive():
            with _lock:
                _idle.append(worker)


def worker_pids() -> list[int]:
    """The idle workers' process ids."""
    with _lock:
        return [worker.process.pid for worker in _idle]


if __name__ == "__main__":
    _die_with(int(sys.argv[1]))
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not reach the replies
    _serve(sys.stdin.buffer, replies)
