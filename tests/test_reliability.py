"""Probes of a hostile user's: threads, bad arguments, planted and damaged
cache files, repro folders. Each once failed (docs/reliability.md has the
table: probe, what it did, this test)."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import iree_bwdconv
import iree_bwdconv.lowering
from iree_bwdconv.compiler import compile_cache, pipeline
from iree_bwdconv import functional
from iree_bwdconv.torch_compile import isolation
from iree_bwdconv.compiler.compile_cache import CompileCache
from iree_bwdconv.torch_compile.dynamo import GraphLoweringError
from iree_bwdconv.errors import InvalidArgumentError
from iree_bwdconv.options import LoweringOptions

# Four small configurations, each its own module.
_CONFIGS = [
    ((2, 3, 8, 8), (4, 3, 3, 3), [2, 2], [1, 1], 1),
    ((2, 4, 7, 6), (4, 2, 3, 3), [1, 2], [1, 0], 2),
    ((1, 2, 9), (3, 2, 2), [2], [0], 1),
    ((2, 4, 6, 6), (4, 1, 1, 1), [2, 2], [0, 0], 4),
]


def _call(config, errors: list) -> None:
    shape, weight_shape, stride, padding, groups = config
    generator = torch.Generator().manual_seed(len(shape))
    x, w = torch.randn(shape, generator=generator), torch.randn(weight_shape, generator=generator)
    conv = torch.nn.functional.conv1d if len(shape) == 3 else torch.nn.functional.conv2d
    dy = torch.randn(conv(x, w, stride=stride, padding=padding, groups=groups).shape, generator=generator)
    arguments = (None, stride, padding, [1] * len(stride), False, [0] * len(stride), groups, [True, True, False])
    try:
        got = iree_bwdconv.convolution_backward(dy, x, w, *arguments)
        expected = torch.ops.aten.convolution_backward(dy.double(), x.double(), w.double(), *arguments)
        for a, b in zip(got[:2], expected[:2]):
            assert (a.double() - b).abs().max().item() <= 1e-4 * b.abs().max().item()
    except BaseException as error:  # noqa: BLE001 - reported to the test's thread
        errors.append(error)


@pytest.mark.parametrize("round_", range(2))
def test_first_calls_from_threads_at_once(round_):
    """Four threads' first calls at once failed inside torch.export, and in
    one run in five left torch.backends.mkldnn.enabled off for the process."""
    functional.clear_cache()
    mkldnn = torch.backends.mkldnn.enabled
    errors: list = []
    threads = [threading.Thread(target=_call, args=(config, errors)) for config in _CONFIGS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert torch.backends.mkldnn.enabled == mkldnn


_DY, _X, _W = torch.zeros(2, 4, 4, 4), torch.zeros(2, 3, 8, 8), torch.zeros(4, 3, 3, 3)
_GOOD = dict(bias_sizes=None, stride=[2, 2], padding=[1, 1], dilation=[1, 1], transposed=False,
             output_padding=[0, 0], groups=1, output_mask=[True, True, False])


@pytest.mark.parametrize("argument, value", [
    ("transposed", "False"),  # bool("False") is True: gradients ~100% off
    ("transposed", 2),
    ("stride", [2.0, 2]),  # int(2.5) would be 2
    ("padding", [1.5, 1]),
    ("groups", 1.0),
    ("groups", True),
    ("output_mask", ["yes", True, False]),
    ("bias_sizes", [4.0]),
    ("dilation", "11"),
])
def test_arguments_eager_refuses_are_refused_by_name(argument, value):
    arguments = dict(_GOOD, **{argument: value})
    with pytest.raises(InvalidArgumentError) as error:
        functional.spec_of(_DY, _X, _W, *arguments.values())
    assert error.value.argument == argument


@pytest.mark.parametrize("argument, value", [
    ("groups", np.int64(1)),  # eager takes numpy and torch integers
    ("groups", torch.tensor(1)),
    ("stride", [np.int32(2), torch.tensor(2)]),
    ("transposed", np.bool_(False)),
    ("transposed", 0),  # and 0 or 1 for a bool
    ("output_mask", [1, 1, 0]),
])
def test_arguments_eager_takes_are_taken(argument, value):
    arguments = dict(_GOOD, **{argument: value})
    spec = functional.spec_of(_DY, _X, _W, *arguments.values())
    assert spec.stride == (2, 2) and spec.groups == 1 and not spec.transposed


def test_dynamic_batch_must_be_a_bool():
    with pytest.raises(InvalidArgumentError, match="dynamic_batch"):
        iree_bwdconv.convolution_backward(_DY, _X, _W, *_GOOD.values(), dynamic_batch="yes")


@pytest.mark.parametrize("make", [lambda t: t.to("meta"),
                                  lambda t: torch._subclasses.fake_tensor.FakeTensorMode().from_tensor(t)],
                         ids=["meta", "fake"])
def test_meta_and_fake_tensors_are_refused_before_compiling(make, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("compiled a module for tensors without values")

    monkeypatch.setattr(functional, "compiled_module", refuse)
    with pytest.raises(InvalidArgumentError, match="input.device"):
        iree_bwdconv.convolution_backward(_DY, make(_X), _W, *_GOOD.values())


# The compile cache: trusts nothing it did not write for the key asked for.

_KEY_A, _KEY_B = "a" * 64, "b" * 64


def test_an_entry_copied_over_another_key_is_refused(tmp_path, caplog):
    """A `conv(x)*2` module once answered for `conv(x)*3`: the digest
    covered the payload only."""
    cache = CompileCache(tmp_path / "cache")
    cache.store(_KEY_A, b"module of A")
    cache.path(_KEY_B).write_bytes(cache.path(_KEY_A).read_bytes())
    assert cache.load(_KEY_A) == b"module of A"
    assert cache.load(_KEY_B) is None and cache.corrupt == 1
    assert "another key" in caplog.text and not cache.path(_KEY_B).exists()


def test_the_copied_entry_through_the_backend_gives_the_right_numbers(tmp_path):
    cache_dir = tmp_path / "cache"
    x = torch.randn(2, 3, 8, 8)
    w = torch.randn(4, 3, 3, 3)
    twice = lambda x: torch.nn.functional.conv2d(x, w) * 2  # noqa: E731
    thrice = lambda x: torch.nn.functional.conv2d(x, w) * 3  # noqa: E731
    torch._dynamo.reset()
    torch.compile(twice, backend=iree_bwdconv.backend(cache_dir=str(cache_dir)))(x)
    (entry,) = cache_dir.glob("*.vmfb")
    backend = iree_bwdconv.backend(cache_dir=str(cache_dir), fallback="raise")
    torch._dynamo.reset()
    torch.compile(thrice, backend=backend)(x)  # stores the second key's entry
    for other in cache_dir.glob("*.vmfb"):
        if other != entry:
            other.write_bytes(entry.read_bytes())  # A's module planted under B's key
    torch._dynamo.reset()
    again = iree_bwdconv.backend(cache_dir=str(cache_dir), fallback="raise")
    got = torch.compile(thrice, backend=again)(x)
    torch._dynamo.reset()
    assert torch.allclose(got, thrice(x), rtol=1e-5, atol=1e-5) and again.cache.corrupt == 1


def test_a_folder_others_may_write_is_not_used(tmp_path, caplog):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    cache = CompileCache(folder)
    assert cache.get_or_compile(_KEY_A, lambda: b"compiled") == b"compiled"
    assert not cache.path(_KEY_A).exists() and cache.load(_KEY_A) is None
    assert str(folder) in caplog.text and "written by other users" in caplog.text


def test_a_folder_of_another_user_is_not_used(tmp_path, monkeypatch, caplog):
    cache = CompileCache(tmp_path / "cache")
    cache.store(_KEY_A, b"module")
    monkeypatch.setattr(compile_cache.os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    stranger = CompileCache(tmp_path / "cache")
    assert stranger.load(_KEY_A) is None and "owned by user" in caplog.text


def test_an_entry_others_may_write_is_refused(tmp_path, caplog):
    cache = CompileCache(tmp_path / "cache")
    cache.store(_KEY_A, b"module")
    cache.path(_KEY_A).chmod(0o666)
    assert cache.load(_KEY_A) is None and "written by other users" in caplog.text


def test_new_folders_and_entries_are_private(tmp_path):
    cache = CompileCache(tmp_path / "cache")
    cache.store(_KEY_A, b"module")
    assert stat.S_IMODE(cache.directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(cache.path(_KEY_A).stat().st_mode) == 0o600


def test_a_killed_writers_file_is_removed_once_stale(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    stale, fresh = folder / ".aaaa-old.tmp", folder / ".bbbb-new.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    CompileCache(folder).load(_KEY_A)
    assert not stale.exists() and fresh.exists()  # a live writer's is left alone


def test_a_read_only_cache_degrades_to_none_with_one_warning(tmp_path, monkeypatch, caplog):
    cache = CompileCache(tmp_path / "cache")
    cache.store(_KEY_A, b"module")
    cache.path(_KEY_B).write_bytes(b"corrupted")

    def read_only(*args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(compile_cache.tempfile, "mkstemp", read_only)
    monkeypatch.setattr(Path, "unlink", read_only)
    assert cache.load(_KEY_B) is None  # its removal fails, quietly
    for _ in range(3):
        assert cache.get_or_compile(_KEY_B, lambda: b"compiled") == b"compiled"
    assert caplog.text.count("cannot be written") == 1
    assert cache.load(_KEY_A) == b"module"  # what it holds is still read


def test_the_key_names_the_host_cpu(monkeypatch):
    """An entry built where `host` meant AVX-512 killed a smaller CPU's
    process with SIGILL: the flag said `host`, not the CPU."""
    flags = pipeline.compile_flags("cpu")
    here = compile_cache.cache_key("graph", pipeline.keyed_flags(flags))
    assert pipeline.host_cpu().startswith("cpu=") and "features=+" in pipeline.host_cpu()
    monkeypatch.setattr(pipeline, "host_cpu", lambda: "cpu=x86-64 features=+sse2")
    assert compile_cache.cache_key("graph", pipeline.keyed_flags(flags)) != here


# Where failing IR is saved.


def test_a_repro_folder_naming_a_file_does_not_hide_the_compile_error(tmp_path, monkeypatch):
    taken = tmp_path / "a file"
    taken.write_text("")
    with pytest.raises(iree_bwdconv.PipelineError, match="iree-compile for target cpu") as error:
        pipeline.iree_compile("func.func @main( {", "cpu", repro_dir=str(taken))
    assert Path(error.value.repro_path).read_text() == "func.func @main( {"


def test_the_default_repro_folder_is_this_users_alone():
    folder = pipeline.repro_dir()
    info = folder.stat()
    assert str(os.getuid()) in folder.name and info.st_uid == os.getuid() and not info.st_mode & 0o077


# The environment and the command line.


@pytest.mark.parametrize("stride", [1, 2], ids=["unstrided", "strided"])
def test_an_unknown_grad_input_form_is_refused_for_every_layer(stride, monkeypatch):
    """It was refused where the phases' rule ran and ignored elsewhere."""
    from iree_bwdconv.options import GRAD_INPUT_FORM_VARIABLE

    monkeypatch.setenv(GRAD_INPUT_FORM_VARIABLE, "fastest")
    x, w = torch.zeros(2, 3, 8, 8), torch.zeros(4, 3, 3, 3)
    dy = torch.zeros(torch.nn.functional.conv2d(x, w, stride=stride, padding=1).shape)
    with pytest.raises(InvalidArgumentError, match=f"{GRAD_INPUT_FORM_VARIABLE}='fastest'"):
        iree_bwdconv.convolution_backward(dy, x, w, None, [stride] * 2, [1, 1], [1, 1], False, [0, 0], 1,
                                          [True, True, False])


@pytest.mark.parametrize("content, said", [
    (None, "No such file or directory"),
    ("garbage {{\n", "not MLIR the torch dialect can read"),
    (bytes(range(256)), "not a text file"),
], ids=["missing", "garbage", "binary"])
def test_the_cli_says_what_is_wrong_with_its_input_in_one_line(tmp_path, capsys, content, said):
    from iree_bwdconv import cli

    path = tmp_path / "model.mlir"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert cli.main(["lower", str(path)]) == 1
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and said in error and str(path) in error


# Crashes and hangs of torch-mlir and IREE stay out of the user's process.


def _sorted_descending(x: torch.Tensor) -> torch.Tensor:
    return torch.sort(x, dim=-1, descending=True).values * x  # its backward crashed torch-mlir


def test_a_graph_that_crashes_torch_mlir_runs_eagerly(caplog):
    """Its backward ended the process with a segmentation fault, although
    fallback="eager" promised it would run eagerly."""
    x = torch.randn(4, 8, requires_grad=True)
    backend = iree_bwdconv.backend(cache=False)
    torch._dynamo.reset()
    with caplog.at_level("WARNING", logger="iree_bwdconv"):
        torch.compile(_sorted_descending, backend=backend)(x).sum().backward()
    torch._dynamo.reset()
    expected = x.detach().clone().requires_grad_(True)
    _sorted_descending(expected).sum().backward()
    assert torch.equal(x.grad, expected.grad)
    assert "lowering worker died" in caplog.text and "running that graph eagerly" in caplog.text


def test_a_graph_past_the_time_limit_falls_back(caplog):
    x = torch.randn(2, 3, 8, 8)
    w = torch.randn(4, 3, 3, 3)
    backend = iree_bwdconv.backend(cache=False, compile_timeout_s=0.001)
    torch._dynamo.reset()
    with caplog.at_level("WARNING", logger="iree_bwdconv"):
        got = torch.compile(lambda x: torch.nn.functional.conv2d(x, w, stride=2), backend=backend)(x)
    torch._dynamo.reset()
    assert torch.equal(got, torch.nn.functional.conv2d(x, w, stride=2))
    assert "time limit of 0.001 s" in caplog.text and len(backend.stats.fallbacks) == 1


def _conv_bn_relu() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, stride=2, padding=1), torch.nn.BatchNorm2d(4),
                               torch.nn.ReLU())


def test_a_frames_forward_and_backward_graphs_compile_side_by_side(monkeypatch):
    """Graphs compiled one after another: EfficientNet-B0's first step
    spent 202 s in iree-compile on a 2-core machine. Each lowering here
    waits until a second one has started: one at a time, the forward's
    waits in vain and falls back."""
    both_lowering = threading.Barrier(2, timeout=60)
    lower = isolation.lower

    def lower_when_both_are(*args):
        both_lowering.wait()
        return lower(*args)

    monkeypatch.setattr(iree_bwdconv.torch_compile.isolation, "lower", lower_when_both_are)
    model, x = _conv_bn_relu(), torch.randn(2, 3, 8, 8, requires_grad=True)
    backend = iree_bwdconv.backend(cache=False, fallback="raise", parallel_compiles=2)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    compiled(x).square().sum().backward()
    torch._dynamo.reset()
    expected_x = x.detach().clone().requires_grad_(True)
    expected = _conv_bn_relu()
    expected(expected_x).square().sum().backward()
    assert backend.stats.graphs == 2 and not backend.stats.fallbacks
    torch.testing.assert_close(x.grad, expected_x.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(model[0].weight.grad, expected[0].weight.grad, rtol=1e-4, atol=1e-5)


def test_a_graph_failing_in_the_background_falls_back_at_its_first_call(caplog):
    backend = iree_bwdconv.backend(cache=False, parallel_compiles=2)
    x = torch.randn(4, 8, requires_grad=True)
    torch._dynamo.reset()
    with caplog.at_level("WARNING", logger="iree_bwdconv"):
        torch.compile(_sorted_descending, backend=backend)(x).sum().backward()
    torch._dynamo.reset()
    assert len(backend.stats.fallbacks) == 1 and "running that graph eagerly" in caplog.text
    with pytest.raises(GraphLoweringError, match="lowering worker died"):
        raising = iree_bwdconv.backend(cache=False, fallback="raise", parallel_compiles=2)
        torch.compile(_sorted_descending, backend=raising)(x).sum().backward()
    torch._dynamo.reset()


def test_a_lowering_worker_outlives_the_thread_that_started_it(monkeypatch):
    """Linux ends a process whose parent-death signal is set when the
    thread that started it ends: a worker started by a compile thread died
    with it, and the next graph found it dead."""
    monkeypatch.setattr(isolation, "_idle", [])  # the thread must start a worker
    graph = str(iree_bwdconv.lowering.import_module(torch.nn.ReLU(), torch.randn(2, 3)))
    started = threading.Thread(target=isolation.lower, args=(graph, LoweringOptions(target="cpu"), 600.0))
    started.start()
    started.join()
    (pid,) = isolation.worker_pids()
    time.sleep(0.5)
    assert _running(pid), "the worker ended with the thread that started it"
    os.kill(pid, 9)


@pytest.mark.parametrize("argument, value", [("isolate", "yes"), ("compile_timeout_s", 0), ("compile_timeout_s", "1"),
                                             ("parallel_compiles", 0), ("parallel_compiles", 2.0),
                                             ("parallel_compiles", True)])
def test_bad_backend_settings_are_named(argument, value):
    with pytest.raises(InvalidArgumentError) as error:
        iree_bwdconv.backend(**{argument: value})
    assert error.value.argument == argument


_KILLED_MID_COMPILE = """
import sys, time
from pathlib import Path
import torch
import iree_bwdconv
from iree_bwdconv.torch_compile import isolation
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.options import LoweringOptions
isolation.lower(Path(sys.argv[1]).read_text(), LoweringOptions(target="cpu"), 600)  # starts the lowering worker
Path(sys.argv[2]).write_text(str(isolation.worker_pids()[0]))
pipeline.iree_compile(Path(sys.argv[3]).read_text(), "gfx942")
"""


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def test_a_process_killed_mid_compile_leaves_nothing_running_or_behind(tmp_path):
    """A killed process left iree-compile running and its scratch folder
    behind; the lowering worker must end with it too."""
    import subprocess
    import sys

    raw = tmp_path / "graph.mlir"
    raw.write_text(str(iree_bwdconv.lowering.import_module(torch.nn.ReLU(), torch.randn(2, 3))))
    spec = functional.spec_of(torch.zeros(2, 16, 8, 8, 8), torch.zeros(2, 16, 16, 16, 16), torch.zeros(16, 16, 3, 3, 3),
                              None, [2] * 3, [1] * 3, [1] * 3, False, [0] * 3, 1, [True, True, True])
    module = tmp_path / "module.mlir"
    module.write_text(functional.lowered(spec, (16,), "gfx942"))
    worker_pid = tmp_path / "worker.pid"
    child = subprocess.Popen([sys.executable, "-c", _KILLED_MID_COMPILE, str(raw), str(worker_pid), str(module)])
    scratch = []
    deadline = time.time() + 120
    while not scratch and time.time() < deadline and child.poll() is None:
        scratch = list(Path(tempfile.gettempdir()).glob(f"iree-bwdconv-compile-{child.pid}-*"))
        time.sleep(0.05)
    assert scratch, "the child never started iree-compile"
    compilers = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).count(str(scratch[0]))]
    child.kill()
    child.wait()
    time.sleep(1.0)
    assert compilers and not any(_running(pid) for pid in compilers), "iree-compile outlived its caller"
    assert not _running(int(worker_pid.read_text())), "the lowering worker outlived its caller"
    pipeline._sweep_scratch.__wrapped__()
    assert not scratch[0].exists()


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_an_infinite_weight_differs_from_eager_only_near_the_border():
    """docs/reliability.md, "Unlike eager, on purpose": our grad_input forms
    multiply grad_output's padding zeros by the weight, so an infinite
    weight makes NaN of a few positions where eager's are finite, all
    within a kernel's reach of the border. If none differ, that section is
    stale; if one differs inside, a form reads zeros the docs do not know of."""
    generator = torch.Generator().manual_seed(0)
    # 6 columns at stride 2: the last one's taps read past grad_output's 3.
    x, w = torch.randn(2, 4, 6, 6, generator=generator), torch.randn(8, 4, 3, 3, generator=generator)
    dy = torch.randn(2, 8, 3, 3, generator=generator)
    w[1, 2, 0, 0] = float("inf")
    arguments = (None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1, [True, False, False])
    eager = torch.ops.aten.convolution_backward(dy, x, w, *arguments)[0]
    ours = functional.convolution_backward(dy, x, w, *arguments)[0]
    differs = torch.isfinite(eager) & ~torch.isfinite(ours)
    reach = 2  # (kernel - 1) * dilation
    inside = torch.zeros(6, 6, dtype=torch.bool)
    inside[reach:-reach, reach:-reach] = True
    assert differs.any(), "an infinite weight no longer differs from eager: update docs/reliability.md"
    assert not (differs & inside).any()
    assert torch.equal(torch.isfinite(ours) | differs, torch.isfinite(eager) | differs)
