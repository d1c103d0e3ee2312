// RUN: env IREE_BWDCONV_GRAD_INPUT_FORM=per-phase iree-bwdconv opt --pattern convolution_backward_phases --split-input-file %s 2>%t.notes | FileCheck %s
// RUN: env IREE_BWDCONV_GRAD_INPUT_FORM=per-phase iree-bwdconv opt --pattern convolution_backward_phases --target cuda --split-input-file %s 2>/dev/null | FileCheck --check-prefix=GPU %s
// RUN: FileCheck --check-prefix=NOTE %s < %t.notes
// RUN: env IREE_BWDCONV_GRAD_INPUT_FORM=sub-pixel iree-bwdconv opt --pattern convolution_backward_phases --split-input-file %s 2>/dev/null | FileCheck --check-prefix=SUBPIXEL %s
// RUN: env IREE_BWDCONV_GRAD_INPUT_FORM=col2im iree-bwdconv opt --pattern convolution_backward_phases --split-input-file %s 2>/dev/null | FileCheck --check-prefix=COL2IM %s
// RUN: env IREE_BWDCONV_GRAD_INPUT_FORM=col2im iree-bwdconv opt --pattern convolution_backward_phases --target cuda --split-input-file %s 2>/dev/null | FileCheck --check-prefix=COL2IM-GPU %s
// RUN: iree-bwdconv opt --pattern convolution_backward_phases --target cuda --split-input-file %s 2>/dev/null | FileCheck --check-prefix=GPU-AUTO %s
// RUN: iree-bwdconv opt --pattern convolution_backward_phases --target gfx942 --split-input-file %s 2>/dev/null | FileCheck --check-prefix=GFX942 %s
// NOTE: convolution_backward_phases did not match torch.aten.convolution_backward {{.*}}: the plan's grad_input form is direct (unit_stride_direct: stride 1

// 3x3 stride 2, per-phase form: four phases with 2x2, 2x1, 1x2 and 1x1 taps
// (9 in all), each gathered reversed from the weight straight into the
// filter layout [c, f, taps]; each phase is a stride-1 convolution (the maps
// of conv_2d_nchw_fchw) over grad_output as it is (padded once for all
// phases, never scattered; each phase's window a unit-stride slice of it)
// for every row of the position grid [q, i mod s]; one elementwise op weaves
// the four results into the grid, which collapses to grad_input itself
// (s divides 8: no crop). Nothing is inserted into zeros and no phase
// writes with a stride.
// CHECK-LABEL: func.func @grad_input_2d_s2_p1_d1_g1_f32
// CHECK-NOT:     tensor.insert_slice
// CHECK:         %[[SPAN:.*]] = tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK:         %[[W1:.*]] = tensor.extract_slice %[[SPAN]][0, 0, 0, 0] [2, 4, 5, 4] [1, 1, 1, 1]
// CHECK:         %[[W2:.*]] = tensor.extract_slice %[[SPAN]][0, 0, 0, 0] [2, 4, 4, 5] [1, 1, 1, 1]
// CHECK:         %[[W3:.*]] = tensor.extract_slice %[[SPAN]][0, 0, 0, 0] [2, 4, 4, 4] [1, 1, 1, 1]
// CHECK-NOT:     tensor.pad
// CHECK:         outs(%{{.*}} : tensor<1x3x4x2x2xf32>)
// CHECK:         %[[T0:.*]] = tensor.collapse_shape {{.*}} into tensor<3x4x2x2xf32>
// CHECK:         %[[P0:.*]] = linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK-SAME:      ins(%[[SPAN]], %[[T0]] : tensor<2x4x5x5xf32>, tensor<3x4x2x2xf32>) outs(%{{.*}} : tensor<2x3x4x4xf32>)
// CHECK:         %[[P1:.*]] = linalg.generic {{.*}}reduction{{.*}} ins(%[[W1]], %{{.*}} : tensor<2x4x5x4xf32>, tensor<3x4x2x1xf32>)
// CHECK:         %[[P2:.*]] = linalg.generic {{.*}}reduction{{.*}} ins(%[[W2]], %{{.*}} : tensor<2x4x4x5xf32>, tensor<3x4x1x2xf32>)
// CHECK:         %[[P3:.*]] = linalg.generic {{.*}}reduction{{.*}} ins(%[[W3]], %{{.*}} : tensor<2x4x4x4xf32>, tensor<3x4x1x1xf32>)
// CHECK-NOT:     linalg.generic {{.*}}reduction
// CHECK:         %[[GRID:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[P0]], %[[P1]], %[[P2]], %[[P3]] : {{.*}}) outs(%{{.*}} : tensor<2x3x4x2x4x2xf32>)
// CHECK:         tensor.collapse_shape {{.*}} into tensor<2x3x8x8xf32>
// CHECK-NOT:     tensor.extract_slice
// CHECK-NOT:     tensor.insert_slice
// CHECK:         return
// On GPU targets the four phases go into one stack [s, s, n, c, q, q], each a
// contiguous block, and one gather reads each element of grad_input from
// its phase's block at (i mod s, i floordiv s): no grid, nothing to cut.
// GPU-LABEL: func.func @grad_input_2d_s2_p1_d1_g1_f32
// GPU-COUNT-4: tensor.insert_slice %{{.*}} into %{{.*}}[{{[01]}}, {{[01]}}, 0, 0, 0, 0] [1, 1, 2, 3, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<1x1x2x3x4x4xf32> into tensor<2x2x2x3x4x4xf32>
// GPU:         %[[DX:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3x8x8xf32>)
// GPU:           tensor.extract %{{.*}} : tensor<2x2x2x3x4x4xf32>
// GPU-NOT:     tensor.extract_slice
// GPU:         torch_c.from_builtin_tensor %[[DX]]
// The same in the sub-pixel form: one contraction whose output is laid out
// [q, residue] per dim (zero taps where a residue has fewer), then a reshape
// interleaves the phases and a slice crops at p.
// SUBPIXEL-LABEL: func.func @grad_input_2d_s2_p1_d1_g1_f32
// SUBPIXEL:         arith.select {{.*}} : f32
// SUBPIXEL:         tensor.pad {{.*}} low[0, 0, 0, 1, 1] high[0, 0, 0, 1, 1]
// SUBPIXEL:         linalg.generic
// SUBPIXEL-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// SUBPIXEL-SAME:      outs(%{{.*}} : tensor<2x1x3x5x2x5x2xf32>)
// SUBPIXEL-NOT:     linalg.generic {{.*}}reduction
// SUBPIXEL:         tensor.collapse_shape {{.*}} into tensor<2x3x10x10xf32>
// SUBPIXEL:         tensor.extract_slice %{{.*}}[0, 0, 1, 1] [2, 3, 8, 8] [1, 1, 1, 1]
// The same in the col2im form: grad_output, padded once to the span that
// every phase reads and laid out [f, n*u] (columns padded to a multiple of
// 64), times all 9 reversed taps of the 3 input channels in one matmul (27
// rows); each phase then only adds its taps' products, one slice of the
// matmul's result per tap, in an elementwise op. No multiply after the matmul.
// COL2IM-LABEL: func.func @grad_input_2d_s2_p1_d1_g1_f32
// COL2IM-NOT:     tensor.insert_slice
// COL2IM:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<27x4xf32>, tensor<4x64xf32>) outs(%{{.*}} : tensor<27x64xf32>)
// COL2IM-NOT:     arith.mulf
// COL2IM:         outs(%{{.*}} : tensor<2x1x3x4x4xf32>)
// COL2IM:         outs(%{{.*}} : tensor<2x1x3x4x4xf32>)
// COL2IM:         outs(%{{.*}} : tensor<2x1x3x4x4xf32>)
// COL2IM:         outs(%{{.*}} : tensor<2x1x3x4x4xf32>)
// COL2IM:         outs(%{{.*}} : tensor<2x3x4x2x4x2xf32>)
// COL2IM-NOT:     arith.mulf
// COL2IM:         tensor.collapse_shape {{.*}} into tensor<2x3x8x8xf32>
// COL2IM-NOT:     tensor.extract_slice
// COL2IM:         return
// On GPU targets col2im's matmul runs per image and shares the taps
// ([n, g, f, u] as grad_output lays it out, no transpose); a 5x5 span is
// not widened to 64 columns (more than a quarter more).
// COL2IM-GPU-LABEL: func.func @grad_input_2d_s2_p1_d1_g1_f32
// COL2IM-GPU:         %[[SPAN:.*]] = tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// COL2IM-GPU:         %[[FLAT:.*]] = tensor.collapse_shape %[[SPAN]] {{.*}} into tensor<2x4x25xf32>
// COL2IM-GPU:         %[[DY:.*]] = tensor.expand_shape %[[FLAT]] {{.*}} into tensor<2x1x4x25xf32>
// COL2IM-GPU:         linalg.generic {{.*}}["parallel", "parallel", "parallel", "parallel", "reduction"]
// COL2IM-GPU-SAME:      ins(%{{.*}}, %[[DY]] : tensor<1x27x4xf32>, tensor<2x1x4x25xf32>) outs(%{{.*}} : tensor<2x1x27x25xf32>)
// COL2IM-GPU-NOT:     linalg.generic {{.*}}reduction
// COL2IM-GPU:         outs(%{{.*}} : tensor<2x3x4x2x4x2xf32>)
// COL2IM-GPU:         tensor.collapse_shape {{.*}} into tensor<2x3x8x8xf32>
// COL2IM-GPU-NOT:     tensor.extract_slice
// COL2IM-GPU:         return
// In f32 the GPU rule takes col2im for this kernel too (per-phase ran
// 1.4x-10x slower in f32 on the H100).
// GPU-AUTO-LABEL: func.func @grad_input_2d_s2_p1_d1_g1_f32
// GPU-AUTO:         linalg.generic {{.*}}["parallel", "parallel", "parallel", "parallel", "reduction"]
// GPU-AUTO-SAME:      ins(%{{.*}}, %{{.*}} : tensor<1x27x4xf32>, tensor<2x1x4x25xf32>) outs(%{{.*}} : tensor<2x1x27x25xf32>)

func.func @grad_input_2d_s2_p1_d1_g1_f32(%arg0: !torch.vtensor<[2,4,4,4],f32>, %arg1: !torch.vtensor<[2,3,8,8],f32>, %arg2: !torch.vtensor<[4,3,3,3],f32>) -> !torch.vtensor<[2,3,8,8],f32> {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %none = torch.constant.none
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[2,4,4,4],f32>, !torch.vtensor<[2,3,8,8],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,3,8,8],f32>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,3,8,8],f32>
}

// -----

// 1x1 stride 2: one contraction (a GEMM) on grad_output as it is (no pad,
// no tap gather, no flip). On the CPU the named matmul between transposes
// of grad_output and of its result, woven with zeros into grad_input by one
// elementwise op; on GPU targets a GEMM with the weight first whose result
// is inserted with stride 2 into zeros.
// CHECK-LABEL: func.func @grad_input_2d_k1x1_s2_p0_d1_g1_f16
// CHECK-NOT:     tensor.pad
// CHECK-NOT:     tensor.extract
// CHECK-NOT:     tensor.insert_slice
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x8xf16>, tensor<8x4xf16>) outs(%{{.*}} : tensor<32x4xf32>)
// CHECK-NOT:     linalg.generic {{.*}}reduction
// CHECK:         linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x4x2x4x2xf16>)
// CHECK:           arith.select
// CHECK:           arith.truncf {{.*}} : f32 to f16
// CHECK-NOT:     tensor.insert_slice
// CHECK-NOT:     linalg.generic {{.*}}reduction

// On GPU targets the GEMM reads the weight first (IREE 3.13's CUDA code
// computed the GEMM with dy first wrongly in f16), its one tap gathered to
// [c, f] by a flat index that IREE keeps as a dispatch of its own, then
// grad_output as it is, in f16; its result is rounded to f16 and inserted
// with stride 2 into zeros.
// GPU-LABEL: func.func @grad_input_2d_k1x1_s2_p0_d1_g1_f16
// GPU-NOT:     tensor.pad
// GPU-NOT:     f16 to f32
// GPU:         %[[FLAT:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<32xf16>)
// GPU:           linalg.index 0
// GPU:           arith.divui
// GPU:           arith.remui
// GPU:           tensor.extract %{{.*}} : tensor<8x4x1x1xf16>
// GPU:         %[[WT:.*]] = tensor.expand_shape %[[FLAT]] {{.*}} into tensor<4x8xf16>
// GPU-NOT:     util.optimization_barrier
// GPU:         linalg.generic {{.*}}reduction
// GPU-SAME:      ins(%[[WT]], %{{.*}} : tensor<4x8xf16>, tensor<2x8x4x4xf16>)
// GPU-SAME:      outs(%{{.*}} : tensor<2x4x4x4xf32>)
// GPU:           arith.truncf {{.*}} : f32 to f16
// GPU:         tensor.insert_slice {{.*}}[0, 0, 0, 0] [2, 4, 4, 4] [1, 1, 2, 2] : tensor<2x4x4x4xf16> into tensor<2x4x8x8xf16>
// GPU-NOT:     linalg.generic {{.*}}reduction
// GPU:         return
// Unforced, CUDA's is our kernel's (its 4 channels padded to 8), which
// this pattern leaves; gfx942's is the GEMM above.
// GPU-AUTO-LABEL: func.func @grad_input_2d_k1x1_s2_p0_d1_g1_f16
// GPU-AUTO-NOT:  linalg.generic
// GPU-AUTO:      torch.aten.convolution_backward
// GFX942-LABEL:  func.func @grad_input_2d_k1x1_s2_p0_d1_g1_f16
// GFX942-NOT:    linalg.matmul
// GFX942:        linalg.generic {{.*}}reduction
// GFX942-SAME:     ins(%{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<2x8x4x4xf16>)

func.func @grad_input_2d_k1x1_s2_p0_d1_g1_f16(%arg0: !torch.vtensor<[2,8,4,4],f16>, %arg1: !torch.vtensor<[2,4,8,8],f16>, %arg2: !torch.vtensor<[8,4,1,1],f16>) -> !torch.vtensor<[2,4,8,8],f16> {
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %int0 = torch.constant.int 0
  %none = torch.constant.none
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[2,8,4,4],f16>, !torch.vtensor<[2,4,8,8],f16>, !torch.vtensor<[8,4,1,1],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,4,8,8],f16>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,4,8,8],f16>
}

// -----

// With a dynamic batch the f16 GEMM's result is inserted with stride 2 into
// zeros on CUDA, but woven with zeros along both dims on gfx942: IREE 3.13's
// AMDGPU backend failed on that insert fused into the GEMM where dy has 5 to
// 7 rows ("Cannot select: f32 = Constant<-1>").
// GPU-AUTO-LABEL: func.func @grad_input_2d_k1x1_s2_p0_d1_g1_dynbatch_f16
// GPU-AUTO:      linalg.generic {{.*}}reduction
// GPU-AUTO-SAME:   ins(%{{.*}}, %{{.*}} : tensor<8x8xf16>, tensor<?x8x5x5xf16>)
// GPU-AUTO:      tensor.insert_slice {{.*}} [1, 1, 2, 2] : tensor<?x8x5x5xf16> into tensor<?x8x9x9xf16>
// GFX942-LABEL: func.func @grad_input_2d_k1x1_s2_p0_d1_g1_dynbatch_f16
// GFX942:       linalg.generic {{.*}}reduction
// GFX942-SAME:    ins(%{{.*}}, %{{.*}} : tensor<8x8xf16>, tensor<?x8x5x5xf16>)
// GFX942:       linalg.generic {{.*}} outs(%{{.*}} : tensor<?x8x5x2x5x2xf16>)
// GFX942:       tensor.extract_slice {{.*}}[0, 0, 0, 0] [%{{.*}}, 8, 9, 9] [1, 1, 1, 1] : tensor<?x8x10x10xf16> to tensor<?x8x9x9xf16>
// GFX942-NOT:   [1, 1, 2, 2]
// GFX942:       return

func.func @grad_input_2d_k1x1_s2_p0_d1_g1_dynbatch_f16(%arg0: !torch.vtensor<[?,8,5,5],f16>, %arg1: !torch.vtensor<[?,8,9,9],f16>, %arg2: !torch.vtensor<[8,8,1,1],f16>) -> !torch.vtensor<[?,8,9,9],f16> {
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %int0 = torch.constant.int 0
  %none = torch.constant.none
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[?,8,5,5],f16>, !torch.vtensor<[?,8,9,9],f16>, !torch.vtensor<[8,8,1,1],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[?,8,9,9],f16>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[?,8,9,9],f16>
}

// -----

// Strided along one dim only (here 1-D), the f16 GEMM's result is not
// inserted with stride on GPU targets: IREE 3.13's CUDA code failed to
// compile that insert fused into the GEMM's MMA dispatch. One elementwise
// op rounds it and puts a zero after each element; collapsed, that is
// grad_input. (Unforced, CUDA's is our kernel's: shown on gfx942.)
// GFX942-LABEL: func.func @grad_input_1d_k1_s2_p0_d1_g1_f16
// GFX942:         linalg.generic {{.*}}reduction
// GFX942-SAME:      ins(%{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<2x8x4xf16>)
// GFX942-SAME:      outs(%{{.*}} : tensor<2x4x4xf32>)
// GFX942-NOT:     tensor.insert_slice
// GFX942:         linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x4x2xf16>)
// GFX942:           arith.select
// GFX942:           arith.truncf {{.*}} : f32 to f16
// GFX942:         tensor.collapse_shape {{.*}} into tensor<2x4x8xf16>
// GFX942-NOT:     tensor.insert_slice
// GFX942:         return

func.func @grad_input_1d_k1_s2_p0_d1_g1_f16(%arg0: !torch.vtensor<[2,8,4],f16>, %arg1: !torch.vtensor<[2,4,8],f16>, %arg2: !torch.vtensor<[8,4,1],f16>) -> !torch.vtensor<[2,4,8],f16> {
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %int0 = torch.constant.int 0
  %none = torch.constant.none
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[2,8,4],f16>, !torch.vtensor<[2,4,8],f16>, !torch.vtensor<[8,4,1],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,4,8],f16>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,4,8],f16>
}

// -----

// In f32 on GPU targets the 1x1 kernel's GEMM is the CPU's: grad_output's
// rows [n*h*w, f] times the weight as [f, c] in the named matmul, woven into
// the grid (the weight-first generic ran 4.3x-12x slower in f32 on the H100).
// GPU-AUTO-LABEL: func.func @grad_input_2d_k1x1_s2_p0_d1_g1_f32
// GPU-AUTO:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x8xf32>, tensor<8x4xf32>) outs(%{{.*}} : tensor<32x4xf32>)
// GPU-AUTO-NOT:     linalg.generic {{.*}}reduction
// GPU-AUTO:         outs(%{{.*}} : tensor<2x4x8x8xf32>)
// GPU-AUTO:         return

func.func @grad_input_2d_k1x1_s2_p0_d1_g1_f32(%arg0: !torch.vtensor<[2,8,4,4],f32>, %arg1: !torch.vtensor<[2,4,8,8],f32>, %arg2: !torch.vtensor<[8,4,1,1],f32>) -> !torch.vtensor<[2,4,8,8],f32> {
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %int0 = torch.constant.int 0
  %none = torch.constant.none
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[2,8,4,4],f32>, !torch.vtensor<[2,4,8,8],f32>, !torch.vtensor<[8,4,1,1],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,4,8,8],f32>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,4,8,8],f32>
}

// -----

// Stride 3 > kernel 2: residue 2 has no tap. Two contractions, not three;
// the grid gets zeros at the empty phase's positions.
// CHECK-LABEL: func.func @grad_input_1d_k2_s3_p0_d1_g1_f32
// CHECK:         %[[P0:.*]] = linalg.generic {{.*}}reduction{{.*}} outs(%{{.*}} : tensor<2x3x3xf32>)
// CHECK:         %[[P1:.*]] = linalg.generic {{.*}}reduction{{.*}} outs(%{{.*}} : tensor<2x3x3xf32>)
// CHECK-NOT:     linalg.generic {{.*}}reduction
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[P0]], %[[P1]] : tensor<2x3x3xf32>, tensor<2x3x3xf32>) outs(%{{.*}} : tensor<2x3x3x3xf32>)
// CHECK:         tensor.collapse_shape {{.*}} into tensor<2x3x9xf32>
// CHECK-NOT:     tensor.insert_slice
// CHECK:         return
// col2im: the same two phases summed from one matmul of 6 rows (3
// channels x 2 taps); the empty residue gets no sum.
// COL2IM-LABEL: func.func @grad_input_1d_k2_s3_p0_d1_g1_f32
// COL2IM:         linalg.matmul {{.*}} outs(%{{.*}} : tensor<6x64xf32>)
// COL2IM:         outs(%{{.*}} : tensor<2x1x3x3xf32>)
// COL2IM:         outs(%{{.*}} : tensor<2x1x3x3xf32>)
// COL2IM:         outs(%{{.*}} : tensor<2x3x3x3xf32>)

func.func @grad_input_1d_k2_s3_p0_d1_g1_f32(%arg0: !torch.vtensor<[2,4,3],f32>, %arg1: !torch.vtensor<[2,3,9],f32>, %arg2: !torch.vtensor<[4,3,2],f32>) -> !torch.vtensor<[2,3,9],f32> {
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %int0 = torch.constant.int 0
  %none = torch.constant.none
  %int3 = torch.constant.int 3
  %0 = torch.prim.ListConstruct %int3 : (!torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[2,4,3],f32>, !torch.vtensor<[2,3,9],f32>, !torch.vtensor<[4,3,2],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,3,9],f32>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,3,9],f32>
}

// -----

// gcd(stride 2, dilation 2) = 2: odd residues have no tap, and the even
// residue's three taps are one stride-1 contraction (dilation 2/2 = 1). On
// GPU targets in the grouped convolution form [n, g, c, ..]
// (conv_2d_ngchw_gfchw's maps); on the CPU once per group, on that group's
// channels (group_split), the two results side by side.
// GPU-LABEL: func.func @grad_input_1d_k3_s2_p2_d2_g2_f32
// GPU:         linalg.generic {{.*}}reduction
// GPU-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x2x2x7xf32>, tensor<2x2x2x3xf32>) outs(%{{.*}} : tensor<2x2x2x5xf32>)
// GPU-NOT:     linalg.generic {{.*}}reduction
// GPU:         tensor.insert_slice {{.*}}[0, 0, 0, 0] [2, 2, 2, 5] [1, 1, 1, 2] : tensor<2x2x2x5xf32> into tensor<2x2x2x9xf32>
// GPU-NOT:     tensor.extract_slice
// CHECK-LABEL: func.func @grad_input_1d_k3_s2_p2_d2_g2_f32
// CHECK:         linalg.generic {{.*}}reduction
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x2x7xf32>, tensor<2x2x3xf32>) outs(%{{.*}} : tensor<2x2x5xf32>)
// CHECK:         tensor.insert_slice {{.*}}[0, 0, 0] [2, 2, 5] [1, 1, 2] : tensor<2x2x5xf32> into tensor<2x2x9xf32>
// CHECK:         linalg.generic {{.*}}reduction
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x2x7xf32>, tensor<2x2x3xf32>) outs(%{{.*}} : tensor<2x2x5xf32>)
// CHECK-NOT:     linalg.generic {{.*}}reduction
// CHECK:         tensor.insert_slice {{.*}}[0, 2, 0] [2, 2, 9] [1, 1, 1] : tensor<2x2x9xf32> into tensor<2x4x9xf32>

func.func @grad_input_1d_k3_s2_p2_d2_g2_f32(%arg0: !torch.vtensor<[2,4,5],f32>, %arg1: !torch.vtensor<[2,4,9],f32>, %arg2: !torch.vtensor<[4,2,3],f32>) -> !torch.vtensor<[2,4,9],f32> {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int2, %4 : !torch.vtensor<[2,4,5],f32>, !torch.vtensor<[2,4,9],f32>, !torch.vtensor<[4,2,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,4,9],f32>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,4,9],f32>
}

// -----

// Stride 1: nothing to skip, so the pattern declines and says why (the
// direct form, convolution_backward.mlir, takes it).
// CHECK-LABEL: func.func @grad_2d_s1_p1_d1_g1_f32
// CHECK:         torch.aten.convolution_backward

func.func @grad_2d_s1_p1_d1_g1_f32(%arg0: !torch.vtensor<[2,4,8,8],f32>, %arg1: !torch.vtensor<[2,3,8,8],f32>, %arg2: !torch.vtensor<[4,3,3,3],f32>) -> (!torch.vtensor<[2,3,8,8],f32>, !torch.vtensor<[4,3,3,3],f32>) {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int1 = torch.constant.int 1
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %true, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[2,4,8,8],f32>, !torch.vtensor<[2,3,8,8],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,3,8,8],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.none
  return %result0, %result1 : !torch.vtensor<[2,3,8,8],f32>, !torch.vtensor<[4,3,3,3],f32>
}

// -----

// Grouped (2 groups) 3x3 stride 2 in f16 on GPU targets: per-phase, in the
// grouped convolution form [n, g, c, ..], over grad_output padded once (no
// scatter): the 2x2, 2x1 and 1x2 phases read f16, the 1x1 phase reads f32
// (IREE 3.13's f16 code for a grouped 1x1 convolution read out of bounds on
// the H100). No strided insert into zeros anywhere.
// GPU-LABEL: func.func @grad_input_2d_s2_p1_d1_g2_f16
// GPU:         tensor<2x2x2x4x4xf32>, tensor<2x2x2x1x1xf32>
// GPU-AUTO-LABEL: func.func @grad_input_2d_s2_p1_d1_g2_f16
// GPU-AUTO-NOT:     [1, 1, 2, 2]
// GPU-AUTO:         tensor.pad %{{.*}} low[0, 0, 0, 0, 0] high[0, 0, 0, 1, 1]
// GPU-AUTO:         linalg.generic {{.*}}"reduction", "reduction", "reduction"]
// GPU-AUTO-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x2x2x5x5xf16>, tensor<2x2x2x2x2xf16>) outs(%{{.*}} : tensor<2x2x2x4x4xf32>)
// GPU-AUTO:         linalg.generic {{.*}}"reduction", "reduction", "reduction"]
// GPU-AUTO-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x2x2x5x4xf16>, tensor<2x2x2x2x1xf16>)
// GPU-AUTO:         linalg.generic {{.*}}"reduction", "reduction", "reduction"]
// GPU-AUTO-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x2x2x4x5xf16>, tensor<2x2x2x1x2xf16>)
// GPU-AUTO:         linalg.generic {{.*}}"reduction", "reduction", "reduction"]
// GPU-AUTO-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x2x2x4x4xf32>, tensor<2x2x2x1x1xf32>)
// GPU-AUTO-NOT:     [1, 1, 2, 2]
// GPU-AUTO:         return

func.func @grad_input_2d_s2_p1_d1_g2_f16(%arg0: !torch.vtensor<[2,4,4,4],f16>, %arg1: !torch.vtensor<[2,4,8,8],f16>, %arg2: !torch.vtensor<[4,2,3,3],f16>) -> !torch.vtensor<[2,4,8,8],f16> {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %false = torch.constant.bool false
  %none = torch.constant.none
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int2, %4 : !torch.vtensor<[2,4,4,4],f16>, !torch.vtensor<[2,4,8,8],f16>, !torch.vtensor<[4,2,3,3],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,4,8,8],f16>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,4,8,8],f16>
}
