"""The one place that runs MLIR pass pipelines and iree-compile.

Every failure leaves its input IR in a file and names the one command that
reproduces it (torch-mlir-opt or iree-compile, both installed with the
stack). Files go to the caller's `repro_dir` (`LoweringOptions.repro_dir`,
which the edges read from $IREE_BWDCONV_REPRO_DIR), else a temp folder.

Every module first has its windowed inputs cropped where IREE would
refuse them (`exact_windows`). A module compiled for the CPU then gets
`cpu_conv_store`'s copies, where
IREE 3.13's CPU code would store a convolution's result wrongly, whatever
made the module (the lowering, a GPU target's form run on the CPU, a test).
A module compiled for CUDA is refused (`WrongCodeError`) where IREE's
configured dispatches hold a contraction its CUDA code computes wrongly
(`mma_order`), whatever made it; where they hold one whose code reads past
an operand's end (`mma_padding`), it is compiled once more with those
contractions given whole tiles (`whole_tiles`) or widened to f32, and
refused if any is left. Every compile passes the flags of the IREE faults
seen on its target (`iree_faults`), after the caller's.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence, Union

from torch_mlir import ir
from torch_mlir.passmanager import PassManager

from iree_bwdconv.compiler import (cpu_conv_store, dispatch_regions, exact_windows, iree_faults, mma_order, mma_padding,
                                   whole_tiles)
from iree_bwdconv.errors import PipelineError, WrongCodeError

TORCH_BACKEND = "torchdynamo-export-to-torch-backend-pipeline"
LINALG_BACKEND = "torch-backend-to-linalg-on-tensors-backend-pipeline"
TOSA_BACKEND = "torch-backend-to-tosa-backend-pipeline"
STABLEHLO_BACKEND = "torch-backend-to-stablehlo-backend-pipeline"

HOST_CPU_FLAG = "--iree-llvmcpu-target-cpu=host"
TARGET_FLAGS: dict[str, tuple[str, ...]] = {
    "cpu": (
        "--iree-hal-target-device=local",
        "--iree-hal-local-target-device-backends=llvm-cpu",
        HOST_CPU_FLAG,
    ),
    "gfx942": ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"),
    # IREE 3.13 rejects sm_90; sm_80 PTX runs on Hopper.
    "cuda": ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"),
}


def compile_flags(target: str, extra_flags: tuple[str, ...] = (), workarounds: bool = True) -> tuple[str, ...]:
    """Every flag iree-compile gets for `target`: the target's, the
    caller's, then the workarounds of IREE's faults, which win over a
    caller's flag of the same name (the last of a repeated flag counts)."""
    if target not in TARGET_FLAGS:
        raise ValueError(f"target={target!r}: expected one of {', '.join(TARGET_FLAGS)}")
    return (*TARGET_FLAGS[target], *extra_flags, *(iree_faults.flags_for(target) if workarounds else ()))


@functools.cache
def host_cpu() -> str:
    """The CPU that `HOST_CPU_FLAG` names to IREE on this machine, as IREE
    resolves it: its name and features (e.g. `znver4` and +avx512f...).
    Read once per process from a compile of an empty module."""
    flags = [*TARGET_FLAGS["cpu"], "--compile-to=preprocessing"]
    proc = subprocess.run([_tool("iree-compile"), *flags, "-", "-o", "-"], input="module {}", capture_output=True,
                          text=True)
    found = re.search(r'cpu = "([^"]*)", cpu_features = "([^"]*)"', proc.stdout)
    if proc.returncode or not found:
        raise PipelineError("iree-compile resolving the host CPU", proc.stderr or proc.stdout[:2000], "-",
                            shlex.join([_tool("iree-compile"), *flags, "-"]))
    return f"cpu={found.group(1)} features={found.group(2)}"


def keyed_flags(flags: tuple[str, ...]) -> tuple[str, ...]:
    """`flags` as a cache key must hold them: the host CPU spelled out, so
    that a module built for one CPU is never taken for another's (one
    built with AVX-512 ends a smaller CPU's process with SIGILL)."""
    return tuple(f"{flag} ({host_cpu()})" if flag == HOST_CPU_FLAG else flag for flag in flags)


def _private_folder(path: Path) -> bool:
    """Whether `path` is a folder of this user's that no one else may write."""
    try:
        info = path.stat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def repro_dir(configured: Optional[str] = None) -> Path:
    """Where failing IR is saved: the `configured` folder, else a folder of
    this user's in the temp folder (0700). Where neither can be used (the
    setting names a file, another user made the folder), a new private
    temp folder: the failure being reported must not turn into this one."""
    path = Path(configured) if configured else Path(tempfile.gettempdir()) / f"iree-bwdconv-repro-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return Path(tempfile.mkdtemp(prefix="iree-bwdconv-repro-"))
    if not configured and not _private_folder(path):
        return Path(tempfile.mkdtemp(prefix="iree-bwdconv-repro-"))
    return path


def _save(text: Union[str, bytes], stem: str, configured: Optional[str]) -> Path:
    folder = repro_dir(configured)
    try:
        fd, name = tempfile.mkstemp(prefix=f"{stem}-", suffix=".mlir", dir=folder)
    except OSError:  # a read-only or full folder the user named
        fd, name = tempfile.mkstemp(prefix=f"{stem}-", suffix=".mlir", dir=tempfile.mkdtemp(prefix="iree-bwdconv-repro-"))
    with os.fdopen(fd, "wb") as f:
        f.write(text.encode() if isinstance(text, str) else text)
    return Path(name)


def _tool(name: str) -> str:
    """An installed tool, by absolute path when it sits beside this Python."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else (shutil.which(name) or name)


def run_pipeline(module: ir.Module, pipeline: str, stage: str, *, repro_dir: Optional[str] = None) -> None:
    """Run a textual pass pipeline in place, e.g. "builtin.module(...)"
    (`repro_dir`: where a failure saves its input, as every step here)."""
    before = module.operation.get_asm(enable_debug_info=True)
    try:
        with module.context:
            PassManager.parse(pipeline).run(module.operation)
    except ir.MLIRError as err:
        path = _save(before, stage.replace(" ", "_"), repro_dir)
        command = f"{_tool('torch-mlir-opt')} --pass-pipeline={shlex.quote(pipeline)} {path}"
        raise PipelineError(stage, str(err), str(path), command) from None


def run_iree_pipeline(text: str, pipeline: str, stage: str, *, repro_dir: Optional[str] = None) -> str:
    """`text` through a textual pass pipeline in IREE's own bindings (for IR
    torch-mlir's cannot parse: linalg with IREE's ops), as text."""
    from iree.compiler import ir as iree
    from iree.compiler.passmanager import PassManager as IreePassManager

    with iree.Context(), iree.Location.unknown():
        try:
            module = iree.Module.parse(text)
            IreePassManager.parse(pipeline).run(module.operation)
        except iree.MLIRError as err:
            path = _save(text, stage.replace(" ", "_"), repro_dir)
            command = f"{_tool('iree-opt')} --pass-pipeline={shlex.quote(pipeline)} {path}"
            raise PipelineError(stage, str(err), str(path), command) from None
        return str(module)


CONTRACT_CHECK = "torch-verify-linalg-on-tensors-backend-contract"


def linalg_backend_without_contract_check(context: ir.Context) -> str:
    """The linalg backend pipeline without its last pass, the check of the
    linalg-on-tensors contract, which refuses any `func.call`: for modules
    that call the package's kernels (`extern_kernels`), linked only after
    it. iree-compile verifies what the link makes."""
    with context:
        full = str(PassManager.parse(f"builtin.module({LINALG_BACKEND})"))
    tail = f",{CONTRACT_CHECK})"
    if not full.endswith(tail):
        raise PipelineError("linalg backend pipeline", f"does not end with {CONTRACT_CHECK}: {full}", "", "")
    return full.removesuffix(tail) + ")"


def load_torch_conversion_dialect(context: ir.Context) -> None:
    """Load torch_c, which the patterns' casts belong to, into `context`.

    The bindings have no Python hook for it; running an (empty) pass that
    depends on it is the documented way a context loads a dialect. Ops made
    before this would be unregistered and break later passes.
    """
    with context, ir.Location.unknown():
        empty = ir.Module.create()
        PassManager.parse("builtin.module(torch-func-backend-type-conversion)").run(empty.operation)


def iree_compile(mlir: str, target: str, extra_flags: tuple[str, ...] = (), *, as_given: bool = False,
                 timeout_s: Optional[float] = None, repro_dir: Optional[str] = None) -> bytes:
    """Compile MLIR text (linalg on tensors) to a .vmfb for `target`
    (`as_given`: without the CPU's copies, CUDA's refusal or the faults'
    flags, to show what they are for, or to time code known to be wrong;
    `timeout_s`: refuse, as a failure, a compile that takes longer)."""
    if as_given:
        return _run_iree_compile(mlir, target, extra_flags, "module.vmfb", judged=False, workarounds=False,
                                 timeout_s=timeout_s, repro_dir=repro_dir)[0]
    return _run_iree_compile(for_target(mlir, target), target, extra_flags, "module.vmfb", timeout_s=timeout_s,
                             repro_dir=repro_dir)[0]


def judged_compile(mlir: str, target: str, extra_flags: tuple[str, ...] = (), *,
                   repro_dir: Optional[str] = None) -> tuple[bytes, list]:
    """As `iree_compile`, but code it would refuse as wrong is returned with
    what is wrong in it, from the same one compile: for benchmarks that
    time or check such code."""
    return _run_iree_compile(for_target(mlir, target), target, extra_flags, "module.vmfb", refuse=False,
                             repro_dir=repro_dir)


def iree_compile_to(mlir: str, target: str, phase: str, extra_flags: tuple[str, ...] = (), *,
                    as_given: bool = False, repro_dir: Optional[str] = None) -> str:
    """Stop iree-compile after `phase` (e.g. "flow") and return that IR as
    text (`as_given` as for `iree_compile`)."""
    flags = (*extra_flags, f"--compile-to={phase}")
    if as_given:
        return _run_iree_compile(mlir, target, flags, "out.mlir", judged=False, workarounds=False,
                                 repro_dir=repro_dir)[0].decode()
    return _run_iree_compile(for_target(mlir, target), target, flags, "out.mlir", repro_dir=repro_dir)[0].decode()


def for_target(mlir: str, target: str) -> str:
    """The steps that keep IREE's faults away from `mlir` on `target`, each
    asked for by its fault's record."""
    if iree_faults.seen_on(iree_faults.CPU_PAD_FUSED_GROUPED_CONV, target):
        mlir = dispatch_regions.unwrap(mlir)  # first: the steps below read ops where the CPU has them
    if iree_faults.seen_on(iree_faults.UNIT_WINDOW_FOLD, target):
        mlir = exact_windows.crop(mlir)
    if iree_faults.seen_on(iree_faults.CPU_BATCHLESS_CONV_STORE, target):
        mlir = cpu_conv_store.guard(mlir)
    return mlir


CONFIGURATIONS_FLAG = "--iree-hal-dump-executable-configurations-to"
# The targets whose configured dispatches `mma_order` judges: where its
# fault was seen (gfx942's MFMA code has never run here).
JUDGED_TARGETS = ("cuda",)


# Runs a program that dies with the process that started it: prctl's
# PR_SET_PDEATHSIG, where Linux has it. A compile left running after its
# caller was killed held a core for minutes. (A launcher rather than
# preexec_fn, which may deadlock in a process with threads.)
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "try:\n"
    "    ctypes.CDLL(None).prctl(1, signal.SIGKILL)\n"
    "except (AttributeError, OSError):\n"
    "    pass\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(1)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)
_SCRATCH_PREFIX = "iree-bwdconv-compile-"


@functools.cache
def _compiler() -> str:
    """The iree-compile binary itself (the console script beside Python
    starts it as a child of its own, which a kill would orphan)."""
    from iree.compiler.tools import binaries

    return binaries.find_tool("iree-compile")


@functools.cache
def _sweep_scratch() -> None:
    """Once a process: remove the scratch folders of this user's compiles
    whose process is gone (one killed mid-compile leaves its folder)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_SCRATCH_PREFIX}*-*"):
        try:
            pid = int(folder.name.removeprefix(_SCRATCH_PREFIX).split("-")[0])
            if folder.stat().st_uid != os.getuid():
                continue
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (ValueError, OSError):
            continue


def _run_iree_compile(mlir: str, target: str, extra_flags: tuple[str, ...], output: str, judged: bool = True,
                      refuse: bool = True, workarounds: bool = True, timeout_s: Optional[float] = None,
                      repro_dir: Optional[str] = None) -> tuple[bytes, list]:
    flags = list(compile_flags(target, extra_flags, workarounds))
    return _compile(mlir, flags, output, f"iree-compile for target {target}", f"iree-compile-{target}",
                    judge=judged and target in JUDGED_TARGETS, refuse=refuse, timeout_s=timeout_s, repro_dir=repro_dir)


def compile_command_line(source: Union[str, bytes], flags: Sequence[str], output: str, stage: str, *,
                         judge: bool = False, repro_dir: Optional[str] = None) -> bytes:
    """iree-compile on `source` with the flags of someone's own command line
    (`iree-bwdconv-compile`'s: no target flags added), its output as bytes
    (`output` names its kind: "module.vmfb", "out.mlir"); `judge`: refuse
    code of CUDA's MMA loop-order fault (`mma_order`) as WrongCodeError."""
    return _compile(source, list(flags), output, stage, "iree-bwdconv-compile", judge=judge, refuse=True,
                    repro_dir=repro_dir)[0]


def run_command_line(argv: Sequence[str], stdin: Optional[bytes] = None) -> int:
    """iree-compile itself with `argv`, its output streams the caller's (its
    input too, or `stdin` where given): for a module left as it is, the
    output is plain iree-compile's."""
    return subprocess.run([_compiler(), *argv], input=stdin).returncode


def _compile(mlir: Union[str, bytes], flags: list[str], output: str, stage: str, stem: str, *, judge: bool,
             refuse: bool, timeout_s: Optional[float] = None, widen: bool = True,
             repro_dir: Optional[str] = None) -> tuple[bytes, list]:
    """`judge`: read IREE's configured CUDA dispatches for its faults'
    marks (`mma_order`, `mma_padding`); `widen`: compile once more with
    the overreading contractions given whole tiles or widened
    (`whole_tiles.rewrites`, in turn), where there are any."""
    wrong: list = []
    overreads: list[mma_padding.Overread] = []
    widening_failed: Optional[PipelineError] = None
    _sweep_scratch()
    with tempfile.TemporaryDirectory(prefix=f"{_SCRATCH_PREFIX}{os.getpid()}-") as tmp:
        src, out = Path(tmp) / "input.mlir", Path(tmp) / output
        src.write_bytes(mlir.encode() if isinstance(mlir, str) else mlir)
        configured, dump = _configurations(flags, Path(tmp) / "configured") if judge else (None, [])
        binaries, dump_binaries = _binaries(flags, Path(tmp) / "binaries") if judge else (None, [])
        started = time.time() - 1.0  # file times tick coarser than time.time()
        launcher = [sys.executable, "-S", "-E", "-c", _DIE_WITH_PARENT, str(os.getpid())]
        try:
            proc = subprocess.run(
                [*launcher, _compiler(), *flags, *dump, *dump_binaries, str(src), "-o", str(out)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired:
            # Worded as the lowering worker's limit is: a caller need not know which stage hit it.
            proc = subprocess.CompletedProcess(
                [], returncode=-1, stderr=f"error: iree-compile ran past its time limit of {timeout_s:g} s; it was killed")
        if proc.returncode == 0:
            judged = configured is not None and configured.is_dir()
            wrong = mma_order.misordered_in(configured, started) if judged else []
            overreads = mma_padding.overreads_in(configured, binaries, started) if judged and binaries else []
            candidates = whole_tiles.rewrites(mlir, overreads) if overreads and widen and isinstance(mlir, str) else ()
            for rewritten in candidates:
                try:  # a rewrite still marked is refused, judged or not: the next one is tried
                    return _compile(rewritten, flags, output, stage, stem, judge=judge, refuse=True,
                                    timeout_s=timeout_s, widen=False, repro_dir=repro_dir)
                except PipelineError as failed:  # marked again, or IREE's code for it failed
                    widening_failed = failed
            if refuse and isinstance(widening_failed, WrongCodeError):
                raise widening_failed  # the last rewrite's own refusal says the most
            if not ((wrong or overreads) and refuse):
                return out.read_bytes(), [*wrong, *overreads]
    path = _save(mlir, stem, repro_dir)
    command = shlex.join([_tool("iree-compile"), *flags, str(path), "-o", f"{path.with_suffix('')}.{output.split('.')[-1]}"])
    # The command dumps the configured dispatches too (to the caller's folder where it named one).
    shown = f" {CONFIGURATIONS_FLAG}={path.with_suffix('')}-configured" if dump else ""
    if wrong:
        said = "\n".join(["IREE 3.13's CUDA code computes these contractions wrongly in f16 and bf16 "
                          "(the innermost loop of N before M's; see iree_bwdconv/compiler/mma_order.py):",
                          *map(str, wrong)])
        raise WrongCodeError(stage, said, str(path), command + shown)
    if overreads:
        said = "\n".join(["IREE 3.13's CUDA code for these contractions reads past an operand's end, which "
                          "can kill the process's CUDA context (see iree_bwdconv/compiler/mma_padding.py):",
                          *map(str, overreads)])
        if widening_failed is not None:
            said += ("\nGiven whole tiles or widened to f32, they failed to compile; the last IR was saved to "
                     f"{widening_failed.repro_path}")
        raise WrongCodeError(stage, said, str(path), command + shown)
    raise PipelineError(stage, proc.stderr, str(path), command)


BINARIES_FLAG = "--iree-hal-dump-executable-binaries-to"


def _binaries(flags: list[str], ours: Path) -> tuple[Path, list[str]]:
    """Where iree-compile will write its executables' code (CUDA's PTX, for
    `mma_padding`), and the flag that asks for it, as `_configurations`."""
    named = [flag.split("=", 1)[1] for flag in flags if flag.startswith(BINARIES_FLAG + "=")]
    return (Path(named[-1]), []) if named else (ours, [f"{BINARIES_FLAG}={ours}"])


def _configurations(flags: list[str], ours: Path) -> tuple[Path, list[str]]:
    """Where iree-compile will write its configured dispatches, and the flag
    that asks for them: the caller's folder where its flags name one (the
    flag may be given once), else `ours`."""
    named = [flag.split("=", 1)[1] for flag in flags if flag.startswith(CONFIGURATIONS_FLAG + "=")]
    return (Path(named[-1]), []) if named else (ours, [f"{CONFIGURATIONS_FLAG}={ours}"])
