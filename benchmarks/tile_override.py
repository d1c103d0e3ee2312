"""IREE's `compilation_info` put on a module's contractions, for measuring
whether IREE's own choice of tiles is what limits a form (an override of
IREE's configuration, never emitted by the lowering)."""

from __future__ import annotations

from typing import Sequence

from iree.compiler import ir as iree_ir

_TRANSLATION = ("#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> "
                "workgroup_size = [{threads}, 1, 1] subgroup_size = 32, "
                "{{gpu_pipeline_options = #iree_gpu.pipeline_options<prefetch_num_stages = 2, "
                "no_reduce_shared_memory_bank_conflicts = false, use_igemm_convolution = false>}}>")
_LOWERING = ("#iree_gpu.lowering_config<{{convert_acc_gemm, "
             "mma_kind = #iree_gpu.mma_layout<NV_MMA_SYNC_F32_16x8x16_{element}>, padding = {padding}, "
             "promote_operands = [0, 1], reduction = {reduction}, subgroup = {subgroup}, "
             "workgroup = {workgroup}}}>")


def compilation_info(workgroup: Sequence[int], subgroup: Sequence[int], reduction: Sequence[int],
                     padding: Sequence[int], threads: int, dtype: str) -> str:
    """The attribute's text for IREE 3.13's CUDA TileAndFuse pipeline with
    f16/bf16 MMA (the form IREE picks itself, with other tile sizes)."""
    lowering = _LOWERING.format(element=dtype.upper(), padding=list(padding), reduction=list(reduction),
                                subgroup=list(subgroup), workgroup=list(workgroup))
    return (f"#iree_codegen.compilation_info<lowering_config = {lowering}, "
            f"translation_info = {_TRANSLATION.format(threads=threads)}>")


def with_tiles(text: str, info: str) -> str:
    """`text` with `info` on every linalg.generic that has a reduction loop."""
    with iree_ir.Context(), iree_ir.Location.unknown():
        module = iree_ir.Module.parse(text)
        attribute = iree_ir.Attribute.parse(info)

        def visit(op: iree_ir.Operation) -> iree_ir.WalkResult:
            if op.name == "linalg.generic" and "reduction" in str(op.attributes["iterator_types"]):
                op.attributes["compilation_info"] = attribute
            return iree_ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        return str(module)
