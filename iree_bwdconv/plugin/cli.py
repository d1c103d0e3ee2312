"""`iree-bwdconv-compile`: iree-compile's command line, our rewrites applied.

    iree-bwdconv-compile model.mlir --iree-hal-target-device=hip \\
        --iree-hip-target=gfx942 -o model.vmfb [--iree-bwdconv-explain]

Every flag but ours (`--iree-bwdconv-explain`, `--iree-bwdconv-target=`)
goes to iree-compile. Where nothing is ours to rewrite, iree-compile runs
on the input as given, and its output is plain iree-compile's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence

from iree_bwdconv.compiler import pipeline
from iree_bwdconv.errors import InvalidArgumentError

from iree_bwdconv.plugin import options_for
from iree_bwdconv.plugin.command_line import EXPLAIN_FLAG, TARGET_FLAG, parse
from iree_bwdconv.plugin.driver import Compiled, compile_source


def _theirs(argv: Sequence[str]) -> list[str]:
    """`argv` without our flags: what plain iree-compile is given."""
    out, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word == EXPLAIN_FLAG or word.startswith(TARGET_FLAG + "="):
            continue
        elif word == TARGET_FLAG:
            skip = True
        else:
            out.append(word)
    return out


def _read(path: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as err:
        raise InvalidArgumentError("input", path, err.strerror or "cannot be read") from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        line = parse(argv)
        if line.info_only:
            return pipeline.run_command_line(_theirs(argv))
        source = _read(line.input)
    except InvalidArgumentError as err:
        print(f"iree-bwdconv-compile: {err}", file=sys.stderr)
        return 2
    options = options_for(line)
    done = compile_source(source, line, options) if options else Compiled(log=[f"left as it is: {line.why_no_target}"])
    if line.explain and done.log:
        print("\n".join(done.log), file=sys.stderr)
    if done.output is None:
        return pipeline.run_command_line(_theirs(argv), stdin=source if line.input == "-" else None)
    if line.output in (None, "-"):
        sys.stdout.buffer.write(done.output)
        sys.stdout.buffer.flush()
    else:
        Path(line.output).write_bytes(done.output)
    return 0
