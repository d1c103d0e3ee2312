"""iree-compile's command line as `iree-bwdconv-compile` reads it: the
input, the output, the phases asked for, the target our plan is for, and
our own flags; everything else passes to iree-compile as it came.

Pure Python: no MLIR, no compiler.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence

from iree_bwdconv.errors import InvalidArgumentError
from iree_bwdconv.options import TARGETS

EXPLAIN_FLAG = "--iree-bwdconv-explain"
TARGET_FLAG = "--iree-bwdconv-target"
# iree-compile's flags whose value may follow as the next word.
_VALUED = ("-o", "--output-file", "--compile-to", "--compile-from")
# The phases iree-compile stops after or starts from, in order.
PHASES = ("start", "input", "abi", "preprocessing", "global-optimization", "dispatch-creation", "flow", "stream",
          "executable-sources", "executable-configurations", "executable-targets", "hal", "vm", "end")
_HIP_CHIP_FLAGS = ("--iree-hip-target", "--iree-rocm-target", "--iree-rocm-target-chip", "--iree-hip-target-chip")
_INFO_FLAGS = ("-h", "--help", "--help-hidden", "--help-list", "--version")


@dataclass(frozen=True)
class CommandLine:
    """flags: iree-compile's flags but the input, output and phases.
    input: a path, or "-" for standard input. output: a path, "-" or None
    (iree-compile's default, standard output). explain: log each rewrite.
    target: ours for the plan, or None with `why_no_target`."""

    flags: tuple[str, ...]
    input: str = "-"
    output: Optional[str] = None
    compile_to: str = "end"
    compile_from: str = "start"
    explain: bool = False
    target: Optional[str] = None
    why_no_target: str = ""
    info_only: bool = False  # --help, --version: nothing to compile

    @property
    def output_kind(self) -> str:
        """A file name for what iree-compile writes: a module, or IR where it stops early."""
        return "module.vmfb" if self.compile_to in ("end", "vm") else "out.mlir"

    def with_phases(self, compile_from: str, compile_to: str) -> tuple[str, ...]:
        """The flags for one run of iree-compile between two phases."""
        phases = [f"--compile-from={compile_from}"] if compile_from != "start" else []
        phases += [f"--compile-to={compile_to}"] if compile_to != "end" else []
        return (*self.flags, *phases)


def _value(argv: Sequence[str], index: int, name: str) -> tuple[str, int]:
    """A flag's value, from `name=value` or the next word; the next index."""
    word = argv[index]
    if word.startswith(name + "="):
        return word.split("=", 1)[1], index + 1
    if index + 1 >= len(argv):
        raise InvalidArgumentError(name, "", "expected a value")
    return argv[index + 1], index + 2


def _phase(name: str, value: str) -> str:
    if value not in PHASES:
        raise InvalidArgumentError(name, value, f"expected one of {', '.join(PHASES)}")
    return value


def parse(argv: Sequence[str]) -> CommandLine:
    """Read iree-compile's command line (InvalidArgumentError naming a bad flag)."""
    flags: list[str] = []
    inputs: list[str] = []
    found: dict = {}
    index = 0
    while index < len(argv):
        word = argv[index]
        name = word.split("=", 1)[0]
        if word == EXPLAIN_FLAG:
            found["explain"], index = True, index + 1
        elif name == TARGET_FLAG:
            value, index = _value(argv, index, TARGET_FLAG)
            if value not in TARGETS:
                raise InvalidArgumentError(TARGET_FLAG, value, f"expected one of {', '.join(TARGETS)}")
            found["chosen"] = value
        elif name in _VALUED and (word == name or word.startswith(name + "=")):
            value, index = _value(argv, index, name)
            key = {"-o": "output", "--output-file": "output"}.get(name, name.lstrip("-").replace("-", "_"))
            found[key] = _phase(name, value) if key.startswith("compile_") else value
        elif word == "-" or not word.startswith("-"):
            inputs.append(word)
            index += 1
        else:
            flags.append(word)
            index += 1
    if len(inputs) > 1:
        raise InvalidArgumentError("input", " ".join(inputs), "one input file (flags take their values after '=')")
    line = CommandLine(flags=tuple(flags), input=inputs[0] if inputs else "-", output=found.get("output"),
                       compile_to=found.get("compile_to", "end"), compile_from=found.get("compile_from", "start"),
                       explain=found.get("explain", False), info_only=any(f.split("=")[0] in _INFO_FLAGS
                                                                           for f in flags))
    target, why_not = found.get("chosen"), ""
    if target is None:
        target, why_not = target_of(line.flags)
    return dataclasses.replace(line, target=target, why_no_target=why_not)


def _values(flags: Sequence[str], name: str) -> list[str]:
    return [v for flag in flags if flag.startswith(name + "=") for v in flag.split("=", 1)[1].split(",") if v]


def target_of(flags: Sequence[str]) -> tuple[Optional[str], str]:
    """The target our plan is for, from iree-compile's target flags: (name,
    "") or (None, why none). One device only, and of the kinds the plan
    knows: the CPU (llvm-cpu), gfx942, CUDA."""
    devices = {d.split("=")[-1].split("[")[0] for d in _values(flags, "--iree-hal-target-device")}
    devices |= set(_values(flags, "--iree-hal-target-backends"))
    kinds = {"local": "cpu", "llvm-cpu": "cpu", "hip": "hip", "rocm": "hip", "cuda": "cuda"}
    known = {kinds.get(device, device) for device in devices}
    if not known:
        return None, "no --iree-hal-target-device or --iree-hal-target-backends flag: no target to plan for"
    if len(known) > 1:
        return None, f"several target devices ({', '.join(sorted(devices))}): give {TARGET_FLAG}="
    kind = known.pop()
    if kind == "cpu":
        local = set(_values(flags, "--iree-hal-local-target-device-backends"))
        if local - {"llvm-cpu"}:
            return None, f"local backends {', '.join(sorted(local))}: the plan knows llvm-cpu"
        return "cpu", ""
    if kind == "hip":
        chips = {chip for name in _HIP_CHIP_FLAGS for chip in _values(flags, name)}
        if chips != {"gfx942"}:
            return None, f"HIP chip {', '.join(sorted(chips)) or 'not given'}: the plan's GPU rules are gfx942's"
        return "gfx942", ""
    if kind == "cuda":
        return "cuda", ""
    return None, f"target device {kind}: the plan knows cpu (llvm-cpu), gfx942 and cuda"
