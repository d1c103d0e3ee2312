"""The `iree-bwdconv` command: train, explain, lower, compile, opt (patterns only), demo."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Optional, Sequence

from iree_bwdconv.run import openmp

# Before torch is imported (by the commands that trace or train): libgomp reads it once.
openmp.limit_spinning()

from torch_mlir import ir  # noqa: E402

from iree_bwdconv import lowering  # noqa: E402
from iree_bwdconv.compiler import pipeline  # noqa: E402
from iree_bwdconv import options as lowering_options  # noqa: E402
from iree_bwdconv.errors import BwdConvError, InvalidArgumentError  # noqa: E402
from iree_bwdconv.options import TARGETS, LoweringOptions  # noqa: E402

SPLIT_MARKER = "// -----"
AMP_CHOICES = ("off", "f16", "bf16")  # training.AMP_DTYPES's names
_PLAIN_FORMS_HELP = ("lower in the plain forms on GPU targets (the direct grad_input, weight gradients in one sum), "
                     "which compiled where the usual forms did not")


def _read(path: str) -> str:
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else "not a text file"
        raise InvalidArgumentError("input", path, reason) from None


def _parse(text: str, path: str):
    """Torch-dialect IR, or an error naming the input and the first thing
    wrong with it."""
    try:
        return lowering.parse_torch_mlir(text)
    except ir.MLIRError as err:
        first = next((line.strip() for line in str(err).splitlines() if "error" in line), str(err).splitlines()[0])
        raise InvalidArgumentError("input", path, f"not MLIR the torch dialect can read: {first}") from None


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


def _options(args: argparse.Namespace) -> LoweringOptions:
    """The lowering options the command line and the environment ask for."""
    options = lowering_options.from_environment(args.target)
    return options.in_plain_forms() if args.plain_forms else options


def cmd_opt(args: argparse.Namespace) -> int:
    """Our patterns alone, on torch backend-contract IR (what lit tests drive)."""
    registry = {p.name: p for p in lowering.patterns.REGISTRY}
    unknown = [name for name in args.pattern or () if name not in registry]
    if unknown:
        raise InvalidArgumentError("--pattern", unknown[0], f"known patterns: {', '.join(registry)}")
    selected = tuple(registry[name] for name in args.pattern) if args.pattern else None
    options = _options(args)
    if selected:
        options = lowering.patterns.options_for_selection(selected, options)
    outputs = []
    for chunk in _chunks(_read(args.input), args.split_input_file):
        module = _parse(chunk, args.input)
        mismatches = lowering.patterns.apply_patterns(module, options, selected)
        for reason in mismatches.reasons:
            print(f"note: {reason}", file=sys.stderr)
        outputs.append(str(module))
    _write(f"\n{SPLIT_MARKER}\n".join(outputs), args.output)
    return 0


def cmd_lower(args: argparse.Namespace) -> int:
    """Raw torch-dialect IR (as torch_mlir.fx imports it) -> backend IR."""
    options = _options(args)
    module = _parse(_read(args.input), args.input)
    _write(lowering.lower_torch(module, args.backend, options), args.output)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """The plan of every convolution of a file, or of one layer, and why."""
    from iree_bwdconv import explain
    from iree_bwdconv.spec import layer_spec

    options = _options(args)
    if (args.input is None) == (args.layer is None):
        raise InvalidArgumentError("input", args.input, "give a .mlir file or --layer, not both")
    if args.input is not None:
        text = _read(args.input)
        _parse(text, args.input)  # a clear error for text that is not torch IR
        print(explain.explain_file(text, options, dispatches=not args.no_dispatches))
        return 0
    layer = _layer_arguments(args.layer)
    spec = layer_spec(**layer)
    print(explain.describe_layer(spec))
    print("\n".join(explain.explain_spec(spec, options, dispatches=not args.no_dispatches)))
    return 0


_LAYER_HELP = ("one layer as NAME=VALUE pairs: n (batch, or ? for dynamic), c, f, size (e.g. 28x28), k, s, p, d, "
               "g, dtype, transposed, op (output_padding), mask (e.g. 111); k, s, p, d, op take one value or one "
               "per dim (3x3)")


def _layer_arguments(pairs: Sequence[str]) -> dict:
    """`layer_spec`'s arguments from --layer's NAME=VALUE pairs."""
    values = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
    bad = [pair for pair in pairs if "=" not in pair] + [name for name in values if name not in _LAYER_NAMES]
    if bad:
        raise InvalidArgumentError("--layer", bad[0], _LAYER_HELP)
    try:
        sizes = tuple(int(v) for v in values.get("size", "").split("x"))
        rank = len(sizes)

        def per_dim(name: str, default: int) -> tuple[int, ...]:
            given = [int(v) for v in values.get(name, str(default)).split("x")]
            return tuple(given * rank if len(given) == 1 else given)

        return {"batch": None if values.get("n", "1") == "?" else int(values.get("n", "1")),
                "in_channels": int(values["c"]), "out_channels": int(values["f"]), "sizes": sizes,
                "kernel": per_dim("k", 1), "stride": per_dim("s", 1), "padding": per_dim("p", 0),
                "dilation": per_dim("d", 1), "groups": int(values.get("g", "1")),
                "dtype": values.get("dtype", "f32"), "transposed": values.get("transposed", "0") in ("1", "true"),
                "output_padding": per_dim("op", 0),
                "output_mask": tuple(ch == "1" for ch in values.get("mask", "111"))}
    except (KeyError, ValueError) as err:
        raise InvalidArgumentError("--layer", " ".join(pairs), f"{_LAYER_HELP} ({err})") from None


_LAYER_NAMES = ("n", "c", "f", "size", "k", "s", "p", "d", "g", "dtype", "transposed", "op", "mask")


def cmd_compile(args: argparse.Namespace) -> int:
    vmfb = pipeline.iree_compile(_read(args.input), args.target,
                                 repro_dir=lowering_options.repro_dir_from_environment())
    output = args.output or str(Path(args.input).with_suffix(".vmfb"))
    Path(output).write_bytes(vmfb)
    print(f"wrote {output} ({len(vmfb)} bytes) for target {args.target}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from iree_bwdconv import demo

    return demo.main(args.target)


def cmd_train(args: argparse.Namespace) -> int:
    """Train through torch.compile with our backend beside eager; exit 1 if they diverge."""
    from tqdm import tqdm

    from iree_bwdconv import training
    from iree_bwdconv.models import MODELS
    from iree_bwdconv.torch_compile.graph_check import RecordingBackend

    if args.model not in MODELS:
        raise InvalidArgumentError("--model", args.model, f"not one of {', '.join(MODELS)}")
    backend = RecordingBackend(device=args.device, cache_dir=args.cache_dir, cache=not args.no_cache)

    def show(step: int, ours: float, eager: float) -> None:
        tqdm.write(f"step {step:4d}  loss iree-bwdconv {ours:.6f}  eager {eager:.6f}  diff {abs(ours - eager):.2e}")

    device = "cuda" if args.device == "cuda" else "cpu"  # hip: the model stays here, copies cross
    report = training.side_by_side(args.model, args.steps, args.batch_size, backend, args.image_size,
                                   args.seed, on_step=show, device=device, grad_tolerance=args.grad_tolerance,
                                   amp=training.AMP_DTYPES[args.amp])
    stats = backend.stats
    loss_diff = report.max_loss_diff()
    param_diff = report.max_param_diff / max(report.max_param, 1.0)
    print(f"max abs parameter difference: {report.max_param_diff:.3e} (largest parameter {report.max_param:.3g})")
    print(f"time per step: iree-bwdconv {1e3 * report.steady_s(0):.1f} ms, eager {1e3 * report.steady_s(1):.1f} ms"
          " (median after the first step)")
    side_by_side = ", compiled side by side" if backend.parallel_compiles > 1 else ""
    print(f"compile time: {report.compile_s:.1f} s in the first step ({stats.graphs} graphs{side_by_side}; "
          f"summed over them: import + lowering {stats.import_s + stats.lowering_s:.2f} s, "
          f"iree-compile {stats.iree_compile_s:.2f} s; {stats.cache_hits} from the cache)")
    for what in stats.fallbacks:
        print(f"ran eagerly: {what}")
    print(f"first step, same weights: largest gradient difference {report.first_grad_diff:.2e} of the largest gradient")
    if report.first_grad_errors is not None:
        ours_error, eager_error = report.first_grad_errors
        print(f"  against float64: ours {ours_error:.2e}, eager {eager_error:.2e} (at most {args.grad_error_ratio:g}x "
              "eager's error passes)")
    if report.first_graph_error is not None:
        graphs = report.first_graph_error
        print(f"  graph by graph, on the same inputs: {graphs.where} is {graphs.error:.2e} from float64, "
              f"{graphs.ratio:.2g} of what eager float32's own error allows")
    failures = [failure for failure in [training.first_step_failure(report, args.grad_tolerance,
                                                                    args.grad_error_ratio)] if failure]
    if loss_diff > args.tolerance or param_diff > args.tolerance:
        failures.append(f"the runs drifted apart: loss {loss_diff:.2e}, parameters {param_diff:.2e} "
                        f"(relative; tolerance {args.tolerance:g})")
    for failure in failures:
        print(f"DIVERGED: {failure}", file=sys.stderr)
    if not failures:
        first = training.first_step_pass(report, args.grad_tolerance, args.grad_error_ratio)
        print(f"ok: first-step gradients {first}, losses and parameters within {args.tolerance:g} of eager "
              "(relative)")
    return 1 if failures else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iree-bwdconv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    # No choices read off the models or torch's dtypes: the parser serves
    # every command, and the commands that read IR alone do not import torch.
    train = sub.add_parser("train", help="train a CNN through torch.compile with our backend, beside eager")
    train.add_argument("--model", default="demo",
                       help="demo (default), resnet18, resnet50, mobilenet_v2, unet, decoder, or a CNN of the model zoo "
                            "(an unknown name is refused with the list)")
    train.add_argument("--steps", type=int, default=20)
    train.add_argument("--batch-size", type=int, default=16)
    train.add_argument("--image-size", type=int, default=32)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--device", choices=("cpu", "cuda", "hip"), default="cpu")
    train.add_argument("--amp", choices=AMP_CHOICES, default="off",
                       help="train both runs under torch.autocast at this dtype (f16 with a loss scaler)")
    train.add_argument("--grad-error-ratio", type=float, default=2.0,
                       help="past --grad-tolerance, first-step gradients still pass where their error against "
                            "float64 is at most this times eager's (default 2)")
    train.add_argument("--grad-tolerance", type=float, default=1e-4,
                       help="largest difference of the first step's gradients from eager's, relative to the "
                            "largest gradient (default 1e-4)")
    train.add_argument("--tolerance", type=float, default=5e-2,
                       help="largest relative difference of any step's loss, or of the final parameters, from "
                            "eager (default 5e-2: rounding differences grow as ReLUs near zero flip, by about "
                            "2e-2 in 20 steps of eager against itself; docs/training.md)")
    train.add_argument("--cache-dir", help="compile cache folder (default: $IREE_BWDCONV_CACHE_DIR or ~/.cache/iree-bwdconv)")
    train.add_argument("--no-cache", action="store_true", help="compile every graph afresh")
    train.set_defaults(run=cmd_train)

    opt = sub.add_parser("opt", help="run only our rewrite patterns on torch backend IR")
    opt.add_argument("input", help="a .mlir file, or - for stdin")
    opt.add_argument("-o", "--output")
    opt.add_argument("--pattern", action="append", metavar="NAME",
                     help="run only this registered pattern (repeatable; default: all); the direct pattern "
                          "without the strided ones lowers every grad_input in the direct form")
    opt.add_argument("--target", choices=TARGETS, default="cpu",
                     help="the IREE target the forms are chosen for (default cpu)")
    opt.add_argument("--split-input-file", action="store_true",
                     help=f"treat '{SPLIT_MARKER}' lines as separators between modules")
    opt.add_argument("--plain-forms", action="store_true", help=_PLAIN_FORMS_HELP)
    opt.set_defaults(run=cmd_opt)

    lower = sub.add_parser("lower", help="raw torch-dialect .mlir to linalg/tosa/stablehlo .mlir")
    lower.add_argument("input")
    lower.add_argument("-o", "--output")
    lower.add_argument("--backend", choices=lowering.BACKENDS, default="linalg")
    lower.add_argument("--target", choices=tuple(pipeline.TARGET_FLAGS), default="cpu",
                       help="the IREE target the linalg forms are chosen for (default cpu)")
    lower.add_argument("--plain-forms", action="store_true", help=_PLAIN_FORMS_HELP)
    lower.set_defaults(run=cmd_lower)

    explain = sub.add_parser("explain", help="why each convolution is lowered the way it is: plan, rules, "
                                               "faults, multiply-adds, dispatches, cache key")
    explain.add_argument("input", nargs="?", help="a raw torch-dialect .mlir file, or - for stdin")
    explain.add_argument("--layer", nargs="+", metavar="NAME=VALUE", help=_LAYER_HELP)
    explain.add_argument("--target", choices=TARGETS, default="cpu")
    explain.add_argument("--plain-forms", action="store_true", help=_PLAIN_FORMS_HELP)
    explain.add_argument("--no-dispatches", action="store_true", help="skip the compile that counts dispatches")
    explain.set_defaults(run=cmd_explain)

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
