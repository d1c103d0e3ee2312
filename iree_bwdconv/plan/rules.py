"""Every rule the plan decides by: what it says and the one figure that
justifies it, as `iree-bwdconv explain` prints them and docs/forms.md
tables them. The full evidence is in the docstring of the rule's function
(`grad_input`, `grad_weight`, `forward`) and docs/performance-journal.md."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    gradient: str  # grad_input, grad_weight, grad_bias or forward
    targets: str  # where it can fire: cpu, gpu (cuda and gfx942), cuda, gfx942 or all
    says: str
    evidence: str


_H = "H100"
RULES: dict[str, Rule] = {
    # grad_input: the form
    "transposed_strided_conv": Rule("grad_input", "all", "a transposed convolution's grad_input is a strided "
                                    "convolution of grad_output: no zeros to skip", "no phases needed"),
    "one_tap_strided_f32_im2col": Rule("grad_input", "gpu", "transposed, ungrouped strided 1x1 in f32: im2col "
                                       "gather + named matmul", f"1.7x-6.3x faster than the convolution ({_H})"),
    "transposed_one_tap_gemm": Rule("grad_input", "gpu", "transposed 1x1 in f16/bf16: weight-first GEMM",
                                    f"n16 c512 k256 28x28 s2: 0.17 ms against 141 ({_H})"),
    "windowless_half_conv": Rule("grad_input", "gpu", "transposed, window slides along no dim, f16/bf16: rows "
                                 "copied, positions' loops first", f"opdsl order 62%-100% off in f16 ({_H})"),
    "cuda_kernel": Rule("grad_input", "cuda", "ungrouped 1x1 f16/bf16, 1-D/2-D, static batch: our CUDA kernel",
                        f"linalg's best 1.8x-2.4x IREE's matmul strided, 1.2x-1.5x slower at stride 1 ({_H})"),
    "cuda_phase_kernel": Rule("grad_input", "cuda", "strided, 2x2 or larger, dilation 1, f16/bf16, 1-D/2-D, "
                              "static batch, at most 32 grad_input and at least 8 grad_output channels a group: "
                              "our CUDA phase kernel, every phase in one launch",
                              f"1.6x-2.1x faster than the phases in place at 8-32 channels a group, 1.6x-10x at "
                              f"3-16 channels ({_H})"),
    "kernel_padded_channels": Rule("grad_input", "cuda", "input channels off a multiple of 8: padded to one for "
                                   "our kernel, grad_input cropped back", "IREE's f16 GEMM read past them: "
                                   "widened, c252 k504 5.6 ms against upstream's 0.68 (H200)"),
    "unit_stride_direct": Rule("grad_input", "all", "stride 1: the direct form, a stride-1 convolution",
                               "no inserted zeros to avoid"),
    "forced": Rule("grad_input", "all", "the form IREE_BWDCONV_GRAD_INPUT_FORM forces", "for measuring"),
    "subpixel_unaligned": Rule("grad_input", "all", "sub-pixel forced but phases unaligned (d/gcd(d,s) > 1): "
                               "per-phase", "sub-pixel cannot express them"),
    "gpu_one_tap_per_phase": Rule("grad_input", "gpu", "1x1 kernel: per-phase (one phase, a weight-first GEMM "
                                  "ungrouped)", f"1.8x-4.1x faster than col2im's matmul; right in f16 ({_H})"),
    "gpu_plain_direct": Rule("grad_input", "gpu", "plain forms (second try after a failed compile): direct",
                             "compiled where per-phase did not"),
    "gpu_depthwise_direct": Rule("grad_input", "gpu", "depthwise, at most 36 taps: direct (upstream's form)",
                                 "IREE's depthwise code costs the same per output from 4 to 36 taps; "
                                 "per-phase's weave made it 0.87x-0.92x of upstream (H200)"),
    "gpu_grouped_per_phase": Rule("grad_input", "gpu", "grouped, larger than 1x1: per-phase",
                                  f"g32 3x3: 5.4 ms against direct 7.3, upstream 9.4 ({_H})"),
    "gpu_f32_col2im": Rule("grad_input", "gpu", "f32, ungrouped, larger than 1x1: col2im",
                           f"1.4x-10x faster than per-phase (i2v 2.9 ms against 28.5, {_H})"),
    "gpu_per_phase": Rule("grad_input", "gpu", "f16/bf16, ungrouped, larger than 1x1, more than 4 channels: "
                          "per-phase", f"faster than col2im on 16 of 23 layers, level on 4 ({_H})"),
    "gpu_narrow_col2im": Rule("grad_input", "gpu", "at most 4 input channels: col2im",
                              f"per-phase 2x-3.5x slower ({_H})"),
    "cpu_one_tap_per_phase": Rule("grad_input", "cpu", "1x1 kernel: per-phase, one matmul on grad_output",
                                  "0.45 ms against the direct form's 0.93 (c1024 k2048 50x50)"),
    "cpu_col2im": Rule("grad_input", "cpu", "ungrouped, larger than 1x1: col2im",
                       "1.13x-15.7x faster than the direct form"),
    "cpu_grouped_direct": Rule("grad_input", "cpu", "grouped, larger than 1x1: direct form, group by group",
                               "col2im per group 2x slower (g32)"),
    # grad_input: inside a form
    "half_in_f32": Rule("grad_input", "gpu", "f16/bf16 operands widened to f32 (sub-pixel, grouped 1x1 off "
                        "the MMA tile, narrow inputs on gfx942)", f"1-tap phases 60%-120% off in f16 ({_H})"),
    "direct_im2col_matmul": Rule("grad_input", "all", "direct form as im2col + matmul (CPU: 1x1, or stride 1 "
                                 "with 128+ channels; GPU f32 stride 1)", "3x-5x faster on 1x1 kernels (CPU)"),
    "direct_weight_as_is": Rule("grad_input", "gpu", "f32, 128+ channels: the flipped weight read as it is",
                                f"c256 14x14: 1.20 ms against 4.24 ({_H})"),
    "windowless_widened": Rule("grad_input", "gpu", "window slides along no dim, channels a group off the "
                               "MMA tile of 16: f32", f"f16 did not finish in 40 s; f32 0.20 ms ({_H}); "
                               "IREE fault cuda_mma_padding_overread"),
    "phase_one_matmul": Rule("grad_input", "all", "ungrouped 1x1 (CPU, GPU f32): one row-major matmul",
                             f"f32: 3.3x-18x faster than the weight-first GEMM ({_H})"),
    "phase_weight_first": Rule("grad_input", "gpu", "ungrouped 1x1 in f16/bf16: weight-first GEMM",
                               f"the convolution-shaped one was wrong in f16 ({_H})"),
    "phase_woven": Rule("grad_input", "gpu", "lone f16/bf16 phase strided along one dim: woven with zeros, "
                        "not a strided insert", "IREE fault cuda_strided_insert_mma_fusion: the fused insert "
                        "failed to compile"),
    "phase_one_table": Rule("grad_input", "gpu", "kernels under 5 wide whose table decodes by shifts: one tap "
                            "table for every phase", "a gather per phase was a dispatch each"),
    "phase_tables_each": Rule("grad_input", "gpu", "kernels under 5 wide whose one table would divide by other "
                              "sizes: a tap table per phase", "IREE fault cuda_gather_division_umul_lohi: the "
                              "one table's divisions did not compile for CUDA"),
    "phase_widened": Rule("grad_input", "gpu", "grouped 1-tap phases off the MMA tile: f32",
                          f"f16 did not finish ({_H}); IREE fault cuda_mma_padding_overread"),
    "phase_narrow_widened": Rule("grad_input", "gfx942", "per-phase, under 16 input and 32+ output channels a "
                                 "group: f32", "IREE fault gfx942_phase_shared_memory: 'uses 69632 bytes of "
                                 "shared memory; exceeded the limit of 65536'"),
    "gpu_gather_weave": Rule("grad_input", "gpu", "per-phase woven by a gather", f"the grid weave, reading every phase, "
                             f"took 599 us of 774 ({_H})"),
    "phase_stored_in_place": Rule("grad_input", "cuda", "per-phase, 2-D/3-D, every dim strided, 16+ channels a "
                                  "group: each phase pads its own window and stores its rows into grad_input, "
                                  "one dispatch each", "transposed k4 s2 p1 c64 k32 f16: 0.096 ms against 0.134 "
                                  "woven; Retinanet's grad_input 0.22 against 1.95 (H200)"),
    "phase_grouped_one_tap_gemm": Rule("grad_input", "cuda", "grouped phases stored in place: a phase of one tap "
                                       "along every dim as a weight-first GEMM", "the convolution-shaped one 98% of "
                                       "the largest value off in f16 (IREE fault cuda_grouped_phase_store, H200)"),
    "col2im_images_first": Rule("grad_input", "gpu", "col2im's taps-first matmul per image",
                                f"143 us against 223 unaligned ({_H})"),
    "cpu_group_split": Rule("all", "cpu", "grouped with 2+ channels a group: one ungrouped convolution per "
                            "group", "grouped maps 2x-20x slower (forward 3x-17x)"),
    # grad_weight
    "weight_rows": Rule("grad_weight", "gpu", "ungrouped 1x1 with enough work per element: the weight rows",
                        f"c448 k896: 1.84 ms against 2.93 (bf16, {_H})"),
    "split_k": Rule("grad_weight", "gpu", "the sum split into partial sums that fill the GPU",
                    "unsplit, a few thread blocks ran each whole sum"),
    "cpu_weight_im2col": Rule("grad_weight", "cpu", "im2col + matmul", "IREE's CPU matmul is its fastest "
                              "contraction"),
    "grouped_weight_contraction": Rule("grad_weight", "cuda", "grouped: one contraction split by images",
                                       "3x3 s2 g32: 8.42 ms against im2col's 18.7 (f32 operands, H200)"),
    "grouped_weight_im2col": Rule("grad_weight", "gpu", "grouped, outside the contraction's rule: im2col",
                                  "slower from 30 channels a group (1x1 g8 c240: 0.255 against 0.189)"),
    "f32_weight_im2col": Rule("grad_weight", "gpu", "f32: im2col", f"contraction slower on 30 of 32 layers "
                              f"(355 ms against 24, {_H})"),
    "half_one_wide_weight_im2col": Rule("grad_weight", "gpu", "f16/bf16 kernel with a dim of 1: im2col",
                                        f"the contraction 1.2-1.7x the largest value off ({_H})"),
    "few_partials_weight_im2col": Rule("grad_weight", "gpu", "too few partial sums by images: im2col",
                                       f"3x3 c3 k32 n1: 0.49 ms against 21 ({_H})"),
    "half_weight_contraction": Rule("grad_weight", "gpu", "f16/bf16: one contraction split by images",
                                    f"ResNet-50 3x3 c64: 0.46 ms against 1.46 ({_H})"),
    "wide_weight_im2col": Rule("grad_weight", "gpu", "512Ki+ weights unstrided or over few positions: im2col",
                               f"3x3 c256 k256 14x14: 0.76 ms against 0.49 ({_H})"),
    "grouped_weight_widened": Rule("grad_weight", "cuda", "grouped contraction below 16 channels a group or "
                                   "1-wide off the MMA tile: its smaller operand read as f32",
                                   "f16 did not finish in 45 s; IREE fault cuda_mma_padding_overread"),
    "cpu_columns_first": Rule("grad_weight", "cpu", "deep reduction: gather columns-first, split-K",
                              "ResNet-50 stem 1.8x faster"),
    "cpu_padded_taps": Rule("grad_weight", "cpu", "matmul columns made a multiple of 16 (at most 4/3 the work)",
                            "147 columns (the stem's, before columns-first) 1.3x-1.4x slower than 192"),
    "gpu_unpadded_gather": Rule("grad_weight", "gpu", "im2col gather reads its source unpadded",
                                "IREE made the pad copy a slow_memcpy"),
    "cpu_named_matmul": Rule("grad_weight", "cpu", "the im2col matmul as linalg.matmul",
                             "keeps the row-major operands IREE's CPU code runs best"),
    # grad_bias
    "bias_batch_first": Rule("grad_bias", "gfx942", "f16, dynamic batch: sum over the images first",
                             "IREE fault gfx942_f16_dynamic_batch_sum: 'Cannot select: f32 = Constant<-1>'"),
    "bias_split": Rule("grad_bias", "gpu", "two steps, rows that fill the GPU", f"one reduction took 79 ms for "
                       f"n3 k32 470x725 ({_H})"),
    # forward
    "depthwise_3d_forward": Rule("forward", "all", "depthwise 3-D: one grouped convolution of ours",
                                 "torch-mlir leaves it unlowered"),
    "gpu_forward_torch_mlir": Rule("forward", "gpu", "torch-mlir's lowering keeps it", "its named forms are "
                                   "right and fast on GPUs outside the two rules below"),
    "windowless_half_forward": Rule("forward", "gpu", "f16/bf16, window slides along no dim: im2col matmul "
                                    "(grouped: positions' loops first)", f"named 1x1 conv 131% off in f16 ({_H})"),
    "one_tap_f32_forward": Rule("forward", "gpu", "ungrouped strided 1x1 in f32: im2col matmul",
                                f"1.7x-4.9x faster ({_H})"),
    "depthwise_forward_torch_mlir": Rule("forward", "cpu", "depthwise: torch-mlir's, which IREE recognizes",
                                         "sliced apart 1.1x-1.4x slower"),
    "cpu_forward_named_conv": Rule("forward", "cpu", "stride 1, under 128 channels, wider than 1x1: "
                                   "torch-mlir's named convolution", "c64 56x56: im2col 0.69x-1.28x its time in three runs, no steady win"),
    "transposed_forward_phases": Rule("forward", "all", "a strided transposed convolution: the grad_input of the "
                                      "convolution it transposes, in the plan's form of it",
                                      "ConvTranspose2d k3 s2 p1 op1 c256: 0.164 ms against plain iree-compile's "
                                      "0.464 (f16, H200)"),
    "transposed_forward_depthwise_stride_1": Rule("forward", "all", "a transposed convolution at stride 1 with "
                                                  "one input channel a group: the grad_input of the convolution "
                                                  "it transposes", "torch-mlir's lowering emits an invalid "
                                                  "tensor.collapse_shape"),
    "transposed_forward_torch_mlir": Rule("forward", "all", "a transposed convolution at stride 1: torch-mlir's",
                                          "no zeros inserted to avoid"),
    "cpu_forward_im2col": Rule("forward", "cpu", "1x1, strided or 128+ channels: im2col + named matmul",
                               "c128 28x28: 2.26 ms against the named convolution's 3.36"),
}
