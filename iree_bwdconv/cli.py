"""The `iree-bwdconv` command: lower, compile, opt (patterns only), demo."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Optional, Sequence

from . import lowering, pipeline
from .errors import BwdConvError, InvalidArgumentError

SPLIT_MARKER = "// -----"


def _read(path: str) -> str:
    return sys.stdin.read() if path == "-" else Path(path).read_text()


def _write(text: str, path: Optional[str]) -> None:
    if path in (None, "-"):
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        Path(path).write_text(text)


def _chunks(text: str, split: bool) -> list[str]:
    if not split:
        return [text]
    chunks, current = [], []
    for line in text.splitlines(keepends=True):
        if line.strip() == SPLIT_MARKER:
            chunks.append("".join(current))
            current = []
        else:
            current.append(line)
    chunks.append("".join(current))
    return chunks


def cmd_opt(args: argparse.Namespace) -> int:
    """Our patterns alone, on torch backend-contract IR (what lit tests drive)."""
    registry = {p.name: p for p in lowering.patterns.REGISTRY}
    unknown = [name for name in args.pattern or () if name not in registry]
    if unknown:
        raise InvalidArgumentError("--pattern", unknown[0], f"known patterns: {', '.join(registry)}")
    selected = tuple(registry[name] for name in args.pattern) if args.pattern else None
    outputs = []
    for chunk in _chunks(_read(args.input), args.split_input_file):
        module = lowering.parse_torch_mlir(chunk)
        mismatches = lowering.patterns.apply_patterns(module, selected)
        for reason in mismatches.reasons:
            print(f"note: {reason}", file=sys.stderr)
        outputs.append(str(module))
    _write(f"\n{SPLIT_MARKER}\n".join(outputs), args.output)
    return 0


def cmd_lower(args: argparse.Namespace) -> int:
    """Raw torch-dialect IR (as torch_mlir.fx imports it) -> backend IR."""
    module = lowering.parse_torch_mlir(_read(args.input))
    _write(lowering.lower_torch(module, args.backend), args.output)
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    vmfb = pipeline.iree_compile(_read(args.input), args.target)
    output = args.output or str(Path(args.input).with_suffix(".vmfb"))
    Path(output).write_bytes(vmfb)
    print(f"wrote {output} ({len(vmfb)} bytes) for target {args.target}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from . import demo

    return demo.main(args.target)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iree-bwdconv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    opt = sub.add_parser("opt", help="run only our rewrite patterns on torch backend IR")
    opt.add_argument("input", help="a .mlir file, or - for stdin")
    opt.add_argument("-o", "--output")
    opt.add_argument("--pattern", action="append", metavar="NAME",
                     help="run only this registered pattern (repeatable; default: all)")
    opt.add_argument("--split-input-file", action="store_true",
                     help=f"treat '{SPLIT_MARKER}' lines as separators between modules")
    opt.set_defaults(run=cmd_opt)

    lower = sub.add_parser("lower", help="raw torch-dialect .mlir to linalg/tosa/stablehlo .mlir")
    lower.add_argument("input")
    lower.add_argument("-o", "--output")
    lower.add_argument("--backend", choices=lowering.BACKENDS, default="linalg")
    lower.set_defaults(run=cmd_lower)

    comp = sub.add_parser("compile", help="linalg .mlir to a .vmfb for a target")
    comp.add_argument("input")
    comp.add_argument("-o", "--output")
    comp.add_argument("--target", choices=tuple(pipeline.TARGET_FLAGS), default="cpu")
    comp.set_defaults(run=cmd_compile)

    demo = sub.add_parser("demo", help="run convolution_backward through IREE and compare with eager")
    demo.add_argument("--target", choices=("cpu",), default="cpu")
    demo.set_defaults(run=cmd_demo)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    # torch.export's own deprecation noise, not actionable by our users.
    warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except BwdConvError as err:
        print(f"iree-bwdconv {args.command}: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
