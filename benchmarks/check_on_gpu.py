"""Runs on the GPU machine: each case of `gpu_check.py` on random inputs,
against torch's float64 result on CUDA (convolution_backward, or the
convolution, or the transposed one, for forward cases); with `memcheck`, under compute-sanitizer
too. Needs only python3, torch and iree-base-runtime.

    python3 benchmarks/check_on_gpu.py FOLDER [memcheck] [repeat N]

A case that does not return within $CHECK_TIMEOUT_S seconds (120 unless
set) fails: a fault on the GPU can leave a call hanging.

Prints, per case, the largest error of each result over the largest
magnitude of the reference, or the largest error itself where the
reference is all zeros (about 1e-3 or less is f16 rounding, 1e-2 bf16;
the e2e suite's bound per element is in iree_bwdconv/reference.py), and
last the cases with an error above 2e-2: those `gpu_check.KNOWN_WRONG`
lists apart, the others after "FAILED".
"""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
_BOUND = 2e-2
TIMEOUT_S = int(os.environ.get("CHECK_TIMEOUT_S", "120"))
# Inputs and results go through files: a folder of this process's own, so
# that several checks can run side by side.
_SCRATCH = tempfile.mkdtemp(prefix="check_on_gpu_")
atexit.register(shutil.rmtree, _SCRATCH, True)


def _input_flag(tensor: torch.Tensor, name: str) -> str:
    """numpy has no bf16: a bf16 tensor goes in as its raw bits."""
    if tensor.dtype != torch.bfloat16:
        np.save(f"{_SCRATCH}/{name}.npy", tensor.numpy())
        return f"--input=@{_SCRATCH}/{name}.npy"
    tensor.view(torch.int16).numpy().tofile(f"{_SCRATCH}/{name}.bin")
    return "--input=" + "x".join(map(str, tensor.shape)) + f"xbf16=@{_SCRATCH}/{name}.bin"


def _output(index: int, like: torch.Tensor) -> torch.Tensor:
    if like.dtype != torch.bfloat16:
        return torch.from_numpy(np.load(f"{_SCRATCH}/out{index}.npy"))
    bits = np.fromfile(f"{_SCRATCH}/out{index}.bin", dtype=np.int16)
    return torch.from_numpy(bits).view(torch.bfloat16).reshape(like.shape)


def _reference(case: dict, dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> dict[str, torch.Tensor]:
    dy, x, w = (t.cuda().double() for t in (dy, x, w))
    if case["kind"] == "forward":
        dilation = case.get("dilation", 1)
        return {"result": torch.nn.functional.conv2d(x, w, None, case["stride"], case["padding"], dilation, case["groups"])}
    if case["kind"] == "transposed-forward":
        transposed = getattr(torch.nn.functional, f"conv_transpose{len(case['kernel'])}d")
        return {"result": transposed(x, w, None, case["stride"], case["padding"], case.get("output_padding", 0),
                                     case["groups"], case.get("dilation", 1))}
    grads = torch.ops.aten.convolution_backward(dy, x, w, *case["arguments"])
    return dict(zip(("grad_input", "grad_weight", "grad_bias"), grads))


# The lines of a memcheck report that say what was read or written, where.
_BAD_ACCESS = ("Invalid", "    at ", "nearest allocation")


def _memcheck_notes(output: str, markers: tuple[str, ...]) -> list[str]:
    return [line.strip("= ") for line in output.splitlines() if any(m in line for m in markers)]


def check(folder: Path, case: dict, memcheck: bool) -> bool:
    """Runs one case (a module of a dynamic batch at each of its batch
    sizes) and prints its errors; whether they are within _BOUND."""
    n = case["shapes"]["x"][0]
    batches = [n, n + 1] if case.get("dynamic_batch") else [n]
    return all([_check_at(folder, case, memcheck, batch, len(batches) > 1) for batch in batches])


def _check_at(folder: Path, case: dict, memcheck: bool, batch: int, say_batch: bool) -> bool:
    generator = torch.Generator().manual_seed(0)
    dtype = _DTYPES[case["dtype"]]
    sizes = {name: [batch, *size[1:]] if name != "w" else size for name, size in case["shapes"].items()}
    dy, x, w = (torch.randn(sizes[name], generator=generator).to(dtype) for name in ("dy", "x", "w"))
    label = f"{case['name']} n{batch}" if say_batch else case["name"]
    forward = case["kind"] in ("forward", "transposed-forward")  # one result, shaped as dy
    inputs = ((x, "x"), (w, "w")) if forward else ((dy, "dy"), (x, "x"), (w, "w"))
    names = case.get("results") or (["result"] if forward else ["grad_input", "grad_weight"])
    likes = {"grad_input": x, "grad_weight": w, "grad_bias": torch.empty(dy.shape[1], dtype=dtype), "result": dy}
    results = [likes[name] for name in names]
    suffix = "bin" if dtype == torch.bfloat16 else "npy"
    command = [sys.executable, "-m", "iree._runtime.scripts.iree_run_module", "--device=cuda",
               f"--module={folder / (case['name'] + '.vmfb')}", "--function=main",
               *(_input_flag(tensor, name) for tensor, name in inputs),
               *(f"--output=@{_SCRATCH}/out{index}.{suffix}" for index in range(len(results)))]
    if memcheck:
        command = ["/usr/local/cuda/bin/compute-sanitizer", "--tool", "memcheck", "--print-limit", "2"] + command
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as timeout:
        # memcheck's first report of a bad access comes before the hang
        # it often leaves; print what it said (bytes here, text=True or not).
        said = b"".join(out or b"" for out in (timeout.stdout, timeout.stderr)).decode(errors="replace")
        print(label, case["form"], f"timeout ({TIMEOUT_S} s)", _memcheck_notes(said, _BAD_ACCESS), flush=True)
        return False
    notes = _memcheck_notes(proc.stdout + proc.stderr, ("ERROR SUMMARY", "Invalid"))
    if proc.returncode:
        print(label, case["form"], "exit", proc.returncode, notes[:3], proc.stderr[-300:], flush=True)
        return False
    errors = []
    references = _reference(case, dy, x, w)
    for index, (like, name) in enumerate(zip(results, names)):
        got = _output(index, like).cuda().double()
        largest, error = references[name].abs().max(), (got - references[name]).abs().max()
        errors.append(float(error / largest if largest > 0 else error))  # all zeros (every read in padding): absolute
    print(label, case["form"], " ".join(f"{n} {e:.2e}" for n, e in zip(names, errors)), notes[:2], flush=True)
    return all(e <= _BOUND for e in errors) and not any("ERROR SUMMARY: 0" not in n for n in notes if "SUMMARY" in n)


def main(folder: Path, memcheck: bool, repeat: int) -> None:
    failed, known = [], []
    for case in json.loads((folder / "cases.json").read_text()):
        for _ in range(repeat):
            if not check(folder, case, memcheck):
                (known if case.get("known_wrong") else failed).append(case["name"])
    if known:
        print("known wrong (gpu_check.KNOWN_WRONG), still wrong: " + " ".join(known))
    print("FAILED: " + " ".join(failed) if failed else "all others within %.0e" % _BOUND)


if __name__ == "__main__":
    arguments = sys.argv[2:]
    repeat = int(arguments[arguments.index("repeat") + 1]) if "repeat" in arguments else 1
    main(Path(sys.argv[1]), "memcheck" in arguments, repeat)
