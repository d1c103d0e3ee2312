"""A soak of the functional API and the compile cache, as a hostile user
would run them: 8 threads x 500 `convolution_backward` calls over 50
configurations from a cold start, every result checked against eager in
float64; then 4 processes training one model through the backend with one
shared, cold compile cache. Reports wrong results, errors, files left in
the cache and temp folders, torch's flags, and the resident memory.

    ./dev python -m benchmarks.soak [THREADS] [CALLS] [CONFIGURATIONS]
"""

from __future__ import annotations

import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

import iree_bwdconv
from iree_bwdconv import functional, reference


def configurations(count: int, seed: int = 0) -> list[tuple]:
    """(grad_output, input, weight, arguments) of `count` small valid 2-D
    convolutions: strides, paddings, dilations, groups, transposed."""
    rng = random.Random(seed)
    drawn = []
    while len(drawn) < count:
        groups = rng.choice((1, 1, 2))
        c, f = groups * rng.randint(1, 3), groups * rng.randint(1, 3)
        k, s, p, d = rng.choice((1, 2, 3)), rng.choice((1, 2)), rng.randint(0, 1), rng.choice((1, 1, 2))
        size = rng.randint(5, 9)
        x, w = torch.randn(2, c, size, size), torch.randn(f, c // groups, k, k)
        out = (size + 2 * p - d * (k - 1) - 1) // s + 1
        if out < 1:
            continue
        arguments = (None, [s, s], [p, p], [d, d], False, [0, 0], groups, [True, True, False])
        drawn.append((torch.randn(2, f, out, out), x, w, arguments))
    return drawn


def threads_soak(threads: int, calls: int, count: int) -> dict:
    cases = configurations(count)
    functional.clear_cache()
    mkldnn = torch.backends.mkldnn.enabled
    wrong, errors = [], []

    def work(worker: int) -> None:
        rng = random.Random(worker)
        for _ in range(calls):
            dy, x, w, arguments = rng.choice(cases)
            try:
                got = iree_bwdconv.convolution_backward(dy, x, w, *arguments)
                failed = [c for c in reference.compare(got, dy, x, w, arguments) if not c.ok]
                if failed:
                    wrong.append(failed)
            except Exception as error:  # noqa: BLE001 - counted and reported
                errors.append(f"{type(error).__name__}: {error}")

    started = time.perf_counter()
    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return dict(calls=threads * calls, configurations=count, seconds=time.perf_counter() - started,
                wrong=len(wrong), errors=len(errors), first_error=errors[:1],
                mkldnn_unchanged=torch.backends.mkldnn.enabled == mkldnn)


_TRAINER = """
import sys, copy, torch, iree_bwdconv
from iree_bwdconv.models import DemoCNN, SyntheticImages
from iree_bwdconv.training import forward_backward, relative_grad_diff
torch.manual_seed(0)
eager = DemoCNN(width=8)
ours = copy.deepcopy(eager)
backend = iree_bwdconv.backend(cache_dir=sys.argv[1], fallback="raise")
images, labels = SyntheticImages(size=16).batch(4)
forward_backward(torch.compile(ours, backend=backend), images, labels)
forward_backward(eager, images, labels)
print(relative_grad_diff(ours, eager), backend.cache.hits, backend.cache.misses)
"""


def processes_soak(processes: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder) / "cache"
        children = [subprocess.Popen([sys.executable, "-c", _TRAINER, str(cache)], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True) for _ in range(processes)]
        results = [child.communicate()[0].split() for child in children]
        codes = [child.returncode for child in children]
        left = sorted(p.name for p in cache.iterdir() if not p.name.endswith(".vmfb"))
        entries = len(list(cache.glob("*.vmfb")))
    diffs = [float(r[0]) for r in results if r]
    return dict(processes=processes, exit_codes=codes, largest_grad_diff=max(diffs, default=float("nan")),
                entries=entries, other_files_in_cache=left,
                hits_misses=[(int(r[1]), int(r[2])) for r in results if r])


def leftovers() -> list[str]:
    """This process's compile scratch folders still in the temp folder."""
    return [p.name for p in Path(tempfile.gettempdir()).glob(f"iree-bwdconv-compile-{os.getpid()}-*")]


def resident_mib() -> float:
    """This process's resident memory now (Linux), else its peak."""
    status = Path("/proc/self/status")
    if status.exists():
        line = next(line for line in status.read_text().splitlines() if line.startswith("VmRSS:"))
        return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(threads: int, calls: int, count: int) -> int:
    torch.manual_seed(0)
    rss_start = resident_mib()
    soaked = threads_soak(threads, calls, count)
    rss_end = resident_mib()
    print(f"## {threads} threads x {calls} calls over {count} configurations, cold\n")
    for name, value in soaked.items():
        print(f"- {name}: {value}")
    print(f"- resident memory: {rss_start:.0f} MiB before, {rss_end:.0f} MiB at the end "
          f"(the {count} modules loaded)")
    print(f"- scratch folders left: {leftovers()}")
    shared = processes_soak(4)
    print("\n## 4 processes training the demo CNN through one cold cache\n")
    for name, value in shared.items():
        print(f"- {name}: {value}")
    ok = (soaked["wrong"] == 0 and soaked["errors"] == 0 and soaked["mkldnn_unchanged"] and not leftovers()
          and all(code == 0 for code in shared["exit_codes"]) and not shared["other_files_in_cache"])
    return 0 if ok else 1


if __name__ == "__main__":
    arguments = [int(a) for a in sys.argv[1:]]
    sys.exit(main(*(arguments + [8, 500, 50][len(arguments):])))
