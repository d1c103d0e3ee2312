"""What the IREE target a lowering is for (`LoweringOptions.target`) says
about its forms. The linalg forms IREE 3.13 compiles best differ per target
(docs/performance-journal.md), so the rules ask."""

from __future__ import annotations

from typing import Sequence

from iree_bwdconv import geometry
from iree_bwdconv.plan.tuning import Tuning


def half_precision_on_gpu(target: str, dtype: str) -> bool:
    """f16/bf16 on a GPU target. IREE 3.13's CUDA code computed several
    f16/bf16 contractions wrongly on the H100 where f32 and the CPU were
    right (docs/performance-journal.md, "Read first"); the patterns avoid those
    forms under this test. gfx942's code comes from the same IREE pipeline
    and is treated alike, untested."""
    return target != "cpu" and dtype in ("f16", "bf16")


def f32_on_gpu(target: str, dtype: str) -> bool:
    """f32 on a GPU target. Every H100 figure the GPU forms were first
    drawn from was of f16/bf16 layers; in f32 IREE 3.13 has no MMA for
    them and compiled several of those forms 3x-18x slower than a plain
    matmul layout (docs/performance-journal.md, "f32 on GPUs"). gfx942 takes the
    same forms, unmeasured (no MI300 here)."""
    return target != "cpu" and dtype == "f32"


def one_tap_half_on_gpu(target: str, dtype: str, kernel: Sequence[int]) -> bool:
    """An f16/bf16 1x1 kernel on a GPU target: IREE 3.13's CUDA code
    computed the convolution-shaped generic of a 1x1 kernel wrongly in f16
    on the H100 (largest error 118%-150% of the largest value: the direct
    form at stride 1 and over a zero-inserted dy, the transposed
    convolution's grad_input, torch-mlir's named forward convolution), and
    right in f32 (`benchmarks/gpu_check.py`). The patterns lower it in
    another form (col2im's matmul, the forward's im2col matmul) or in f32."""
    return half_precision_on_gpu(target, dtype) and all(k == 1 for k in kernel)


def windowless_half_on_gpu(target: str, dtype: str, kernel: Sequence[int], output_sizes: Sequence[int]) -> bool:
    """An f16/bf16 convolution on a GPU target that slides its window along
    no dim (`geometry.slides_no_window`): a 1x1 kernel
    (`one_tap_half_on_gpu`), or a wider one with a dim of one output
    position. IREE folds those dims away and sees a 1x1 kernel, a
    contraction whose loop order decides whether its f16 code is right
    (`mma_order`): a transposed 3x1 kernel over one input row came out of
    the H100 62%-100% off in f16 and bf16 in opdsl's loop order (docs/performance-journal.md,
    "Tiny layers on the H100"). The patterns emit such a convolution in
    the order that is right (`contraction_forms.conv`), widened where
    `widens_windowless` says."""
    return half_precision_on_gpu(target, dtype) and geometry.slides_no_window(kernel, output_sizes)


def widens_windowless(target: str, dtype: str, group_channels: Sequence[int], tuning: Tuning) -> bool:
    """Whether a convolution that slides its window along no dim (the
    caller's to know: the direct and transposed grad_input, a grouped
    forward, a grouped stride phase of one tap) runs in f32 rather than
    f16/bf16 on a GPU target: where a group's channel counts are not all
    multiples of `tuning.mma_channel_multiple` (IREE's MMA tile). With positions before output channels
    (`contraction_forms.conv`) it was right in f16 on the H100 wherever it
    finished; with 64-128 channels a group 3.1x-130x faster than in f32
    (1x1 g4 n32 c256 k512 28x28, both gradients: 0.21 ms against 8.3 at
    stride 1). With 8 or 30 (1x1 g32 c256, g8 c240 k480) IREE's f16 code
    did not finish in 40 s; those ran in f32 in 0.20 and 0.35 ms
    (docs/performance-journal.md, "Windowless convolutions in f16")."""
    return half_precision_on_gpu(target, dtype) and any(c % tuning.mma_channel_multiple for c in group_channels)


def one_tap_strided_f32_on_gpu(target: str, dtype: str, kernel: Sequence[int], strides: Sequence[int],
                               groups: int) -> bool:
    """An ungrouped strided 1x1 convolution in f32 on a GPU target (a
    transposed convolution's grad_input, a forward projection): IREE 3.13's
    f32 code (no MMA) ran it as a convolution 1.7x-6.3x slower than an
    im2col gather of every stride-th element and the named matmul, on four
    stride-2 layers on the H100 (`benchmarks/transposed_gpu.py`); at stride
    1 the convolution was 1.3x faster (docs/performance-journal.md, "Transposed
    1x1 kernels in f32")."""
    one_tap = all(k == 1 for k in kernel) and groups == 1
    return one_tap and any(s > 1 for s in strides) and f32_on_gpu(target, dtype)
