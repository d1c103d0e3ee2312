"""The `torch.compile` backend: `torch.compile(model, backend="iree_bwdconv")`.

aot_autograd splits each dynamo graph into a forward and a backward aten
graph (convolution_backward kept, not decomposed); each goes through
`graph_compiler` to IREE. A graph that cannot be lowered or compiled is
logged with the reason and runs eagerly, or raises with fallback="raise".

Neither graph of a frame needs the other compiled: with the lowering in
worker processes, each graph compiles in a thread of its own while dynamo
goes on, and is waited for at its first call. aot_autograd is asked for
the backward graph with the forward one (not at the backward's first
call), so the backward compiles while the forward compiles and runs, and
an earlier frame's backward while a later frame's forward compiles.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from concurrent.futures import Future
from typing import Any, Callable, Optional, Sequence

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

from iree_bwdconv.compiler import compile_cache, pipeline
from iree_bwdconv import lowering
from iree_bwdconv.run import openmp
from iree_bwdconv import options as lowering_options
from iree_bwdconv.compiler.compile_cache import CompileCache
from iree_bwdconv.errors import BwdConvError, InvalidArgumentError, PipelineError
from iree_bwdconv.torch_compile.graph_compiler import (CompiledGraph, CompileStats, SpecializingGraph,
                                                       has_symbolic_shapes, import_for_iree)

log = logging.getLogger("iree_bwdconv")

# The IREE device each torch.compile device name runs on, and the compile
# target it defaults to.
DEVICE_TARGETS = {"cpu": "cpu", "cuda": "cuda", "hip": "gfx942"}
FALLBACKS = ("eager", "raise")
# A graph's lowering, and each of its iree-compile runs, past this many
# seconds falls back: EfficientNet-B0's largest graph took 80 s to compile
# on a 2-core machine.
DEFAULT_COMPILE_TIMEOUT_S = 1200.0


def default_parallel_compiles() -> int:
    """Graphs compiled at once: one a core this process may run on (a
    graph's lowering is one thread, its iree-compile several), up to four.
    The cores it may run on, not the machine's: a container or `taskset`
    that gives it two of 64 must not start 4 compiles."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, usable or 1))


class GraphLoweringError(BwdConvError):
    """A graph could not go through the lowering or iree-compile, and the
    backend was told to raise rather than run it eagerly."""


def _describe(gm: torch.fx.GraphModule) -> str:
    ops = [n for n in gm.graph.nodes if n.op == "call_function"]
    return f"{len(ops)} ops"


def _reason(err: Exception) -> str:
    """One line: the first error a pipeline reported and where its IR is, or the message."""
    if isinstance(err, PipelineError):
        lines = [line.strip() for line in err.diagnostics.splitlines() if line.strip()]
        first = next((line for line in lines if "error:" in line), lines[0] if lines else "")
        return f"{err.stage} failed: {first[:300]} (IR saved to {err.repro_path}; reproduce with: {err.command})"
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {'; '.join(lines[:4]) or 'no message'}"


@functools.cache
def _advise_on_threads() -> None:
    """Once per process: say when torch's OpenMP workers will spin against IREE's (`openmp`)."""
    advice = openmp.spinning_advice(torch.get_num_threads())
    if advice:
        log.warning("iree-bwdconv: %s", advice)


class Backend:
    """A configured backend: `torch.compile(model, backend=iree_bwdconv.backend(device="cuda"))`.

    device: "cpu" (llvm-cpu, local-task; the default), "cuda" or "hip".
    target: iree-compile target, "cpu", "cuda" (sm_80) or "gfx942"; defaults from device.
    fallback: "eager" runs a graph we cannot lower eagerly (logged); "raise" raises.
    cache_dir: where compiled modules are kept ($IREE_BWDCONV_CACHE_DIR, else
    ~/.cache/iree-bwdconv, if None: `compile_cache.default_dir`);
    cache=False compiles every graph afresh.
    isolate: run torch-mlir's pass pipelines in a worker process (`isolation`),
    so that a graph that crashes them falls back instead of ending this one.
    compile_timeout_s: the seconds a graph's lowering and each iree-compile may
    take before the graph falls back (None: no limit).
    parallel_compiles: how many graphs compile at once, each in a thread of
    its own and waited for at its first call (with isolate=True; 1, or
    isolate=False, compiles each graph before handing it to dynamo).
    """

    def __init__(
        self,
        device: str = "cpu",
        target: Optional[str] = None,
        fallback: str = "eager",
        cache_dir: Optional[str] = None,
        cache: bool = True,
        isolate: bool = True,
        compile_timeout_s: Optional[float] = DEFAULT_COMPILE_TIMEOUT_S,
        parallel_compiles: Optional[int] = None,
    ) -> None:
        if device not in DEVICE_TARGETS:
            raise InvalidArgumentError("device", device, f"expected one of {', '.join(DEVICE_TARGETS)}")
        target = target or DEVICE_TARGETS[device]
        if target not in pipeline.TARGET_FLAGS or (device == "cpu") != (target == "cpu"):
            raise InvalidArgumentError("target", target, f"not a compile target for device {device!r}")
        if fallback not in FALLBACKS:
            raise InvalidArgumentError("fallback", fallback, f"expected one of {', '.join(FALLBACKS)}")
        if not isinstance(isolate, bool):
            raise InvalidArgumentError("isolate", isolate, "expected a bool")
        if compile_timeout_s is not None and (isinstance(compile_timeout_s, bool)
                                              or not isinstance(compile_timeout_s, (int, float))
                                              or not compile_timeout_s > 0):
            raise InvalidArgumentError("compile_timeout_s", compile_timeout_s, "expected seconds above 0, or None")
        if parallel_compiles is None:
            parallel_compiles = default_parallel_compiles()
        if isinstance(parallel_compiles, bool) or not isinstance(parallel_compiles, int) or parallel_compiles < 1:
            raise InvalidArgumentError("parallel_compiles", parallel_compiles, "expected an int of 1 or more, or None")
        self.device, self.target, self.fallback = device, target, fallback
        self.isolate, self.compile_timeout_s = isolate, compile_timeout_s
        # torch-mlir's passes in this process run one graph at a time.
        self.parallel_compiles = parallel_compiles if isolate else 1
        self._compiles = threading.BoundedSemaphore(parallel_compiles) if self.parallel_compiles > 1 else None
        if device == "cpu":
            _advise_on_threads()
        self.cache = CompileCache(cache_dir or compile_cache.default_dir(os.environ)) if cache else None
        self.stats = CompileStats()
        self.__name__ = "iree_bwdconv"  # dynamo names backends in its logs
        self._aot = aot_autograd(
            fw_compiler=self.compile_graph,
            bw_compiler=self.compile_graph,
            decompositions=lowering.decompositions(),
        )

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
        if self._compiles is None:
            return self._aot(gm, example_inputs, **kwargs)
        # aot_autograd hands over a backward graph at its first call unless
        # told otherwise; handed over with the forward, it compiles while the
        # forward compiles and runs.
        with torch._functorch.config.patch(force_non_lazy_backward_lowering=True):
            return self._aot(gm, example_inputs, **kwargs)

    def compile_graph(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        """One aten graph (a forward or a backward one, as aot_autograd hands
        them over) compiled, in the boxed calling convention."""
        if has_symbolic_shapes(gm, example_inputs):
            return SpecializingGraph(gm, self._compile_static)
        return self._compile_static(gm, example_inputs)

    def _compile_static(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        options = lowering_options.from_environment(self.target)  # a bad setting is the user's to fix: raised

        def compiled() -> CompiledGraph:
            return CompiledGraph(imported, options, self.cache, self.stats, isolated=self.isolate,
                                 timeout_s=self.compile_timeout_s)

        try:
            imported = import_for_iree(gm, self.stats, self.target)
            if self._compiles is None:
                return compiled()
        except Exception as err:  # noqa: BLE001 - any failure of the lowering means: not this graph
            return self._fall_back(gm, err)
        return PendingGraph(self._in_background(compiled), functools.partial(self._fall_back, gm))

    def _in_background(self, build: Callable[[], CompiledGraph]) -> Future:
        future: Future = Future()

        def run() -> None:
            with self._compiles:
                try:
                    future.set_result(build())
                except BaseException as err:  # noqa: BLE001 - handed to the graph's first call
                    future.set_exception(err)

        # A daemon: a compile still running when the program ends must not hold it.
        threading.Thread(target=run, name="iree-bwdconv-compile", daemon=True).start()
        return future

    def _fall_back(self, gm: torch.fx.GraphModule, err: Exception) -> Callable:
        what = f"graph of {_describe(gm)} ({_reason(err)})"
        if self.fallback == "raise":
            raise GraphLoweringError(f"iree-bwdconv cannot compile a {what}") from err
        log.warning("iree-bwdconv: cannot compile a %s; running that graph eagerly", what)
        self.stats.add(fallbacks=[what])
        return make_boxed_func(gm.forward)


class PendingGraph:
    """A graph compiling in the background, in the boxed calling convention:
    its first call waits for the compile, or falls back (`fall_back`) if
    the compile failed."""

    def __init__(self, compiled: Future, fall_back: Callable[[Exception], Callable]) -> None:
        self._boxed_call = True
        self._compiled, self._fall_back = compiled, fall_back
        self._call: Optional[Callable] = None
        self._lock = threading.Lock()

    def __call__(self, args: list[Any]) -> list[Any]:
        if self._call is None:
            with self._lock:
                if self._call is None:
                    # Not .result(): raised here, the error would hold this
                    # stack's frames, and through them the graphs of autograd.
                    failure = self._compiled.exception()
                    self._call = self._compiled.result() if failure is None else self._fall_back(failure)
                    self._compiled = self._fall_back = None  # type: ignore[assignment]
        return self._call(args)


def backend(
    device: str = "cpu",
    target: Optional[str] = None,
    fallback: str = "eager",
    cache_dir: Optional[str] = None,
    cache: bool = True,
    isolate: bool = True,
    compile_timeout_s: Optional[float] = None,
    parallel_compiles: Optional[int] = None,
) -> Backend:
    """A configured `torch.compile` backend (see `Backend`)."""
    return Backend(device=device, target=target, fallback=fallback, cache_dir=cache_dir, cache=cache,
                   isolate=isolate,
                   compile_timeout_s=DEFAULT_COMPILE_TIMEOUT_S if compile_timeout_s is None else compile_timeout_s,
                   parallel_compiles=parallel_compiles)


def iree_bwdconv(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
    """The backend registered as "iree_bwdconv": CPU, eager fallback, default cache."""
    return _default_backend()(gm, example_inputs, **kwargs)


_DEFAULT: Optional[Backend] = None


def _default_backend() -> Backend:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Backend()
    return _DEFAULT
