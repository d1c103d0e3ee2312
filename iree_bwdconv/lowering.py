"""From a torch.nn.Module (or torch-dialect IR) to linalg, TOSA or StableHLO.

linalg: convolution_backward is kept backend-legal through the torch
backend pipeline, rewritten by our patterns, and only then does torch-mlir's
linalg pipeline lower everything else, so its own lowering of the op never
runs on this path. tosa/stablehlo: the op is not legal, so torch-mlir's
DecomposeAtenConvolutionBackwardOp runs, as those backends expect.

torch is imported only where a module is traced (`import_module`,
`decompositions`): the commands that read IR alone (`iree-bwdconv lower`,
`iree-bwdconv-compile`) then start in a second, not in six.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d

import iree_bwdconv.patterns as patterns

from iree_bwdconv.compiler import dispatch_regions, extern_kernels, iree_ir, operand_room, pipeline
from iree_bwdconv.errors import LoweringError
from iree_bwdconv.options import LoweringOptions

if TYPE_CHECKING:
    import torch

BACKENDS = ("linalg", "tosa", "stablehlo")
CONVOLUTION_BACKWARD = "aten.convolution_backward"
_BACKEND_PIPELINES = {
    "linalg": pipeline.LINALG_BACKEND,
    "tosa": pipeline.TOSA_BACKEND,
    "stablehlo": pipeline.STABLEHLO_BACKEND,
}


def new_context() -> ir.Context:
    context = ir.Context()
    torch_d.register_dialect(context)
    pipeline.load_torch_conversion_dialect(context)
    return context


def decompositions() -> dict:
    """torch-mlir's decomposition table, convolution_backward kept whole,
    and max_pool2d's backward as a gather (`pool_backward`), not a scatter."""
    import torch
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    from iree_bwdconv.torch_compile import pool_backward

    table = dict(get_decomposition_table())
    table.pop(torch.ops.aten.convolution_backward.default, None)
    table[torch.ops.aten.max_pool2d_with_indices_backward.default] = pool_backward.max_pool2d_with_indices_backward
    return table


def import_module(module: torch.nn.Module, *example_args: Any, dynamic_shapes: Optional[Any] = None) -> ir.Module:
    """torch.export the module and import it as raw torch-dialect IR."""
    from torch_mlir import fx

    imported = fx.export_and_import(
        module,
        *example_args,
        output_type="raw",
        dynamic_shapes=dynamic_shapes,
        decomposition_table=decompositions(),
    )
    pipeline.load_torch_conversion_dialect(imported.context)
    return imported


def parse_torch_mlir(text: str) -> ir.Module:
    context = new_context()
    with context:
        return ir.Module.parse(text)


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: expected one of {', '.join(BACKENDS)}")


def to_torch_backend(raw: ir.Module, backend: str, repro_dir: Optional[str] = None) -> None:
    """Raw torch IR -> torch backend contract, the op kept legal for linalg
    (`repro_dir`: where a failure saves its input)."""
    _check_backend(backend)
    legal = f"{{backend-legal-ops={CONVOLUTION_BACKWARD}}}" if backend == "linalg" else ""
    pipeline.run_pipeline(
        raw,
        f"builtin.module(func.func(torch-match-quantized-custom-ops), {pipeline.TORCH_BACKEND}{legal})",
        "torch backend pipeline",
        repro_dir=repro_dir,
    )


def ops_named(module: ir.Module, name: str) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def rewrite_convolution_backward(module: ir.Module, options: LoweringOptions) -> None:
    """Run our patterns; refuse (LoweringError) if any op is left unrewritten."""
    mismatches = patterns.apply_patterns(module, options)
    left = ops_named(module, patterns.convolution_backward.ROOT)
    if left:
        reasons = "\n  ".join(mismatches.reasons) or "no pattern was offered the op"
        raise LoweringError(f"{len(left)} convolution_backward op(s) could not be lowered:\n  {reasons}")


def lower_torch(raw: ir.Module, backend: str = "linalg", options: Union[LoweringOptions, str] = "cpu") -> str:
    """Raw torch-dialect IR (as the FX importer makes it) -> backend IR text,
    in the linalg forms that `options` ask for (a target name: that target's
    usual forms); with room after CUDA's f16/bf16 contraction operands where
    they ask for it (`operand_room`)."""
    options = as_options(options)
    to_torch_backend(raw, backend, options.repro_dir)
    if backend == "linalg":
        rewrite_convolution_backward(raw, options)
    backend_pipeline = f"builtin.module({_BACKEND_PIPELINES[backend]})"
    if extern_kernels.declares_kernels(raw):
        backend_pipeline = pipeline.linalg_backend_without_contract_check(raw.context)
    pipeline.run_pipeline(raw, backend_pipeline, f"{backend} backend pipeline", repro_dir=options.repro_dir)
    text = str(raw)
    # These steps need IREE's bindings: one parse serves them.
    steps = [step for step, wanted in ((extern_kernels.link_module, extern_kernels.calls_kernels(text)),
                                       (operand_room.give_module, backend == "linalg" and operand_room.wanted(options)),
                                       (dispatch_regions.wrap_module, dispatch_regions.marked(text)))
             if wanted]
    return iree_ir.edited(text, *steps) if steps else text


def lower(
    module: torch.nn.Module,
    *example_args: Any,
    backend: str = "linalg",
    dynamic_shapes: Optional[Any] = None,
    target: Union[LoweringOptions, str] = "cpu",
) -> str:
    """Lower `module` traced on `example_args` to MLIR text for `backend`;
    linalg comes in the forms `target` asks for (`lower_torch`)."""
    _check_backend(backend)
    options = as_options(target)
    return lower_torch(import_module(module, *example_args, dynamic_shapes=dynamic_shapes), backend, options)


def as_options(options: Union[LoweringOptions, str]) -> LoweringOptions:
    """`options`, or a target's name as the options of its usual forms."""
    return options if isinstance(options, LoweringOptions) else LoweringOptions(target=options)
