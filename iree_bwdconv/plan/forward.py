"""The forward convolution's form (aten.convolution, not transposed).

Not a gradient, but every training step runs it beside ours. torch-mlir
lowers it to a named convolution, which IREE 3.13's CPU code ran 3x-17x
slower than the groups sliced apart and, on strided, 1x1 and wide (128+
channel) layers, 1.1x-14x slower than im2col + matmul
(`benchmarks/forward_cpu.py`). On GPU targets torch-mlir keeps it but
where IREE's code for its named form was wrong or slow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.plan import targets
from iree_bwdconv.plan.tuning import Tuning


@dataclass(frozen=True)
class ForwardSpec:
    """What the forward's rules read: channels in and out, the kernel,
    strides, groups, the dtype and the output's spatial sizes."""

    in_channels: int
    out_channels: int
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    groups: int
    dtype: str
    output_spatial: tuple[int, ...]
    padding: tuple[int, ...] = ()  # not read by the rules; the builder's
    dilation: tuple[int, ...] = ()

    @property
    def spatial_rank(self) -> int:
        return len(self.kernel)


@dataclass(frozen=True)
class ForwardPlan:
    """form: None where torch-mlir's lowering keeps it (`why_not` says why),
    else "grouped" (one grouped convolution), "windowless-grouped" (over the
    rows it reads, positions' loops first), or "per-group" (each group, or
    the one, an im2col matmul where `gather`, else the convolution generic).
    widened: the windowless grouped convolution runs in f32."""

    form: Optional[str]
    rule: str
    why_not: str = ""
    gather: bool = False
    widened: bool = False


def im2col_applies(channels: int, kernel: Sequence[int], strides: Sequence[int], tuning: Tuning) -> bool:
    """im2col + named matmul on the CPU for a 1x1 kernel, a stride above 1
    (the gather then reads only the pixels used) or at least
    `tuning.forward_im2col_min_channels` input channels (c128 28x28: 2.26 ms
    against the named convolution's 3.36; c64 56x56: 0.69x-1.28x its time in
    three runs, no steady win, so narrower layers keep the named one)."""
    return all(k == 1 for k in kernel) or any(s > 1 for s in strides) or channels >= tuning.forward_im2col_min_channels


def torch_mlir_lowers_none(groups: int, channels: Optional[int], rank: int) -> bool:
    """A depthwise convolution (one input channel a group) over 3 spatial
    dims, which torch-mlir's linalg lowering leaves unlowered ("failed to
    legalize operation 'torch.aten.convolution'"), on every target."""
    return groups > 1 and channels == groups and rank == 3


def group_split_applies(groups: int, channels: int, options: LoweringOptions, tuning: Tuning) -> bool:
    """Grouped convolutions on the CPU with at least
    `tuning.split_min_channels_per_group` channels a group, one ungrouped
    convolution per group: IREE 3.13's CPU code for grouped maps ran 2x-20x
    slower than the groups sliced apart (the forward 3x-17x, the g32
    shape's grad_input 5x and grad_weight 2x). Depthwise ones keep the
    grouped form, which IREE recognizes (sliced, 1.1x-1.4x slower)."""
    return options.target == "cpu" and groups > 1 and channels // groups >= tuning.split_min_channels_per_group


def forward(spec: ForwardSpec, options: LoweringOptions, tuning: Tuning) -> ForwardPlan:
    """The forward's form. On GPU targets only an f16/bf16 convolution whose
    window slides along no dim (IREE 3.13's CUDA code computed torch-mlir's
    named 1x1 convolution 131% off in f16 on the H100, `windowless_half_forward`)
    and an ungrouped strided 1x1 kernel in f32 (1.7x-6.3x slower as a
    convolution) are ours; grouped, either is one grouped convolution over
    the rows it reads, in f32 where a group's channels are off IREE's MMA
    tile (torch-mlir's named grouped convolution was 117%-135% off in f16)."""
    c, groups = spec.in_channels, spec.groups
    windowless = targets.windowless_half_on_gpu(options.target, spec.dtype, spec.kernel, spec.output_spatial)
    one_tap_f32 = targets.one_tap_strided_f32_on_gpu(options.target, spec.dtype, spec.kernel, spec.strides, groups)
    unlowered = torch_mlir_lowers_none(groups, c, spec.spatial_rank)
    if unlowered:
        return ForwardPlan("grouped", "depthwise_3d_forward")
    if options.on_gpu and not (windowless or one_tap_f32):
        return ForwardPlan(None, "gpu_forward_torch_mlir", (
            f"target {options.target}: torch-mlir's lowering keeps it (all but f16/bf16 1x1 kernels "
            "or windows that slide along no dim, and ungrouped strided 1x1 kernels in f32)"))
    rule = "windowless_half_forward" if windowless else "one_tap_f32_forward" if one_tap_f32 else ""
    if options.on_gpu and groups > 1:
        channels = (c // groups, spec.out_channels // groups)
        widened = targets.widens_windowless(options.target, spec.dtype, channels, tuning)
        return ForwardPlan("windowless-grouped", rule, widened=widened)
    if groups > 1 and not group_split_applies(groups, c, options, tuning):
        return ForwardPlan(None, "depthwise_forward_torch_mlir", (
            f"groups={groups} with {c} input channels: depthwise, which IREE recognizes; "
            f"split only with at least {tuning.split_min_channels_per_group} channels per group"))
    if groups == 1 and not (windowless or im2col_applies(c, spec.kernel, spec.strides, tuning)):
        return ForwardPlan(None, "cpu_forward_named_conv", (
            f"{c} input channels, stride 1, kernel {list(spec.kernel)}: torch-mlir's named convolution is "
            "this form already"))
    gather = windowless or im2col_applies(c // groups, spec.kernel, spec.strides, tuning)
    if not rule:
        rule = "cpu_group_split" if groups > 1 else "cpu_forward_im2col"
    return ForwardPlan("per-group", rule, gather=gather)
