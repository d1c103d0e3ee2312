"""Runs on the GPU machine: each case of `gpu_check.py` on random inputs,
against torch's float64 convolution_backward on CUDA; with `memcheck`,
under compute-sanitizer too. Needs only python3, torch and
iree-base-runtime.

    python3 benchmarks/check_on_gpu.py FOLDER [memcheck]

Prints, per case, the largest error of grad_input and grad_weight over the
largest magnitude of the reference (about 1e-3 or less is f16 rounding;
the e2e suite's bound per element is in iree_bwdconv/reference.py).
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

_DTYPES = {"f32": torch.float32, "f16": torch.float16}


def main(folder: Path, memcheck: bool) -> None:
    for case in json.loads((folder / "cases.json").read_text()):
        generator = torch.Generator().manual_seed(0)
        out = (case["hw"] + 2 * case["padding"] - case["kernel"]) // case["stride"] + 1
        dtype = _DTYPES[case["dtype"]]
        dy = torch.randn(case["n"], case["k"], out, out, generator=generator).to(dtype)
        x = torch.randn(case["n"], case["c"], case["hw"], case["hw"], generator=generator).to(dtype)
        w = torch.randn(case["k"], case["c"] // case["groups"], case["kernel"], case["kernel"],
                        generator=generator).to(dtype)
        flags = []
        for tensor, name in ((dy, "dy"), (x, "x"), (w, "w")):
            np.save(f"/tmp/{name}.npy", tensor.numpy())  # f32 or f16: numpy has no bf16
            flags.append(f"--input=@/tmp/{name}.npy")
        command = [sys.executable, "-m", "iree._runtime.scripts.iree_run_module", "--device=cuda",
                   f"--module={folder / (case['name'] + '.vmfb')}", "--function=main", *flags,
                   "--output=@/tmp/out0.npy", "--output=@/tmp/out1.npy"]
        if memcheck:
            command = ["/usr/local/cuda/bin/compute-sanitizer", "--tool", "memcheck", "--print-limit", "2"] + command
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            print(case["name"], case["form"], "timeout (120 s)", flush=True)
            continue
        notes = [line.strip("= ") for line in (proc.stdout + proc.stderr).splitlines()
                 if "ERROR SUMMARY" in line or "Invalid" in line]
        if proc.returncode:
            print(case["name"], case["form"], "exit", proc.returncode, notes[:3], proc.stderr[-300:], flush=True)
            continue
        arguments = (None, [case["stride"]] * 2, [case["padding"]] * 2, [1, 1], False, [0, 0], case["groups"],
                     [True, True, False])
        reference = torch.ops.aten.convolution_backward(dy.cuda().double(), x.cuda().double(),
                                                        w.cuda().double(), *arguments)
        errors = []
        for index in range(2):
            got = torch.from_numpy(np.load(f"/tmp/out{index}.npy")).cuda().double()
            errors.append(float((got - reference[index]).abs().max() / reference[index].abs().max()))
        print(case["name"], case["form"], "grad_input %.2e grad_weight %.2e" % tuple(errors), notes[:2], flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:] == ["memcheck"])
