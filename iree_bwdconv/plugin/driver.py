"""What `iree-bwdconv-compile` and `plugin.compile_str` do with a module:
our rewrites on torch-dialect input, IREE's input phase, our rewrites on
the linalg it made (where no torch-dialect op of ours was seen: each such
op is planned once, at the torch level), then the rest of iree-compile
with the user's flags.

A module with nothing of ours in it is not compiled here: the caller runs
plain iree-compile on the input as given, so that its output is exactly
plain iree-compile's. A rewritten module that IREE fails to compile, or
compiles into code of a fault we know, is compiled as IREE lowers it
instead, with the failure's IR and command in the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from iree_bwdconv.compiler import compile_fallback, dispatch_regions, iree_faults, pipeline
from iree_bwdconv.errors import PipelineError
from iree_bwdconv.options import LoweringOptions

from iree_bwdconv.plugin import torch_input, zero_insertion
from iree_bwdconv.plugin.command_line import PHASES, CommandLine


@dataclass
class Compiled:
    """output: what iree-compile would write for the command line, or None
    where the module is compiled as IREE lowers it (the caller compiles the
    input as given). rewritten: ops replaced. log: each op seen, and why."""

    output: Optional[bytes] = None
    rewritten: int = 0
    log: list[str] = field(default_factory=list)


def _after(phase: str, other: str) -> bool:
    return PHASES.index(phase) > PHASES.index(other)


def compile_source(source: Union[str, bytes], line: CommandLine, options: LoweringOptions) -> Compiled:
    """The output of `line` for `source`, rewritten by the plan for
    `options.target`. A failure of ours is logged, and the module left to
    IREE: a compiler in someone's build must not stop where IREE would not."""
    try:
        return _compile_source(source, line, options)
    except Exception as err:  # noqa: BLE001 - any fault of ours falls back to IREE's own lowering
        return Compiled(log=[f"error: iree-bwdconv failed ({type(err).__name__}: {err})",
                             "the module is compiled as IREE lowers it instead"])


def _compile_source(source: Union[str, bytes], line: CommandLine, options: LoweringOptions) -> Compiled:
    done = Compiled()
    if _after(line.compile_from, "input"):
        done.log.append(f"--compile-from={line.compile_from}: past the input phase, where our rewrites run")
        return done
    text: Union[str, bytes] = source
    torch_judged = 0
    if line.compile_from == "start":
        torch = torch_input.rewrite(source, options)
        torch_judged = torch.judged
        done.log += torch.log
        done.rewritten += torch.count
        text = torch.text or source
        try:
            text = pipeline.compile_command_line(text, line.with_phases("start", "input"), "out.mlir",
                                                 "IREE's input phase", repro_dir=options.repro_dir).decode()
        except PipelineError as err:
            return _fallen_back(done, err) if done.rewritten else done
    if torch_judged:
        # Each was planned, with all it says, at the torch level: the linalg
        # it lowers to (ours in its plan's forms, or IREE's where the plan
        # left it) is not planned again.
        done.log.append("linalg: not read; its convolutions come from the torch-dialect ops judged above")
    else:
        linalg = zero_insertion.rewrite_text(text if isinstance(text, str) else text.decode(), options)
        done.log += linalg.log
        done.rewritten += linalg.count
        text = linalg.text or text
    if not done.rewritten:
        return done
    text = dispatch_regions.wrap(text if isinstance(text, str) else text.decode())
    woven = compile_fallback.woven_retry(text, options)
    text = pipeline.for_target(text, options.target)
    if line.compile_to == "input":
        done.output = text.encode()
        return done
    flags = (*line.with_phases("input", line.compile_to), *iree_faults.flags_for(options.target))
    try:
        done.output = pipeline.compile_command_line(text, flags, line.output_kind,
                                                    "iree-compile after iree-bwdconv's rewrites",
                                                    judge=options.target in pipeline.JUDGED_TARGETS,
                                                    repro_dir=options.repro_dir)
    except PipelineError as err:
        if woven is not None:
            again = _compile_source(source, line, woven)
            first = str(err).splitlines()[0]
            again.log[:0] = [f"note: {first} with the stride phases in dispatches of their own; "
                             "lowered again with them woven"]
            return again
        return _fallen_back(done, err)
    return done


def _fallen_back(done: Compiled, err: PipelineError) -> Compiled:
    done.log += [f"error: {err}", "the module is compiled as IREE lowers it instead"]
    return Compiled(output=None, rewritten=0, log=done.log)
