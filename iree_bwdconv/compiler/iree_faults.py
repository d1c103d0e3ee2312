"""Faults of IREE's that this package works around, one named record each.

A record says where the fault was seen (targets, element types, IREE
versions), what goes wrong, and how we avoid it, and names its smallest
reproducer (`reproducers/<name>.mlir`). `tests/test_iree_faults.py`
compiles each reproducer on the pinned IREE without the workaround and
fails, naming the fault, once it no longer reproduces: an IREE upgrade then
says which workaround to drop. docs/iree-faults.md tells the same in prose.

Where a workaround is a set of iree-compile flags, `pipeline` passes them
on every compile for the fault's targets, after the caller's own flags, so
that no caller turns the fault back on by accident (`pipeline.iree_compile`
with `as_given=True` compiles without them, to show a fault).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the records are pure, for the plan to ask; IREE's bindings only where IR is read
    from iree.compiler import ir

ALL_TARGETS = ("cpu", "gfx942", "cuda")


@dataclass(frozen=True)
class Fault:
    name: str
    targets: tuple[str, ...]
    dtypes: tuple[str, ...]
    seen_in: tuple[str, ...]  # IREE releases it reproduced in
    symptom: str
    workaround: str
    flags: tuple[str, ...] = ()  # iree-compile flags that avoid it, where that is the workaround
    rule: str = ""  # the plan's rule that avoids it, where a form is the workaround (`plan.rules`)
    # Plan rules that also keep it away, each in a form of its own, beside
    # the workaround: each has a reproducer of the form it avoids and the
    # form it picks (`<name>.<rule>.mlir`, `<name>.<rule>.avoided.mlir`).
    variants: tuple[str, ...] = ()

    def reproducer(self, variant: str = "") -> str:
        """The smallest module that shows it (in the form `variant`'s rule
        avoids, where given), as MLIR text."""
        return self._text(variant, "")

    def avoided(self, variant: str = "") -> str:
        """Where a plan rule is the workaround (or `variant` names one): the
        same work in the form the rule picks instead."""
        return self._text(variant, ".avoided")

    def _text(self, variant: str, suffix: str) -> str:
        if variant and variant not in self.variants:
            raise ValueError(f"variant={variant!r}: {self.name} has {', '.join(self.variants) or 'none'}")
        stem = f"{self.name}.{variant}" if variant else self.name
        return resources.files(__package__).joinpath("reproducers", f"{stem}{suffix}.mlir").read_text()


MULTI_USE_FUSION_PARTIAL_WRITE = Fault(
    name="multi_use_fusion_partial_write",
    targets=ALL_TARGETS,
    dtypes=("f32", "f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "IREE's dispatch creation (FuseMultiUseElementwiseProducerPass) fuses an elementwise op whose "
        "result has several users into the first of them, and keeps the result as a second result of "
        "the fused op, written through the indexing map by which that user reads it. Where the map is "
        "not a permutation (an im2col gather of a strided 1x1 convolution reads every stride-th "
        "element), only the elements it reads are written; the other users read memory no one wrote. "
        "Two strided convolutions of one computed tensor, the 1x1 first (a RegNet or ResNet "
        "downsampling block), came out 45%-100% off on the CPU, and changed from call to call. "
        "Target-independent: the flow IR of every target holds the partial write."
    ),
    workaround="iree-compile without that fusion of multi-use producers, on every target",
    flags=("--iree-dispatch-creation-fuse-multi-use=false",),
)

UNIT_WINDOW_FOLD = Fault(
    name="unit_window_fold",
    targets=ALL_TARGETS,
    dtypes=("f32", "f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "iree-compile refuses a convolution or pooling with one output position along a dim whose "
        "window reads fewer input positions than the input has (a 3x3 stride-2 window over 4 "
        "columns): IREE folds the unit dim, so `o*s + k` reads at `k`, and takes the window's extent "
        "from the input's (\"inferred input/output operand #1 has shape's dimension #3 to be 4, but "
        "found 3\"). torch-mlir's named convolutions and poolings and our forward forms met it; a "
        "graph holding one ran eagerly."
    ),
    workaround="every module's such inputs cropped to the span their windows read (`exact_windows`)",
)

CPU_BATCHLESS_CONV_STORE = Fault(
    name="cpu_batchless_conv_store",
    targets=("cpu",),
    dtypes=("f32", "f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "IREE folds unit dims before it forms dispatches, so a convolution of one image reaches the "
        "CPU's codegen without a batch dim; InsertBatchDimForBatchlessConvPass gives it one back and "
        "folds the reshape this leaves into the dispatch's store, taking every dim the store drops to "
        "come before its first kept one. Where the result is inserted into a larger tensor with a dim "
        "of one after a larger one (a stride phase of one row into grad_input), the values land at "
        "the wrong places (groups after the first at the wrong channels), or iree-compile fails "
        "(\"offset ... is out-of-bounds\"). The GPU pipelines do not run the pass."
    ),
    workaround="a copy between such a convolution and its insert, on the CPU (`cpu_conv_store`)",
)

CPU_PAD_FUSED_GROUPED_CONV = Fault(
    name="cpu_pad_fused_grouped_conv",
    targets=("cpu",),
    dtypes=("f32", "f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "iree-compile for the CPU fails (\"failed to run translation of source executable to target "
        "executable\"; ConcretizePadResultShapePass) on a dispatch that holds a grouped convolution and "
        "the tensor.pad of its input, where the convolution's sizes do not tile evenly (7x9): a dispatch "
        "region of ours that holds a grouped stride phase, and IREE's own flag that fuses pads into "
        "their consumers alike. The same module compiled for CUDA and gfx942, and an ungrouped "
        "convolution compiled for the CPU."
    ),
    workaround="our dispatch regions taken apart again on the CPU (`dispatch_regions.unwrap`); the plan asks "
               "for them on CUDA alone (phase_stored_in_place), so only GPU forms checked on the CPU meet it",
)

CPU_BF16_RESOURCE_CONSTANT = Fault(
    name="cpu_bf16_resource_constant",
    targets=("cpu",),
    dtypes=("bf16",),
    seen_in=("3.13.0",),
    symptom=(
        "iree-compile for the CPU fails on a bf16 constant held as a resource blob (dense_resource, as "
        "torch-mlir's importers hold a model's weights and biases) that IREE inlines into a dispatch: "
        "\"'arith.constant' op failed to verify that all of {value, result} have same type\". A bf16 "
        "ConvTranspose2d with a bias, exported in the torch dialect or lowered to linalg, failed so in "
        "plain iree-compile, and after our rewrite. The constant written inline, in f16, or for a GPU "
        "target compiled."
    ),
    workaround="iree-compile for the CPU inlines no constant into a dispatch; each stays a buffer it reads",
    flags=("--iree-flow-inline-constants-max-byte-length=0",),
)

GFX942_PHASE_SHARED_MEMORY = Fault(
    name="gfx942_phase_shared_memory",
    targets=("gfx942",),
    dtypes=("f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "iree-compile for gfx942 fails (\"uses 69632 bytes of shared memory; exceeded the limit of 65536 "
        "bytes\") on an f16/bf16 stride phase's convolution (2x2 taps of a 3x3 stride-2 kernel) with fewer "
        "than 16 channels out and 32 or more reduced, on 8x8 positions a phase: grouped or not, any batch. "
        "16 channels out, or 4x4 positions, compiled; so did CUDA, and the direct form of the same layers."
    ),
    workaround="the per-phase form's contractions widened to f32 on such layers (the plan's rule "
               "phase_narrow_widened, `plan.grad_input.narrow_channels_on_gfx942`)",
    rule="phase_narrow_widened",
)

GFX942_F16_DYNAMIC_BATCH_SUM = Fault(
    name="gfx942_f16_dynamic_batch_sum",
    targets=("gfx942",),
    dtypes=("f16",),
    seen_in=("3.13.0",),
    symptom=(
        "iree-compile for gfx942 aborts in LLVM's AMDGPU instruction selection (\"LLVM ERROR: Cannot "
        "select: f32 = Constant<-1>\") on an f16 sum over each image's positions with the batch "
        "dynamic, where the positions' count is odd, has a factor 5 or 7 and none 3 (grad_bias of "
        "5x5, 7x7 and 25x25 grad_outputs). bf16, f32, a static batch, and the sum over the images "
        "first compiled."
    ),
    workaround="grad_bias sums over the images first (the plan's rule bias_batch_first)",
    rule="bias_batch_first",
)

CUDA_MMA_PADDING_OVERREAD = Fault(
    name="cuda_mma_padding_overread",
    targets=("cuda",),
    dtypes=("f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "Where an f16/bf16 contraction's dims are not multiples of the MMA intrinsic's, IREE's CUDA "
        "code pads each workgroup's tiles; its loads clamp an index of a padded dim to the dim's size, "
        "one past its last element, and mask the innermost dim alone. Where the padded dim is an outer "
        "dim of an operand, the padded rows are read a row past the operand's end: the values are "
        "discarded, but where the operand ends a mapping the kernel dies with CUDA_ERROR_ILLEGAL_ADDRESS, "
        "and the process's CUDA context with it. A 1x1 stride-2 f16 layer of 60 or 252 input channels "
        "hung every benchmark of ours and upstream's on an H200; 64 and 256 ran."
    ),
    workaround="the contractions `mma_padding` finds in IREE's configured dispatches are given whole tiles "
               "(`whole_tiles`: their padded dims' operands copied into zeros, the result cut back) or, where "
               "they cannot be, widened (one operand read as f32, no MMA intrinsic taking f16 with f32), and the "
               "module compiled again; a module left with one is "
               "refused. Plan rules keep the forms that "
               "meet it most away from it up front, in f32 or laid out to whole tiles: windowless_widened "
               "(and phase_widened), grouped_weight_widened, transposed_one_tap_gemm (64+ channels a group), "
               "weight_rows (grad_output read in place at 64 or a multiple of 128 channels)",
    variants=("windowless_widened", "grouped_weight_widened", "transposed_one_tap_gemm", "weight_rows"),
)

CUDA_STRIDED_INSERT_MMA_FUSION = Fault(
    name="cuda_strided_insert_mma_fusion",
    targets=("cuda",),
    dtypes=("f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "iree-compile for CUDA fails (\"LLVM Translation failed for operation: "
        "builtin.unrealized_conversion_cast\") where the rounded result of an f16/bf16 contraction is "
        "inserted into zeros with a stride along exactly one dim: IREE fuses the insert into the MMA "
        "dispatch. The lone stride phase of a 1-D or singly strided grad_input met it; gfx942 compiled "
        "it, and so did CUDA with two strided dims."
    ),
    workaround="the phase's result woven with zeros by an elementwise op and collapsed, not inserted with a "
               "stride (the plan's rule phase_woven)",
    rule="phase_woven",
)

CUDA_GATHER_DIVISION_UMUL_LOHI = Fault(
    name="cuda_gather_division_umul_lohi",
    targets=("cuda",),
    dtypes=("f32", "f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "iree-compile for CUDA aborts in LLVM's NVPTX instruction selection (\"LLVM ERROR: Cannot select: "
        "v2i16,v2i16 = umul_lohi\") on a gather whose flat index is decoded by dividing by sizes that "
        "are not powers of two (one tap table for every stride phase of a 3x3 kernel at stride (1, 2): "
        "3 taps along the unstrided dim). gfx942 compiled it."
    ),
    workaround="one tap table for every phase only where each size it decodes by is a power of two, else a "
               "table per phase indexed by its own dims (the plan's rule phase_tables_each)",
    rule="phase_tables_each",
)

CUDA_MMA_LOOP_ORDER = Fault(
    name="cuda_mma_loop_order",
    targets=("cuda",),
    dtypes=("f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "IREE's CUDA code for an f16/bf16 contraction on its MMA intrinsics returns wrong numbers (112%-186% "
        "of the largest value off on an H100) where the dispatch's loops put the innermost dim of the "
        "second operand's rows (N) before the first operand's (M); the same contraction in (batch, M, N, "
        "K) order is right, whatever the layouts. IREE keeps a generic's loop order, after folding unit "
        "dims, into the dispatch."
    ),
    workaround="`mma_order` reads each CUDA module's configured dispatches and `pipeline` refuses one that "
               "holds such a contraction, so the GPU forms fall back to the plain forms; the plan's forms put "
               "M before N (phase_weight_first, half_one_wide_weight_im2col, windowless_half_forward, "
               "half_in_f32)",
)

CUDA_GROUPED_PHASE_STORE = Fault(
    name="cuda_grouped_phase_store",
    targets=("cuda",),
    dtypes=("f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "IREE's CUDA code for a grouped f16/bf16 stride phase of one tap along every dim (a grouped 1x1 "
        "convolution over the phase's positions), whose result is stored with the stride into grad_input in "
        "the same dispatch (a dispatch region of ours), returns wrong numbers: on an H200 98% of the largest "
        "value off on 2x2 s2 in 2 groups of 16 (n2 8x8), 42% of its elements; on 3x3 s2 layers (2 and 4 "
        "groups, 28x28 and 29x29, bf16 too) the one-tap phase alone, 55%-75%. Phases of two or more taps "
        "along a dim were right in their regions (3x3 and 4x4 kernels, 2 and 4 groups), and so were the same "
        "modules compiled for the CPU, with the regions taken apart, ungrouped, or in f32. Nothing in IREE's "
        "configured dispatches marks it: only a GPU shows it (benchmarks/gpu_check.py)."
    ),
    workaround="where grouped phases are stored in place, a phase of one tap is a weight-first GEMM, not a "
               "convolution (the plan's rule phase_grouped_one_tap_gemm), as ungrouped ones are on GPUs",
    rule="phase_grouped_one_tap_gemm",
)

CUDA_PADDED_GEMM_STORE = Fault(
    name="cuda_padded_gemm_store",
    targets=("cuda",),
    dtypes=("f16", "bf16"),
    seen_in=("3.13.0",),
    symptom=(
        "IREE's CUDA code for an f16/bf16 GEMM with the weight first (a stride phase of one tap along every dim) "
        "whose window of dy is padded past dy's end, its result stored with the stride into grad_input in the "
        "same dispatch (a dispatch region of ours), stores wrong values in the rows read from the padding, "
        "which must be zero: on an H200 59% of the largest value off on 3x1 s2 n8 c64 28x28, 153% on the "
        "reproducer (n1, 16 channels, dy 3x4); every other row right. The same phase cut to the rows that read "
        "dy, and the phases woven, were right. Nothing in IREE's configured dispatches marks it: only a GPU "
        "shows it (benchmarks/gpu_check.py)."
    ),
    workaround="a one-tap phase stored in place is cut to the rows whose tap reads inside dy, and grad_input's "
               "zeros hold the rest (patterns/convolution_backward_phases.py, `_one_tap_phases_inside`)",
)

FAULTS: dict[str, Fault] = {fault.name: fault for fault in (MULTI_USE_FUSION_PARTIAL_WRITE, UNIT_WINDOW_FOLD,
                                                            CPU_BATCHLESS_CONV_STORE, CPU_PAD_FUSED_GROUPED_CONV,
                                                            CPU_BF16_RESOURCE_CONSTANT,
                                                            GFX942_PHASE_SHARED_MEMORY, GFX942_F16_DYNAMIC_BATCH_SUM,
                                                            CUDA_MMA_PADDING_OVERREAD, CUDA_STRIDED_INSERT_MMA_FUSION,
                                                            CUDA_GATHER_DIVISION_UMUL_LOHI, CUDA_MMA_LOOP_ORDER,
                                                            CUDA_GROUPED_PHASE_STORE, CUDA_PADDED_GEMM_STORE)}


def seen_on(fault: Fault, target: str) -> bool:
    """Whether a step that works around `fault` is needed on `target`."""
    return target in fault.targets


def flags_for(target: str) -> tuple[str, ...]:
    """The iree-compile flags of every fault seen on `target`."""
    return tuple(flag for fault in FAULTS.values() if target in fault.targets for flag in fault.flags)


def _init_maps(op: "ir.Operation") -> "list[ir.AffineMap]":
    """The indexing maps of a linalg op's inits (its outputs)."""
    from iree.compiler import ir

    from iree_bwdconv.compiler.iree_ir import indexing_maps

    if "indexing_maps" not in op.attributes or "operandSegmentSizes" not in op.attributes:
        return []
    maps = indexing_maps(op)
    _, inits = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])
    return maps[len(maps) - inits:]


def partial_writes(flow_ir: str) -> list[str]:
    """The linalg ops of a module (IREE's flow IR or later) that write a
    result through a map that is not a projected permutation: each element
    of such a result is written at most where the loops happen to land,
    which is `MULTI_USE_FUSION_PARTIAL_WRITE`'s mark. Empty where none."""
    from iree.compiler import ir

    from iree_bwdconv.compiler.iree_ir import ops_where

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(flow_ir)

        def partial(op: ir.Operation) -> bool:
            return op.name.startswith("linalg.") and any(not m.is_projected_permutation for m in _init_maps(op))

        return [str(op.attributes["indexing_maps"]) for op in ops_where(module, partial)]
