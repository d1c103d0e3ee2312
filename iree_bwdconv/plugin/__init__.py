"""iree-bwdconv for IR that other frontends made, compiled by iree-compile.

`iree-bwdconv-compile` takes iree-compile's command line and output; from
Python, `compile_file` and `compile_str` mirror `iree.compiler.tools`'s.
Each rewrites, through the same plan as the torch.compile backend:

- torch-dialect input (torch-mlir and iree-turbine exports; ONNX through
  `iree-import-onnx`): `aten.convolution_backward`, and `aten.convolution`
  with transposed=True and a stride above 1 (`torch_input`);
- linalg after IREE's input phase: a convolution over data inserted among
  zeros, the form in which torch-mlir, IREE's StableHLO conversion and
  others lower a strided transposed convolution (`zero_insertion`).

Everything else is compiled as iree-compile compiles it.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Optional, Sequence, Union

from iree_bwdconv import options as lowering_options
from iree_bwdconv.compiler import pipeline
from iree_bwdconv.errors import InvalidArgumentError

from iree_bwdconv.plugin.command_line import CommandLine, parse
from iree_bwdconv.plugin.driver import Compiled, compile_source

__all__ = ["compile_file", "compile_str", "compile_command_line", "Compiled", "CommandLine", "parse"]


def options_for(line: CommandLine) -> Optional[lowering_options.LoweringOptions]:
    """The options the plan lowers with for `line` (None where it names no
    target we plan for): the target, and the forms the environment asks
    for (`options.from_environment`). Our CUDA kernel is never called here:
    IREE's input phase, which the module passes through, would not keep
    its call for our link."""
    if line.target is None:
        return None
    return dataclasses.replace(lowering_options.from_environment(line.target), extern_kernels=False)


def compile_command_line(source: Union[str, bytes], line: CommandLine) -> Compiled:
    """`line`'s output for `source`, our rewrites applied; where nothing of
    ours is in it (or no target we plan for is named), compiled by
    iree-compile as it is."""
    options = options_for(line)
    if options is None:
        done = Compiled(log=[f"left as it is: {line.why_no_target}"])
    else:
        done = compile_source(source, line, options)
    if done.output is None:
        repro_dir = options.repro_dir if options else lowering_options.repro_dir_from_environment()
        done.output = pipeline.compile_command_line(source, line.with_phases(line.compile_from, line.compile_to),
                                                    line.output_kind, "iree-compile", repro_dir=repro_dir)
    return done


def _line(extra_args: Sequence[str], kwargs: dict) -> CommandLine:
    """iree.compiler.tools' keyword arguments we read, as a command line."""
    args = list(extra_args)
    target_backends = kwargs.pop("target_backends", None)
    if target_backends:
        args.append(f"--iree-hal-target-backends={','.join(target_backends)}")
    if kwargs:
        raise InvalidArgumentError("keyword arguments", sorted(kwargs),
                                   "give other iree-compile flags in extra_args")
    return parse(args)


def compile_str(source: Union[str, bytes], *, extra_args: Sequence[str] = (), explain: bool = False,
                **kwargs) -> bytes:
    """As `iree.compiler.tools.compile_str`: `source` compiled with the flags
    of `extra_args` (and `target_backends=`), our rewrites applied; with
    `explain`, each rewrite logged to standard error."""
    done = compile_command_line(source, _line([*extra_args, *(["--iree-bwdconv-explain"] if explain else [])],
                                              kwargs))
    if explain:
        print("\n".join(done.log), file=sys.stderr)
    return done.output


def compile_file(path: Union[str, os.PathLike], *, extra_args: Sequence[str] = (), explain: bool = False,
                 **kwargs) -> bytes:
    """As `iree.compiler.tools.compile_file`, our rewrites applied."""
    try:
        source = Path(path).read_bytes()
    except OSError as err:
        raise InvalidArgumentError("path", str(path), err.strerror or "cannot be read") from None
    return compile_str(source, extra_args=extra_args, explain=explain, **kwargs)
