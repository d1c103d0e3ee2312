"""One aten-level FX graph (a forward or backward graph from aot_autograd)
through our lowering, iree-compile and the IREE runtime.

The IREE function takes only the graph's tensor inputs and returns only the
tensors it computes: outputs that are None, plain numbers or graph inputs
passed straight through are put back in Python, at no cost.

A graph with symbolic shapes (a batch size that changed, so dynamo made the
dim dynamic) is specialized: each concrete signature is retraced with
static shapes and compiled once.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch_mlir import fx as torch_mlir_fx
from torch_mlir import ir

from iree_bwdconv.torch_compile import batch_reductions, isolation
from iree_bwdconv.compiler import compile_fallback, pipeline
from iree_bwdconv import lowering
from iree_bwdconv.compiler.compile_cache import CompileCache, cache_key
from iree_bwdconv.errors import UnsupportedDtypeError
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.run.runtime import LoadedModule


@dataclass
class CompileStats:
    """Seconds spent per stage, summed over every graph this backend
    compiled, and then in the compiled graphs' calls: `invoke_s` inside
    IREE's function calls (the module's work, waited for), the rest of
    `call_s` crossing between torch and IREE (argument and result
    buffers, stream synchronisation)."""

    graphs: int = 0
    import_s: float = 0.0
    lowering_s: float = 0.0
    iree_compile_s: float = 0.0
    load_s: float = 0.0
    cache_hits: int = 0
    calls: int = 0
    call_s: float = 0.0
    invoke_s: float = 0.0
    fallbacks: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **amounts: float) -> None:
        """Adds to the named counts: graphs compile in several threads at once."""
        with self._lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)

    @property
    def total_s(self) -> float:
        return self.import_s + self.lowering_s + self.iree_compile_s + self.load_s


@dataclass(frozen=True)
class OutputSlot:
    """Where output i of the graph comes from: "result" (the IREE function's
    result `index`), "input" (graph input `index`) or "constant" (`value`)."""

    kind: str
    index: int = -1
    value: Any = None


def is_symbolic(value: Any) -> bool:
    if isinstance(value, torch.SymInt):
        return True
    if isinstance(value, torch.Tensor):
        return any(isinstance(s, torch.SymInt) for s in (*value.shape, *value.stride()))
    return False


def placeholder_values(gm: torch.fx.GraphModule) -> list[Any]:
    return [node.meta.get("val") for node in gm.graph.nodes if node.op == "placeholder"]


def has_symbolic_shapes(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> bool:
    return any(is_symbolic(v) for v in (*placeholder_values(gm), *example_inputs))


def split_outputs(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, list[int], list[OutputSlot]]:
    """A copy of `gm` whose inputs are its used tensor placeholders and whose
    outputs are only the tensors it computes; the indices of the kept inputs;
    and how to rebuild the original outputs."""
    gm = copy.deepcopy(gm)
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    position = {node: i for i, node in enumerate(placeholders)}
    output = next(n for n in graph.nodes if n.op == "output")
    slots: list[OutputSlot] = []
    computed: list[torch.fx.Node] = []
    for value in output.args[0]:
        if isinstance(value, torch.fx.Node) and value in position:
            slots.append(OutputSlot("input", position[value]))
        elif isinstance(value, torch.fx.Node) and isinstance(value.meta.get("val"), torch.Tensor):
            if value not in computed:
                computed.append(value)
            slots.append(OutputSlot("result", computed.index(value)))
        elif isinstance(value, torch.fx.Node):
            raise NotImplementedError(f"graph output {value.name} is not a tensor ({value.meta.get('val')!r})")
        else:
            slots.append(OutputSlot("constant", value=value))
    output.args = (tuple(computed),)
    one_device(gm)
    kept = []
    for node in placeholders:
        if node.users:
            if not isinstance(node.meta.get("val"), torch.Tensor):
                raise NotImplementedError(f"graph input {node.name} is a {type(node.meta.get('val')).__name__}, not a tensor")
            kept.append(position[node])
        else:
            graph.erase_node(node)
    graph.lint()
    gm.recompile()
    return gm, kept, slots


_CPU = torch.device("cpu")


def one_device(gm: torch.fx.GraphModule) -> None:
    """Every device a graph's ops name made the CPU (the caller recompiles). An IREE module runs on
    one device, so where a tensor is made or moved inside it means nothing;
    but torch-mlir lowers a tensor made on another device (`scalar_tensor`
    on cuda:0, as torch 2.11's ReLU6 gradient makes its zero) into a
    float64 literal moved there (`aten.to.device`), which its linalg
    pipeline cannot lower, and the graph would run eagerly."""
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        device = node.kwargs.get("device")
        if isinstance(device, torch.device) and device != _CPU:
            node.kwargs = {**node.kwargs, "device": _CPU}
        if node.target is torch.ops.aten.to.device and len(node.args) > 1 and node.args[1] != _CPU:
            node.args = (node.args[0], _CPU, *node.args[2:])


def refuse_float64(gm: torch.fx.GraphModule) -> None:
    """float64 tensors in or out refused before import: IREE demotes
    float64 to float32 by default, so the compiled module would take and
    give float32 where torch hands it float64, and fail at its first call."""
    outputs = gm.graph.find_nodes(op="output")[0].args[0]
    for node in [*gm.graph.find_nodes(op="placeholder"), *outputs]:
        value = getattr(node, "meta", {}).get("val")
        if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
            raise UnsupportedDtypeError(f"{node.name}.dtype", "float64",
                                        "IREE computes float64 as float32; supported dtypes are float32, "
                                        "float16 and bfloat16")


def import_graph(gm: torch.fx.GraphModule) -> ir.Module:
    """A graph of tensors in and tensors out (`split_outputs`) as raw
    torch-dialect IR, ready for `lowering.lower_torch`."""
    raw = torch_mlir_fx.stateless_fx_import(gm, output_type="raw")
    pipeline.load_torch_conversion_dialect(raw.context)
    return raw


@dataclass(frozen=True)
class ImportedGraph:
    """A graph as torch-dialect text (`graph_ir`, None where it computes
    nothing), with the positions of the inputs the IREE function takes and
    how its outputs are rebuilt."""

    graph_ir: Optional[str]
    inputs: list[int]
    slots: list[OutputSlot]


def import_for_iree(gm: torch.fx.GraphModule, stats: CompileStats, target: str = "cpu") -> ImportedGraph:
    """`gm` through torch-mlir's importer (in the calling thread: it reads
    the graph, which dynamo's thread owns), for `target`."""
    import_gm, inputs, slots = split_outputs(gm)
    if not any(slot.kind == "result" for slot in slots):
        return ImportedGraph(None, inputs, slots)  # every output is an input or a constant
    refuse_float64(import_gm)
    if batch_reductions.applies_to(target):
        batch_reductions.split_batch_reductions(import_gm)
    started = time.perf_counter()
    graph_ir = str(import_graph(import_gm))
    stats.add(import_s=time.perf_counter() - started)
    return ImportedGraph(graph_ir, inputs, slots)


class CompiledGraph:
    """A static-shaped graph compiled for one target; called with the
    graph's flat list of inputs (aot_autograd's boxed convention)."""

    def __init__(self, gm: Union[torch.fx.GraphModule, ImportedGraph], options: Union[LoweringOptions, str],
                 cache: Optional[CompileCache], stats: CompileStats, *, isolated: bool = False,
                 timeout_s: Optional[float] = None) -> None:
        """`gm`: the graph, or what `import_for_iree` made of it; `options`:
        how to lower it (a target's name: its usual forms).
        `isolated`: torch-mlir's pipelines run in a worker process
        (`isolation`), so that a crash there cannot end this one, and any
        thread may build this; lowering and iree-compile each get
        `timeout_s` seconds (None: no limit)."""
        # An instance attribute: dynamo's wrappers copy __dict__, not class attributes.
        self._boxed_call = True
        options = lowering.as_options(options)
        imported = gm if isinstance(gm, ImportedGraph) else import_for_iree(gm, stats, options.target)
        self._inputs, self._slots = imported.inputs, imported.slots
        self._module: Optional[LoadedModule] = None
        self._target, self._stats, self._cuda_cache_bytes = options.target, stats, options.cuda_cache_bytes
        self.vmfb: Optional[bytes] = None
        if imported.graph_ir is None:
            return
        graph_ir = imported.graph_ir
        timings = {}

        def lower(forms: LoweringOptions) -> str:
            begin = time.perf_counter()
            if isolated:
                linalg = isolation.lower(graph_ir, forms, timeout_s or math.inf)
            else:
                linalg = lowering.lower_torch(lowering.parse_torch_mlir(graph_ir), "linalg", forms)
            timings["lowering"] = timings.get("lowering", 0.0) + time.perf_counter() - begin
            return linalg

        def compile_vmfb() -> bytes:
            begin = time.perf_counter()
            vmfb = compile_fallback.compile_lowering(lower, options, timeout_s)
            timings["iree_compile"] = time.perf_counter() - begin - timings["lowering"]
            return vmfb

        flags = pipeline.compile_flags(options.target)
        if cache is None:
            self.vmfb = compile_vmfb()
        else:
            key = cache_key(graph_ir, pipeline.keyed_flags(flags), options.cache_key())
            self.vmfb = cache.get_or_compile(key, compile_vmfb)
        stats.add(graphs=1, cache_hits=0 if timings else 1, lowering_s=timings.get("lowering", 0.0),
                  iree_compile_s=timings.get("iree_compile", 0.0))

    def _loaded(self) -> LoadedModule:
        """The module on its device, loaded at the first call: compiling for
        a device this machine lacks (gfx942 here) still works."""
        if self._module is None:
            loading = time.perf_counter()
            self._module = LoadedModule(self.vmfb, self._target, cuda_cache_bytes=self._cuda_cache_bytes)
            self._stats.add(load_s=time.perf_counter() - loading)
        return self._module

    def __call__(self, args: list[Any]) -> list[Any]:
        results: Sequence[torch.Tensor] = ()
        if self.vmfb is not None:
            started = time.perf_counter()
            module = self._loaded()
            invoked = module.invoke_s
            results = module(*(args[i] for i in self._inputs))
            self._stats.add(calls=1, call_s=time.perf_counter() - started, invoke_s=module.invoke_s - invoked)
        outputs = []
        for slot in self._slots:
            if slot.kind == "result":
                outputs.append(results[slot.index])
            elif slot.kind == "input":
                outputs.append(args[slot.index])
            else:
                outputs.append(slot.value)
        args.clear()  # boxed convention: the callee frees its inputs
        return outputs


def signature(args: Sequence[Any]) -> tuple:
    return tuple(
        (tuple(a.shape), tuple(a.stride()), a.dtype, a.device.type) if isinstance(a, torch.Tensor) else (type(a), a)
        for a in args
    )


def specialize(gm: torch.fx.GraphModule, args: Sequence[Any]) -> torch.fx.GraphModule:
    """Retrace `gm` on `args`' concrete shapes: symbolic sizes become numbers."""
    return make_fx(gm, tracing_mode="fake", _allow_non_fake_inputs=True)(*args)


class SpecializingGraph:
    """A graph with symbolic shapes, compiled once per concrete signature by `build`."""

    def __init__(self, gm: torch.fx.GraphModule, build: Callable[[torch.fx.GraphModule, list[Any]], Callable]) -> None:
        self._boxed_call = True
        self._gm = gm
        self._build = build
        self._compiled: dict[tuple, Callable] = {}

    def __call__(self, args: list[Any]) -> list[Any]:
        key = signature(args)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = self._build(specialize(self._gm, args), list(args))
        return compiled(args)
