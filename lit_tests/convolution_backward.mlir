// RUN: iree-bwdconv opt --pattern convolution_backward --split-input-file %s | FileCheck %s
// RUN: iree-bwdconv opt --pattern convolution_backward --target cuda --split-input-file %s | FileCheck --check-prefix=GPU %s
// RUN: iree-bwdconv opt --pattern convolution_backward --target gfx942 --split-input-file %s | FileCheck --check-prefix=GFX942 %s

// All three gradients. grad_input: dy scattered with stride 2 into zeros padded
// by d*(K-1)-p = 1, the kernel reversed by a gather and transposed to the
// filter layout [c, f, k], then a stride-1 convolution with the maps of
// conv_2d_nchw_fchw (no group dim without groups).
// CHECK-LABEL: func.func @grad_2d_s2_p1_d1_g1_f32
// CHECK:         %[[DY:.*]] = torch_c.to_builtin_tensor %arg0
// CHECK:         %[[ZERO:.*]] = linalg.fill {{.*}} -> tensor<2x4x10x10xf32>
// CHECK:         %[[SCATTERED:.*]] = tensor.insert_slice %[[DY]] into %[[ZERO]][0, 0, 1, 1] [2, 4, 4, 4] [1, 1, 2, 2]
// CHECK:         arith.subi
// CHECK:         tensor.extract
// CHECK:         %[[FILTER:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<3x4x3x3xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK-SAME:      ins(%[[SCATTERED]], %[[FILTER]] : tensor<2x4x10x10xf32>, tensor<3x4x3x3xf32>) outs(%{{.*}} : tensor<2x3x8x8xf32>)
// grad_weight: the input padded by p, gathered at o*s + k*d into an im2col
// matrix [(n, o), (c, k)], and one matmul with dy as [f, (n, o)]: on the
// CPU the named linalg.matmul, which IREE keeps row-major (a generic's
// surrounding transposes get folded into its maps).
// CHECK:         tensor.pad {{.*}} low[0, 0, 1, 1] high[0, 0, 0, 0]
// CHECK:         outs(%{{.*}} : tensor<1x2x4x4x3x3x3xf32>)
// CHECK:         %[[A:.*]] = tensor.collapse_shape {{.*}} into tensor<4x32xf32>
// CHECK:         %[[B:.*]] = tensor.collapse_shape {{.*}} into tensor<32x27xf32>
// CHECK:         linalg.matmul ins(%[[A]], %[[B]] : tensor<4x32xf32>, tensor<32x27xf32>) outs(%{{.*}} : tensor<4x27xf32>)
// CHECK:         tensor.expand_shape {{.*}} output_shape [4, 3, 3, 3]
// grad_bias: a reduction over n, h, w.
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "reduction", "reduction", "reduction"]
// CHECK-SAME:      outs(%{{.*}} : tensor<4xf32>)
// CHECK-NOT:     torch.aten.convolution_backward

func.func @grad_2d_s2_p1_d1_g1_f32(%arg0: !torch.vtensor<[2,4,4,4],f32>, %arg1: !torch.vtensor<[2,3,8,8],f32>, %arg2: !torch.vtensor<[4,3,3,3],f32>) -> (!torch.vtensor<[2,3,8,8],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[4],f32>) {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int4 = torch.constant.int 4
  %0 = torch.prim.ListConstruct %int4 : (!torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %5 = torch.prim.ListConstruct %true, %true, %true : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %false, %4, %int1, %5 : !torch.vtensor<[2,4,4,4],f32>, !torch.vtensor<[2,3,8,8],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,3,8,8],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[4],f32>
  return %result0, %result1, %result2 : !torch.vtensor<[2,3,8,8],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.vtensor<[4],f32>
}

// -----

// A 1x1 kernel: no flip (no gather of the weight). On the CPU the GEMM is the
// named matmul [n*h*w, f] x [f, c] between transposes; on GPU targets a
// convolution-shaped generic with the weight only transposed.
// CHECK-LABEL: func.func @grad_input_2d_k1x1_s2_p0_d1_g1_f32
// CHECK-NOT:     tensor.extract
// CHECK-NOT:     linalg.index
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<128x8xf32>, tensor<8x4xf32>) outs(%{{.*}} : tensor<128x4xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      outs(%{{.*}} : tensor<2x4x64xf32>)

// GPU-LABEL: func.func @grad_input_2d_k1x1_s2_p0_d1_g1_f32
// GPU-NOT:     tensor.extract
// GPU-NOT:     linalg.index
// GPU:         linalg.generic {{.*}} ins(%{{.*}} : tensor<8x4x1x1xf32>) outs(%{{.*}} : tensor<4x8x1x1xf32>)
// GPU-NOT:     tensor.extract
// GPU:         linalg.generic
// GPU-SAME:      outs(%{{.*}} : tensor<2x4x8x8xf32>)

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

// Stride 1 pads instead of scattering; the flip reverses only the size-3 dim.
// CHECK-LABEL: func.func @grad_input_2d_k3x1_s1_p1x0_d1_g1_f32
// CHECK-NOT:     tensor.insert_slice
// CHECK:         tensor.pad {{.*}} low[0, 0, 1, 0] high[0, 0, 1, 0]
// CHECK:         %[[K:.*]] = linalg.index 2 : index
// CHECK:         %[[REV:.*]] = arith.subi %{{.*}}, %[[K]] : index
// CHECK-NEXT:    tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %[[REV]], %c0]

func.func @grad_input_2d_k3x1_s1_p1x0_d1_g1_f32(%arg0: !torch.vtensor<[2,4,8,8],f32>, %arg1: !torch.vtensor<[2,3,8,8],f32>, %arg2: !torch.vtensor<[4,3,3,1],f32>) -> !torch.vtensor<[2,3,8,8],f32> {
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %int0 = torch.constant.int 0
  %none = torch.constant.none
  %int1 = torch.constant.int 1
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[2,4,8,8],f32>, !torch.vtensor<[2,3,8,8],f32>, !torch.vtensor<[4,3,3,1],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,3,8,8],f32>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,3,8,8],f32>
}

// -----

// On GPU targets groups are an explicit group dim (the maps of
// conv_2d_ngchw_gfchw); f16 products accumulate in f32.
// GPU-LABEL: func.func @grad_input_2d_s2_p1_d1_g4_f16
// GPU:         tensor.insert_slice {{.*}} [1, 1, 2, 2] : tensor<2x8x4x4xf16> into tensor<2x8x10x10xf16>
// GPU:         output_shape [2, 4, 2, 10, 10]
// GPU:         output_shape [4, 2, 2, 3, 3]
// GPU:         linalg.generic
// GPU:         linalg.generic
// GPU-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x4x2x10x10xf16>, tensor<4x2x2x3x3xf16>)
// GPU:           arith.extf {{.*}} : f16 to f32
// GPU:           arith.extf {{.*}} : f16 to f32
// GPU:           arith.mulf {{.*}} : f32
// GPU:         -> tensor<2x4x2x8x8xf32>
// GPU:         arith.truncf {{.*}} : f32 to f16
// GPU:         torch_c.from_builtin_tensor {{.*}} : tensor<2x8x8x8xf16>
// On the CPU each group is an ungrouped gradient of its own channels
// (group_split), and the four results are inserted side by side.
// CHECK-LABEL: func.func @grad_input_2d_s2_p1_d1_g4_f16
// CHECK:         tensor.extract_slice %{{.*}}[0, 0, 0, 0] [2, 2, 4, 4] [1, 1, 1, 1] : tensor<2x8x4x4xf16> to tensor<2x2x4x4xf16>
// CHECK:         tensor.extract_slice %{{.*}}[0, 0, 0, 0] [2, 2, 3, 3] [1, 1, 1, 1] : tensor<8x2x3x3xf16> to tensor<2x2x3x3xf16>
// CHECK:         linalg.generic {{.*}}reduction
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x2x10x10xf16>, tensor<2x2x3x3xf16>) outs(%{{.*}} : tensor<2x2x8x8xf32>)
// CHECK:         tensor.extract_slice %{{.*}}[0, 6, 0, 0] [2, 2, 4, 4] [1, 1, 1, 1] : tensor<2x8x4x4xf16> to tensor<2x2x4x4xf16>
// CHECK:         tensor.extract_slice %{{.*}}[6, 0, 0, 0] [2, 2, 3, 3] [1, 1, 1, 1] : tensor<8x2x3x3xf16> to tensor<2x2x3x3xf16>
// CHECK:         %[[ALL:.*]] = tensor.empty() : tensor<2x8x8x8xf16>
// CHECK:         tensor.insert_slice %{{.*}} into %[[ALL]][0, 0, 0, 0] [2, 2, 8, 8] [1, 1, 1, 1]
// CHECK:         tensor.insert_slice {{.*}}[0, 6, 0, 0] [2, 2, 8, 8] [1, 1, 1, 1] : tensor<2x2x8x8xf16> into tensor<2x8x8x8xf16>
// CHECK-NEXT:    torch_c.from_builtin_tensor {{.*}} : tensor<2x8x8x8xf16>

func.func @grad_input_2d_s2_p1_d1_g4_f16(%arg0: !torch.vtensor<[2,8,4,4],f16>, %arg1: !torch.vtensor<[2,8,8,8],f16>, %arg2: !torch.vtensor<[8,2,3,3],f16>) -> !torch.vtensor<[2,8,8,8],f16> {
  %true = torch.constant.bool true
  %int4 = torch.constant.int 4
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
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int4, %4 : !torch.vtensor<[2,8,4,4],f16>, !torch.vtensor<[2,8,8,8],f16>, !torch.vtensor<[8,2,3,3],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,8,8,8],f16>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,8,8,8],f16>
}

// -----

// transposed=True: grad_input is a strided forward convolution; nothing
// scattered, and the weight [C, F, K] is already its filter.
// CHECK-LABEL: func.func @grad_input_transposed_2d_s2_p1_op1_g1_f32
// CHECK-NOT:     tensor.insert_slice
// CHECK:         tensor.pad {{.*}} low[0, 0, 1, 1] high[0, 0, 0, 0]
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x4x9x9xf32>, tensor<3x4x3x3xf32>) outs(%{{.*}} : tensor<2x3x4x4xf32>)

func.func @grad_input_transposed_2d_s2_p1_op1_g1_f32(%arg0: !torch.vtensor<[2,4,8,8],f32>, %arg1: !torch.vtensor<[2,3,4,4],f32>, %arg2: !torch.vtensor<[3,4,3,3],f32>) -> !torch.vtensor<[2,3,4,4],f32> {
  %false = torch.constant.bool false
  %true = torch.constant.bool true
  %int1 = torch.constant.int 1
  %none = torch.constant.none
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %true, %3, %int1, %4 : !torch.vtensor<[2,4,8,8],f32>, !torch.vtensor<[2,3,4,4],f32>, !torch.vtensor<[3,4,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,3,4,4],f32>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,3,4,4],f32>
}

// -----

// transposed=True with a 1x1 kernel at stride 2 in f32: on the CPU the strided
// convolution; on GPU targets every second element of dy gathered into rows
// [n*h*w, f] and the named matmul with the weight as [f, c] (1.7x-6.3x
// faster on the H100 than the strided convolution).
// CHECK-LABEL: func.func @grad_input_transposed_2d_k1x1_s2_p0_op1_g1_f32
// CHECK-NOT:     linalg.matmul
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x5x7x7xf32>, tensor<3x5x1x1xf32>) outs(%{{.*}} : tensor<2x3x4x4xf32>)
// GPU-LABEL: func.func @grad_input_transposed_2d_k1x1_s2_p0_op1_g1_f32
// GPU-NOT:     linalg.generic {{.*}}reduction
// GPU:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x5xf32>, tensor<5x3xf32>) outs(%{{.*}} : tensor<32x3xf32>)
// GPU-NOT:     linalg.generic {{.*}}reduction
// GPU:         return

func.func @grad_input_transposed_2d_k1x1_s2_p0_op1_g1_f32(%arg0: !torch.vtensor<[2,5,8,8],f32>, %arg1: !torch.vtensor<[2,3,4,4],f32>, %arg2: !torch.vtensor<[3,5,1,1],f32>) -> !torch.vtensor<[2,3,4,4],f32> {
  %false = torch.constant.bool false
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %none = torch.constant.none
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %true, %3, %int1, %4 : !torch.vtensor<[2,5,8,8],f32>, !torch.vtensor<[2,3,4,4],f32>, !torch.vtensor<[3,5,1,1],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,3,4,4],f32>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,3,4,4],f32>
}

// -----

// Only grad_bias asked for: one reduction, no contraction.
// CHECK-LABEL: func.func @grad_bias_1d_s1_p0_d1_g1_bf16
// CHECK-NOT:     arith.mulf
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "reduction", "reduction"]
// CHECK:           arith.extf {{.*}} : bf16 to f32
// CHECK:         arith.truncf {{.*}} : f32 to bf16
// CHECK-NOT:     arith.mulf
// CHECK:         return

func.func @grad_bias_1d_s1_p0_d1_g1_bf16(%arg0: !torch.vtensor<[2,4,6],bf16>, %arg1: !torch.vtensor<[2,3,8],bf16>, %arg2: !torch.vtensor<[4,3,3],bf16>) -> !torch.vtensor<[4],bf16> {
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int4 = torch.constant.int 4
  %0 = torch.prim.ListConstruct %int4 : (!torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %5 = torch.prim.ListConstruct %false, %false, %true : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %false, %4, %int1, %5 : !torch.vtensor<[2,4,6],bf16>, !torch.vtensor<[2,3,8],bf16>, !torch.vtensor<[4,3,3],bf16>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.none, !torch.vtensor<[4],bf16>
  return %result2 : !torch.vtensor<[4],bf16>
}

// -----

// A dynamic batch dim flows through tensor.dim into the group expansion.
// CHECK-LABEL: func.func @grad_weight_3d_s2_p1_d1_g1_dynbatch_f32
// CHECK:         %[[DIM:.*]] = tensor.dim %{{.*}}, %c0 : tensor<?x3x5x5x5xf32>
// CHECK:         output_shape [%[[DIM]], 1, 3, 5, 5, 5]
// CHECK:         tensor.collapse_shape {{.*}} into tensor<4x?xf32>
// CHECK:         tensor.collapse_shape {{.*}} into tensor<?x81xf32>
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x?xf32>, tensor<?x81xf32>) outs(%{{.*}} : tensor<4x81xf32>)

func.func @grad_weight_3d_s2_p1_d1_g1_dynbatch_f32(%arg0: !torch.vtensor<[?,4,2,2,2],f32>, %arg1: !torch.vtensor<[?,3,4,4,4],f32>, %arg2: !torch.vtensor<[4,3,3,3,3],f32>) -> !torch.vtensor<[4,3,3,3,3],f32> {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %none = torch.constant.none
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2, %int2 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1, %int1 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1, %int1 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0, %int0 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %false, %true, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[?,4,2,2,2],f32>, !torch.vtensor<[?,3,4,4,4],f32>, !torch.vtensor<[4,3,3,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[4,3,3,3,3],f32>, !torch.none
  return %result1 : !torch.vtensor<[4,3,3,3,3],f32>
}

// -----

// Not constant: groups is a function argument. The pattern declines and the
// op stays, so the lowering refuses it instead of handing it to another lowering.
// CHECK-LABEL: func.func @declined_groups_not_constant
// CHECK:         torch.aten.convolution_backward
func.func @declined_groups_not_constant(%arg0: !torch.vtensor<[2,4,6],f32>, %arg1: !torch.vtensor<[2,4,8],f32>, %arg2: !torch.vtensor<[4,2,3],f32>, %groups: !torch.int) -> !torch.vtensor<[2,4,8],f32> {
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %none = torch.constant.none
  %0 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %0, %false, %1, %groups, %2 : !torch.vtensor<[2,4,6],f32>, !torch.vtensor<[2,4,8],f32>, !torch.vtensor<[4,2,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,4,8],f32>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,4,8],f32>
}

// -----

// Stride 1, 128 grad_input channels, f32. On the CPU im2col + the named
// matmul; in f32 on GPU targets the direct form reading the flipped weight
// as it is, [f, c, kh, kw] with f the reduction (map (d4, d1, d5, d6)), not
// transposed to [c, f, kh, kw]: IREE's f32 code ran it 1.2x-3.6x faster.
// CHECK-LABEL: func.func @grad_input_2d_k3x3_s1_p1_d1_g1_c128_f32
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<72x288xf32>, tensor<288x128xf32>) outs(%{{.*}} : tensor<72x128xf32>)
// GPU-DAG:     #[[FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d1, d5, d6)>
// GPU-LABEL: func.func @grad_input_2d_k3x3_s1_p1_d1_g1_c128_f32
// GPU-NOT:     linalg.matmul
// GPU:         %[[FLIPPED:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<32x128x3x3xf32>)
// GPU:           tensor.extract %{{.*}} : tensor<32x128x3x3xf32>
// GPU-NOT:     tensor<128x32x3x3xf32>
// GPU:         linalg.generic {indexing_maps = [#{{.*}}, #[[FILTER]], #{{.*}}]
// GPU-SAME:      ins(%{{.*}}, %[[FLIPPED]] : tensor<2x32x8x8xf32>, tensor<32x128x3x3xf32>) outs(%{{.*}} : tensor<2x128x6x6xf32>)

func.func @grad_input_2d_k3x3_s1_p1_d1_g1_c128_f32(%arg0: !torch.vtensor<[2,32,6,6],f32>, %arg1: !torch.vtensor<[2,128,6,6],f32>, %arg2: !torch.vtensor<[32,128,3,3],f32>) -> !torch.vtensor<[2,128,6,6],f32> {
  %true = torch.constant.bool true
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %int0 = torch.constant.int 0
  %none = torch.constant.none
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %true, %false, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[2,32,6,6],f32>, !torch.vtensor<[2,128,6,6],f32>, !torch.vtensor<[32,128,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.vtensor<[2,128,6,6],f32>, !torch.none, !torch.none
  return %result0 : !torch.vtensor<[2,128,6,6],f32>
}

// -----

// grad_weight alone, with a reduction long enough to split: 2 images of
// 32x32 positions (2048 terms) for 4x3x3x3 weights. On GPU targets the
// im2col matmul is split into 4 partial sums of 512 terms each (split-K:
// otherwise a few thread blocks would run the whole sum), then summed; on
// the CPU the gather laid out columns-first (unstrided, and 2048 terms for
// 4 rows), [27, 2048], times grad_output channels-last, [2048, 4], in two
// partial sums of 1024 terms, summed, then transposed to [4, 27].
// CHECK-LABEL: func.func @grad_weight_2d_k3x3_s1_p1_d1_g1_f32
// CHECK-NOT:     linalg.matmul
// CHECK:         %[[PARTS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<27x2x1024xf32>, tensor<2x1024x4xf32>) outs(%{{.*}} : tensor<2x27x4xf32>)
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[PARTS]] : tensor<2x27x4xf32>) outs(%{{.*}} : tensor<27x4xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[SUM]] : tensor<27x4xf32>) outs(%{{.*}} : tensor<4x27xf32>)
// GPU-LABEL: func.func @grad_weight_2d_k3x3_s1_p1_d1_g1_f32
// GPU-NOT:     linalg.matmul
// GPU:         %[[PARTS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// GPU-SAME:      ins(%{{.*}}, %{{.*}} : tensor<4x4x512xf32>, tensor<4x512x27xf32>) outs(%{{.*}} : tensor<4x4x27xf32>)
// GPU:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// GPU-SAME:      ins(%[[PARTS]] : tensor<4x4x27xf32>) outs(%{{.*}} : tensor<4x27xf32>)
// GPU:         tensor.expand_shape {{.*}} output_shape [4, 3, 3, 3]

func.func @grad_weight_2d_k3x3_s1_p1_d1_g1_f32(%arg0: !torch.vtensor<[2,4,32,32],f32>, %arg1: !torch.vtensor<[2,3,32,32],f32>, %arg2: !torch.vtensor<[4,3,3,3],f32>) -> !torch.vtensor<[4,3,3,3],f32> {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %none = torch.constant.none
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %false, %true, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[2,4,32,32],f32>, !torch.vtensor<[2,3,32,32],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[4,3,3,3],f32>, !torch.none
  return %result1 : !torch.vtensor<[4,3,3,3],f32>
}

// -----

// A 1x1 kernel, unstrided and unpadded, with a deep reduction (2 images of
// 48x48 positions for 4 rows): on the CPU no gather; input is read as it
// is, image by image in chunks of 768 positions ([n, g, c, s, j]), against
// grad_output channels-last ([n, g, s, j, f]), and the partial sums over
// (n, s) are added up into [g, f, c].
// CHECK-LABEL: func.func @grad_weight_2d_k1x1_s1_p0_d1_g1_f32
// CHECK:         %[[X:.*]] = tensor.expand_shape %{{.*}} output_shape [2, 1, 8, 3, 768]
// CHECK:         %[[PARTS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME:      ins(%[[X]], %{{.*}} : tensor<2x1x8x3x768xf32>, tensor<2x1x3x768x4xf32>) outs(%{{.*}} : tensor<2x3x1x8x4xf32>)
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK-SAME:      ins(%[[PARTS]] : tensor<2x3x1x8x4xf32>) outs(%{{.*}} : tensor<1x4x8xf32>)
// GPU-LABEL: func.func @grad_weight_2d_k1x1_s1_p0_d1_g1_f32
// GPU-NOT:     tensor<2x1x8x3x768xf32>

func.func @grad_weight_2d_k1x1_s1_p0_d1_g1_f32(%arg0: !torch.vtensor<[2,4,48,48],f32>, %arg1: !torch.vtensor<[2,8,48,48],f32>, %arg2: !torch.vtensor<[4,8,1,1],f32>) -> !torch.vtensor<[4,8,1,1],f32> {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %none = torch.constant.none
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %false, %true, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %0, %1, %2, %false, %3, %int1, %4 : !torch.vtensor<[2,4,48,48],f32>, !torch.vtensor<[2,8,48,48],f32>, !torch.vtensor<[4,8,1,1],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[4,8,1,1],f32>, !torch.none
  return %result1 : !torch.vtensor<[4,8,1,1],f32>
}

// -----

// grad_bias alone. On the CPU one reduction over n, h, w; on GPU targets two:

// -----

// grad_bias alone. On the CPU one reduction over n, h, w; on GPU targets two:
// rows [n, f, run] over runs of 512 positions, then their sum (otherwise a
// few thread blocks run the whole sum).
// CHECK-LABEL: func.func @grad_bias_2d_k3x3_s1_p1_d1_g1_f32
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction", "reduction"]
// CHECK-SAME:      outs(%{{.*}} : tensor<4xf32>)
// GPU-LABEL: func.func @grad_bias_2d_k3x3_s1_p1_d1_g1_f32
// GPU:         tensor.expand_shape {{.*}} output_shape [2, 4, 2, 512] : tensor<2x4x1024xf32> into tensor<2x4x2x512xf32>
// GPU:         %[[ROWS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// GPU-SAME:      outs(%{{.*}} : tensor<2x4x2xf32>)
// GPU:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction"]
// GPU-SAME:      ins(%[[ROWS]] : tensor<2x4x2xf32>) outs(%{{.*}} : tensor<4xf32>)

func.func @grad_bias_2d_k3x3_s1_p1_d1_g1_f32(%arg0: !torch.vtensor<[2,4,32,32],f32>, %arg1: !torch.vtensor<[2,3,32,32],f32>, %arg2: !torch.vtensor<[4,3,3,3],f32>) -> !torch.vtensor<[4],f32> {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %int4 = torch.constant.int 4
  %0 = torch.prim.ListConstruct %int4 : (!torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %5 = torch.prim.ListConstruct %false, %false, %true : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %false, %4, %int1, %5 : !torch.vtensor<[2,4,32,32],f32>, !torch.vtensor<[2,3,32,32],f32>, !torch.vtensor<[4,3,3,3],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.none, !torch.vtensor<[4],f32>
  return %result2 : !torch.vtensor<[4],f32>
}

// -----

// grad_bias alone in f16 with a dynamic batch. On CUDA rows per image first;
// on gfx942 the sum over images first, then over positions (IREE 3.13's
// AMDGPU backend failed on the f16 sum over 25 positions per image with the
// batch dynamic: "Cannot select: f32 = Constant<-1>").
// GPU-LABEL: func.func @grad_bias_2d_k1x1_s1_p0_d1_g1_dynbatch_f16
// GPU:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// GPU-SAME:      outs(%{{.*}} : tensor<?x8x1xf32>)
// GFX942-LABEL: func.func @grad_bias_2d_k1x1_s1_p0_d1_g1_dynbatch_f16
// GFX942:       %[[COLS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// GFX942-SAME:    ins(%{{.*}} : tensor<?x8x5x5xf16>) outs(%{{.*}} : tensor<8x5x5xf32>)
// GFX942:       linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction"]
// GFX942-SAME:    ins(%[[COLS]] : tensor<8x5x5xf32>) outs(%{{.*}} : tensor<8xf32>)
// GFX942-NOT:   tensor<?x8x1xf32>

func.func @grad_bias_2d_k1x1_s1_p0_d1_g1_dynbatch_f16(%arg0: !torch.vtensor<[?,8,5,5],f16>, %arg1: !torch.vtensor<[?,8,5,5],f16>, %arg2: !torch.vtensor<[8,8,1,1],f16>) -> !torch.vtensor<[8],f16> {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %false = torch.constant.bool false
  %int1 = torch.constant.int 1
  %int8 = torch.constant.int 8
  %0 = torch.prim.ListConstruct %int8 : (!torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %5 = torch.prim.ListConstruct %false, %false, %true : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %0, %1, %2, %3, %false, %4, %int1, %5 : !torch.vtensor<[?,8,5,5],f16>, !torch.vtensor<[?,8,5,5],f16>, !torch.vtensor<[8,8,1,1],f16>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.none, !torch.vtensor<[8],f16>
  return %result2 : !torch.vtensor<[8],f16>
}

// -----

// An f16 1x1 weight gradient. On the CPU the im2col matmul; on GPU targets
// `weight_rows`: grad_output read in place as [n, f, p] per image and the
// input gathered channels-last as [n, p, c] (stride 2 in the gather's map),
// one contraction over the images and positions of each partial sum (here
// one, of 2 images), widened to f32.
// CHECK-LABEL: func.func @grad_weight_2d_k1x1_s2_p0_d1_g1_f16
// CHECK:         linalg.matmul
// GPU-LABEL: func.func @grad_weight_2d_k1x1_s2_p0_d1_g1_f16
// GPU-NOT:     linalg.matmul
// GPU-NOT:     linalg.transpose
// GPU:         linalg.generic {{.*}} ins(%{{.*}} : tensor<2x1x64x7x7xf16>) outs(%{{.*}} : tensor<1x2x4x4x64x1x1xf16>)
// GPU:         tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<2x64x4x4xf16> into tensor<2x64x16xf16>
// GPU:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
// GPU-SAME:      ins(%{{.*}}, %{{.*}} : tensor<1x2x64x16xf16>, tensor<1x2x16x64xf16>) outs(%{{.*}} : tensor<1x64x64xf32>)
// GPU:           arith.extf {{.*}} : f16 to f32
// GPU:         arith.truncf {{.*}} : f32 to f16
func.func @grad_weight_2d_k1x1_s2_p0_d1_g1_f16(%arg0: !torch.vtensor<[2,64,4,4],f16>, %arg1: !torch.vtensor<[2,64,8,8],f16>, %arg2: !torch.vtensor<[64,64,1,1],f16>) -> !torch.vtensor<[64,64,1,1],f16> {
  %false = torch.constant.bool false
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %none = torch.constant.none
  %1 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %5 = torch.prim.ListConstruct %false, %true, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %1, %2, %3, %false, %4, %int1, %5 : !torch.vtensor<[2,64,4,4],f16>, !torch.vtensor<[2,64,8,8],f16>, !torch.vtensor<[64,64,1,1],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[64,64,1,1],f16>, !torch.none
  return %result1 : !torch.vtensor<[64,64,1,1],f16>
}

// -----

// A first layer: 3 channels, 7x7. On the CPU the im2col window grows to
// 8x8, so that the matmul has 3 x 64 = 192 columns (IREE's CPU tiling ran
// 147 columns 1.3x slower); x is padded for the extra taps' reads and
// their columns are dropped from the result. GPU targets keep 7x7, and
// their gather reads x unpadded: zero where a read is padding, so no
// padded copy of x (IREE's GPU code copies a pad at about 200 GB/s).
// CHECK-LABEL: func.func @grad_weight_2d_k7x7_s2_p3_d1_g1_f32
// CHECK:         tensor.pad {{.*}} low[0, 0, 3, 3] high[0, 0, 3, 3]
// CHECK:         outs(%{{.*}} : tensor<1x1x8x8x3x8x8xf32>)
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x64xf32>, tensor<64x192xf32>) outs(%{{.*}} : tensor<4x192xf32>)
// CHECK:         %[[WINDOW:.*]] = tensor.expand_shape {{.*}} output_shape [4, 3, 8, 8]
// CHECK:         tensor.extract_slice %[[WINDOW]][0, 0, 0, 0] [4, 3, 7, 7] [1, 1, 1, 1]
// GPU-LABEL: func.func @grad_weight_2d_k7x7_s2_p3_d1_g1_f32
// GPU-NOT:     tensor.pad
// GPU:         linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x8x8x3x7x7xf32>)
// GPU:           arith.cmpi uge
// GPU:           arith.cmpi ult
// GPU:           tensor.extract %{{.*}} : tensor<1x1x3x16x16xf32>
// GPU:           arith.select
// GPU-NOT:     tensor.pad
// GPU-NOT:     tensor<4x192xf32>
// GPU:         output_shape [4, 3, 7, 7] : tensor<4x147xf32>
func.func @grad_weight_2d_k7x7_s2_p3_d1_g1_f32(%arg0: !torch.vtensor<[1,4,8,8],f32>, %arg1: !torch.vtensor<[1,3,16,16],f32>, %arg2: !torch.vtensor<[4,3,7,7],f32>) -> !torch.vtensor<[4,3,7,7],f32> {
  %false = torch.constant.bool false
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %none = torch.constant.none
  %1 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int3, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %5 = torch.prim.ListConstruct %false, %true, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %1, %2, %3, %false, %4, %int1, %5 : !torch.vtensor<[1,4,8,8],f32>, !torch.vtensor<[1,3,16,16],f32>, !torch.vtensor<[4,3,7,7],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[4,3,7,7],f32>, !torch.none
  return %result1 : !torch.vtensor<[4,3,7,7],f32>
}

// -----

// The same first layer, 4 output channels, over 36x36 positions: its named
// matmul's result (4 x 192) would be fewer than four of IREE's 64x64 CPU
// tiles for the threads, so on the CPU the gather is laid out
// columns-first with the 7x7 window, [3*7*7, 1296], and multiplied by
// grad_output channels-last, [1296, 4], in two partial sums of 648 terms;
// their sum is transposed to [4, 147].
// CHECK-LABEL: func.func @grad_weight_2d_k7x7_s2_p3_d1_g1_deep_f32
// CHECK:         tensor.pad {{.*}} low[0, 0, 3, 3] high[0, 0, 2, 2]
// CHECK:         outs(%{{.*}} : tensor<1x3x7x7x1x36x36xf32>)
// CHECK:         %[[PARTS:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<147x2x648xf32>, tensor<2x648x4xf32>) outs(%{{.*}} : tensor<2x147x4xf32>)
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[PARTS]] : tensor<2x147x4xf32>) outs(%{{.*}} : tensor<147x4xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[SUM]] : tensor<147x4xf32>) outs(%{{.*}} : tensor<4x147xf32>)
// CHECK:         output_shape [4, 3, 7, 7] : tensor<4x147xf32>

func.func @grad_weight_2d_k7x7_s2_p3_d1_g1_deep_f32(%arg0: !torch.vtensor<[1,4,36,36],f32>, %arg1: !torch.vtensor<[1,3,72,72],f32>, %arg2: !torch.vtensor<[4,3,7,7],f32>) -> !torch.vtensor<[4,3,7,7],f32> {
  %false = torch.constant.bool false
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %none = torch.constant.none
  %1 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int3, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %5 = torch.prim.ListConstruct %false, %true, %false : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
  %result0, %result1, %result2 = torch.aten.convolution_backward %arg0, %arg1, %arg2, %none, %1, %2, %3, %false, %4, %int1, %5 : !torch.vtensor<[1,4,36,36],f32>, !torch.vtensor<[1,3,72,72],f32>, !torch.vtensor<[4,3,7,7],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int, !torch.list<bool> -> !torch.none, !torch.vtensor<[4,3,7,7],f32>, !torch.none
  return %result1 : !torch.vtensor<[4,3,7,7],f32>
}
