"""Runs on the GPU machine: each module of a `cuda_tensors` manifest called
through `iree_bwdconv.run.runtime.LoadedModule` with torch tensors on cuda:0
(DLPack into IREE, results copied on the GPU) and with the same tensors on
the CPU (copied through host arrays). Checks that the two agree bit for
bit, that both are within tolerance of torch's float64 gradients, that the
results live on the inputs' device and keep their values when the module
runs again, and that IREE reads what torch wrote just before the call
(and a strided view, which the runtime copies to contiguous memory);
then times a call each way (host clock, the GPU synchronized around each
call), the module alone on the imported tensors (its results dropped, not
copied) and torch eager. Needs python3 with torch, ml_dtypes and
iree-base-runtime, and the repository root on PYTHONPATH.

    PYTHONPATH=. python3 benchmarks/cuda_tensors_on_gpu.py FOLDER RESULTS.json
"""

import json
import statistics
import sys
import time
from pathlib import Path

import torch

from iree_bwdconv.run.runtime import LoadedModule
from run_on_gpu import TORCH_DTYPES

CALLS = 10


def _tensors(spec: dict) -> tuple:
    """dy, x, w as float32 CPU tensors of random normal values."""
    out_hw = [(s + 2 * spec["padding"] - spec["kernel"]) // spec["stride"] + 1 for s in spec["hw"]]
    shapes = ([spec["n"], spec["k"], *out_hw], [spec["n"], spec["c"], *spec["hw"]],
              [spec["k"], spec["c"] // spec["groups"], spec["kernel"], spec["kernel"]])
    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(shape, generator=generator) for shape in shapes)


def _reference(spec: dict, args) -> list:
    """torch's float64 gradients of the rounded inputs, on the GPU."""
    dy, x, w = (a.to("cuda", torch.float64) for a in args)
    grads = torch.ops.aten.convolution_backward(dy, x, w, [spec["k"]], [spec["stride"]] * 2, [spec["padding"]] * 2,
                                                [1, 1], False, [0, 0], spec["groups"], spec["output_mask"])
    return [g for g in grads if g is not None]


def _relative_error(result: torch.Tensor, reference: torch.Tensor) -> float:
    return ((result.to("cuda", torch.float64) - reference).abs().max() / reference.abs().max()).item()


def _median_ms(call) -> float:
    for _ in range(2):
        call()
    times = []
    for _ in range(CALLS):
        torch.cuda.synchronize()
        start = time.perf_counter()
        call()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def measure(folder: Path, entry: dict) -> dict:
    spec = entry["spec"]
    dtype = getattr(torch, TORCH_DTYPES[spec["dtype"]])
    on_host = [t.to(dtype) for t in _tensors(spec)]
    on_cuda = [t.cuda() for t in on_host]
    module = LoadedModule((folder / entry["vmfb"]).read_bytes(), "cuda")
    cuda_results, host_results = module(*on_cuda), module(*on_host)
    kept = [r.cpu() for r in cuda_results]
    # Written by torch just before the call: IREE must wait for it.
    doubled_cuda = module(on_cuda[0] * 2, *on_cuda[1:])
    doubled_host = module(on_host[0] * 2, *on_host[1:])
    # A strided view: the runtime's own copy to contiguous memory must be done before IREE reads it.
    strided = on_cuda[0].transpose(-1, -2).contiguous().transpose(-1, -2)
    from_strided = module(strided, *on_cuda[1:])
    tolerance = 1e-4 if spec["dtype"] == "f32" else 2e-2
    errors = [_relative_error(r, ref) for r, ref in zip(cuda_results, _reference(spec, on_host))]
    eager = lambda: torch.ops.aten.convolution_backward(  # noqa: E731
        on_cuda[0], on_cuda[1], on_cuda[2], [spec["k"]], [spec["stride"]] * 2, [spec["padding"]] * 2, [1, 1], False,
        [0, 0], spec["groups"], spec["output_mask"])
    return {
        "result_devices": sorted({str(r.device) for r in cuda_results}),
        "host_result_devices": sorted({str(r.device) for r in host_results}),
        "same_as_host_path": all(torch.equal(a.cpu(), b) for a, b in zip(cuda_results, host_results)),
        "kept_values": all(torch.equal(a.cpu(), b) for a, b in zip(cuda_results, kept)),
        "reads_torch_writes": all(torch.equal(a.cpu(), b) for a, b in zip(doubled_cuda, doubled_host)),
        "reads_strided_views": all(torch.equal(a.cpu(), b) for a, b in zip(from_strided, host_results)),
        "relative_errors": errors,
        "within_tolerance": all(e <= tolerance for e in errors),
        "result_mb": sum(r.numel() * r.element_size() for r in cuda_results) / 1e6,
        "cuda_tensors_ms": _median_ms(lambda: module(*on_cuda)),
        "host_tensors_ms": _median_ms(lambda: module(*on_host)),
        "module_only_ms": _median_ms(lambda: module._function(*(module._argument(t) for t in on_cuda))),
        "eager_ms": _median_ms(eager),
    }


def main() -> None:
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    results = []
    for entry in json.loads((folder / "manifest.json").read_text()):
        record = {k: entry[k] for k in ("shape", "mask")} | {"dtype": entry["spec"]["dtype"]}
        try:
            record.update(measure(folder, entry))
        except Exception as err:  # keep going: one failure must not lose the rest
            record["error"] = f"{type(err).__name__}: {str(err)[-500:]}"
        print(json.dumps(record), flush=True)
        results.append(record)
        out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
