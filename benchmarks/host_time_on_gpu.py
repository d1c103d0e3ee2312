"""Runs on the GPU machine: where a call's time goes besides its kernels.
For each manifest entry whose .vmfb name matches a pattern, through the
IREE runtime's Python API on random inputs: the host time of one call
with its result dropped at once (what iree-benchmark-module times) and
with every result kept alive (no buffer freed between calls), then the
CUDA activity of ten calls under torch's CUPTI profiler: each kernel's
and memset's time and the GPU's busy time per call. Needs python3 with
torch and iree-base-runtime, as `run_on_gpu.py` does.

    python3 benchmarks/host_time_on_gpu.py FOLDER RESULTS.json REGEX
"""

import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import iree.runtime as rt
import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from run_on_gpu import TORCH_DTYPES

CALLS = 12
_ELEMENT_TYPES = {"f16": rt.HalElementType.FLOAT_16, "bf16": rt.HalElementType.BFLOAT_16,
                  "f32": rt.HalElementType.FLOAT_32}


def _argument(device, spec: str):
    """`spec` ("2x3xf16") as a device array of random normal values."""
    *sizes, dtype = spec.split("x")
    values = torch.randn([int(s) for s in sizes]).to(getattr(torch, TORCH_DTYPES[dtype]))
    raw = np.ascontiguousarray(values.view(torch.int16).numpy() if dtype == "bf16" else values.numpy())
    view = device.allocator.allocate_buffer_copy(memory_type=rt.MemoryType.DEVICE_LOCAL,
                                                 allowed_usage=rt.BufferUsage.DEFAULT, device=device, buffer=raw,
                                                 element_type=_ELEMENT_TYPES[dtype])
    return rt.DeviceArray(device, view)


def _host_ms(function, args, keep: bool) -> float:
    kept, times = [], []
    for _ in range(CALLS):
        start = time.perf_counter()
        result = function(*args)
        if keep:
            kept.append(result)
        del result
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def _activity(function, args) -> dict:
    """Per call: GPU busy us, and the median us of each kernel and memset."""
    calls = 10
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            function(*args)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy") and "dur" in e]
    each: dict[str, list[float]] = {}
    for event in gpu:
        each.setdefault(f"{event['cat']}: {event['name'][:70]}", []).append(event["dur"])
    return {"gpu_busy_us": sum(e["dur"] for e in gpu) / calls,
            "work": {name: statistics.median(durations) for name, durations in each.items()}}


def main(folder: Path, results: Path, pattern: str) -> None:
    entries = [e for e in json.loads((folder / "manifest.json").read_text())
               if "vmfb" in e and "compile_error" not in e and re.search(pattern, e["vmfb"])]
    rows = []
    for entry in entries:
        config = rt.Config("cuda")
        context = rt.SystemContext(config=config)
        context.add_vm_module(rt.VmModule.copy_buffer(context.instance, (folder / entry["vmfb"]).read_bytes()))
        function = context.modules.module["main"]
        args = [_argument(config.device, spec) for spec in entry["inputs"]]
        for _ in range(3):
            function(*args)
        row = {**entry, "host_ms_dropped": _host_ms(function, args, keep=False),
               "host_ms_kept": _host_ms(function, args, keep=True), **_activity(function, args)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    results.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])
