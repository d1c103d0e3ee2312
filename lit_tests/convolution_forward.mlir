// RUN: iree-bwdconv opt --pattern convolution_forward --split-input-file %s 2>%t.notes | FileCheck %s
// RUN: iree-bwdconv opt --pattern convolution_forward --target cuda --split-input-file %s 2>/dev/null | FileCheck --check-prefix=GPU %s
// RUN: FileCheck --check-prefix=NOTE %s < %t.notes

// A grouped forward convolution on the CPU: the input padded once, then per
// group a channel slice of it and of the weight's rows; stride 2 makes each
// group an im2col gather [(n, o), (c, k)] and a named matmul with the
// weight as [(c, k), f], transposed back to [n, f, o]. The results are
// inserted side by side and the bias added. GPU targets keep torch-mlir's
// lowering.
// CHECK-LABEL: func.func @conv_2d_s2_p1_d1_g4_bias_f32
// CHECK:         %[[X:.*]] = tensor.pad
// CHECK:         } : tensor<2x8x9x10xf32> to tensor<2x8x11x12xf32>
// CHECK:         tensor.extract_slice %[[X]][0, 0, 0, 0] [2, 2, 11, 12] [1, 1, 1, 1]
// CHECK:         tensor.extract_slice %{{.*}}[0, 0, 0, 0] [3, 2, 3, 3] [1, 1, 1, 1] : tensor<12x2x3x3xf32> to tensor<3x2x3x3xf32>
// CHECK:         tensor.collapse_shape {{.*}} : tensor<50x2x3x3xf32> into tensor<50x18xf32>
// CHECK:         tensor.collapse_shape {{.*}} : tensor<2x3x3x3xf32> into tensor<18x3xf32>
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<50x18xf32>, tensor<18x3xf32>) outs(%{{.*}} : tensor<50x3xf32>)
// CHECK:         tensor.expand_shape {{.*}} output_shape [2, 3, 5, 5]
// CHECK:         tensor.extract_slice %[[X]][0, 6, 0, 0] [2, 2, 11, 12] [1, 1, 1, 1]
// CHECK:         tensor.extract_slice %{{.*}}[9, 0, 0, 0] [3, 2, 3, 3] [1, 1, 1, 1]
// CHECK:         tensor.insert_slice {{.*}}[0, 9, 0, 0] [2, 3, 5, 5] [1, 1, 1, 1] : tensor<2x3x5x5xf32> into tensor<2x12x5x5xf32>
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK-SAME:      tensor<2x12x5x5xf32>, tensor<12xf32>
// CHECK:           arith.addf
// CHECK:         torch_c.from_builtin_tensor {{.*}} : tensor<2x12x5x5xf32>
// GPU-LABEL: func.func @conv_2d_s2_p1_d1_g4_bias_f32
// GPU:         torch.aten.convolution
// GPU-NOT:     linalg.generic

func.func @conv_2d_s2_p1_d1_g4_bias_f32(%arg0: !torch.vtensor<[2,8,9,10],f32>, %arg1: !torch.vtensor<[12,2,3,3],f32>, %arg2: !torch.vtensor<[12],f32>) -> !torch.vtensor<[2,12,5,5],f32> {
  %false = torch.constant.bool false
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int4 = torch.constant.int 4
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.aten.convolution %arg0, %arg1, %arg2, %0, %1, %2, %false, %3, %int4 : !torch.vtensor<[2,8,9,10],f32>, !torch.vtensor<[12,2,3,3],f32>, !torch.vtensor<[12],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,12,5,5],f32>
  return %4 : !torch.vtensor<[2,12,5,5],f32>
}

// -----

// Stride 1 and 2 channels per group: each group a convolution generic
// (conv_1d_ncw_fcw's maps). Dilation 2, no bias, bf16: products in f32,
// rounded to bf16 once at the end, after the groups are put together.
// CHECK-LABEL: func.func @conv_1d_s1_p2_d2_g2_bf16
// CHECK:         linalg.generic {{.*}}reduction
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<3x2x11xbf16>, tensor<4x2x3xbf16>) outs(%{{.*}} : tensor<3x4x7xf32>)
// CHECK:           arith.extf {{.*}} : bf16 to f32
// CHECK:         linalg.generic {{.*}}reduction
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<3x2x11xbf16>, tensor<4x2x3xbf16>) outs(%{{.*}} : tensor<3x4x7xf32>)
// CHECK:         tensor.insert_slice {{.*}}[0, 4, 0] [3, 4, 7] [1, 1, 1] : tensor<3x4x7xf32> into tensor<3x8x7xf32>
// CHECK:         arith.truncf {{.*}} : f32 to bf16
// CHECK:         torch_c.from_builtin_tensor {{.*}} : tensor<3x8x7xbf16>

func.func @conv_1d_s1_p2_d2_g2_bf16(%arg0: !torch.vtensor<[3,4,7],bf16>, %arg1: !torch.vtensor<[8,2,3],bf16>) -> !torch.vtensor<[3,8,7],bf16> {
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0 : (!torch.int) -> !torch.list<int>
  %4 = torch.aten.convolution %arg0, %arg1, %none, %0, %1, %2, %false, %3, %int2 : !torch.vtensor<[3,4,7],bf16>, !torch.vtensor<[8,2,3],bf16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[3,8,7],bf16>
  return %4 : !torch.vtensor<[3,8,7],bf16>
}

// -----

// Depthwise (one input channel per group) keeps torch-mlir's lowering, which
// IREE recognizes as a depthwise convolution.
// CHECK-LABEL: func.func @declined_depthwise_2d_s1_p1_d1_g8_f32
// CHECK:         torch.aten.convolution
// CHECK-NOT:     linalg.generic
// NOTE: convolution_forward did not match torch.aten.convolution at {{.*}}: groups=8 with 8 input channels: depthwise, which IREE recognizes; split only with at least 2 channels per group

func.func @declined_depthwise_2d_s1_p1_d1_g8_f32(%arg0: !torch.vtensor<[2,8,9,10],f32>, %arg1: !torch.vtensor<[8,1,3,3],f32>) -> !torch.vtensor<[2,8,9,10],f32> {
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int8 = torch.constant.int 8
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.aten.convolution %arg0, %arg1, %none, %0, %0, %0, %false, %1, %int8 : !torch.vtensor<[2,8,9,10],f32>, !torch.vtensor<[8,1,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,8,9,10],f32>
  return %2 : !torch.vtensor<[2,8,9,10],f32>
}

// -----

// A transposed convolution keeps torch-mlir's lowering.
// CHECK-LABEL: func.func @declined_transposed_2d_s2_p1_d1_g2_f32
// CHECK:         torch.aten.convolution
// NOTE: convolution_forward did not match torch.aten.convolution at {{.*}}: transposed=True: torch-mlir's lowering keeps it

func.func @declined_transposed_2d_s2_p1_d1_g2_f32(%arg0: !torch.vtensor<[2,4,5,5],f32>, %arg1: !torch.vtensor<[4,2,3,3],f32>) -> !torch.vtensor<[2,4,9,9],f32> {
  %true = torch.constant.bool true
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.aten.convolution %arg0, %arg1, %none, %0, %1, %1, %true, %2, %int2 : !torch.vtensor<[2,4,5,5],f32>, !torch.vtensor<[4,2,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,4,9,9],f32>
  return %3 : !torch.vtensor<[2,4,9,9],f32>
}

// -----

// Ungrouped and strided (a stem): one im2col gather and a named matmul,
// with no slicing and no inserts; bf16 in, f32 products, bf16 out.
// CHECK-LABEL: func.func @conv_2d_k7_s2_p3_d1_g1_bf16
// CHECK-NOT:     tensor.extract_slice
// CHECK:         tensor.collapse_shape {{.*}} into tensor<200x147xbf16>
// CHECK:         tensor.collapse_shape {{.*}} : tensor<3x7x7x16xbf16> into tensor<147x16xbf16>
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<200x147xbf16>, tensor<147x16xbf16>) outs(%{{.*}} : tensor<200x16xf32>)
// CHECK-NOT:     tensor.insert_slice
// CHECK:         arith.truncf {{.*}} : f32 to bf16
// CHECK:         torch_c.from_builtin_tensor {{.*}} : tensor<2x16x10x10xbf16>

func.func @conv_2d_k7_s2_p3_d1_g1_bf16(%arg0: !torch.vtensor<[2,3,19,20],bf16>, %arg1: !torch.vtensor<[16,3,7,7],bf16>) -> !torch.vtensor<[2,16,10,10],bf16> {
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int3, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.aten.convolution %arg0, %arg1, %none, %0, %1, %2, %false, %3, %int1 : !torch.vtensor<[2,3,19,20],bf16>, !torch.vtensor<[16,3,7,7],bf16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,16,10,10],bf16>
  return %4 : !torch.vtensor<[2,16,10,10],bf16>
}

// -----

// Ungrouped, stride 1, 3x3 over 16 channels: torch-mlir's named convolution
// is already the form the CPU runs best there.
// CHECK-LABEL: func.func @declined_2d_k3_s1_p1_d1_g1_c16_f32
// CHECK:         torch.aten.convolution
// NOTE: convolution_forward did not match torch.aten.convolution at {{.*}}: 16 input channels, stride 1, kernel [3, 3]: torch-mlir's named convolution is this form already

func.func @declined_2d_k3_s1_p1_d1_g1_c16_f32(%arg0: !torch.vtensor<[2,16,8,8],f32>, %arg1: !torch.vtensor<[32,16,3,3],f32>) -> !torch.vtensor<[2,32,8,8],f32> {
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.aten.convolution %arg0, %arg1, %none, %0, %0, %0, %false, %1, %int1 : !torch.vtensor<[2,16,8,8],f32>, !torch.vtensor<[32,16,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,32,8,8],f32>
  return %2 : !torch.vtensor<[2,32,8,8],f32>
}

// -----

// An f16 1x1 kernel on GPU targets: IREE 3.13's CUDA code computes
// torch-mlir's named 1x1 convolution wrongly in f16, so this pattern lowers
// it as on the CPU: a transpose and the named matmul [n*o, c] x [c, f],
// accumulated in f32 and rounded once.
// GPU-LABEL: func.func @conv_2d_k1x1_s1_p0_d1_g1_f16
// GPU-NOT:     torch.aten.convolution
// GPU:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<50x8xf16>, tensor<8x12xf16>) outs(%{{.*}} : tensor<50x12xf32>)
// GPU:         arith.truncf {{.*}} : f32 to f16
// GPU:         torch_c.from_builtin_tensor {{.*}} : tensor<2x12x5x5xf16>

func.func @conv_2d_k1x1_s1_p0_d1_g1_f16(%arg0: !torch.vtensor<[2,8,5,5],f16>, %arg1: !torch.vtensor<[12,8,1,1],f16>) -> !torch.vtensor<[2,12,5,5],f16> {
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.aten.convolution %arg0, %arg1, %none, %0, %1, %2, %false, %3, %int1 : !torch.vtensor<[2,8,5,5],f16>, !torch.vtensor<[12,8,1,1],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,12,5,5],f16>
  return %4 : !torch.vtensor<[2,12,5,5],f16>
}

// -----

// An f32 1x1 kernel at stride 2 on GPU targets: every second pixel gathered
// into rows and the named matmul [n*o, c] x [c, f] (IREE 3.13's f32 code ran
// the strided convolution 1.7x-6.3x slower); at stride 1 torch-mlir's
// named convolution stays.
// GPU-LABEL: func.func @conv_2d_k1x1_s2_p0_d1_g1_f32
// GPU-NOT:     torch.aten.convolution
// GPU:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<50x8xf32>, tensor<8x12xf32>) outs(%{{.*}} : tensor<50x12xf32>)
// GPU:         torch_c.from_builtin_tensor {{.*}} : tensor<2x12x5x5xf32>

func.func @conv_2d_k1x1_s2_p0_d1_g1_f32(%arg0: !torch.vtensor<[2,8,9,9],f32>, %arg1: !torch.vtensor<[12,8,1,1],f32>) -> !torch.vtensor<[2,12,5,5],f32> {
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.aten.convolution %arg0, %arg1, %none, %0, %1, %2, %false, %3, %int1 : !torch.vtensor<[2,8,9,9],f32>, !torch.vtensor<[12,8,1,1],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,12,5,5],f32>
  return %4 : !torch.vtensor<[2,12,5,5],f32>
}

// -----

// A grouped f16 1x1 kernel on GPU targets: one grouped convolution, its loops
// with the positions before the output channels (the order in which IREE
// 3.13's MMA code is right once it folds the 1x1 window; tests/test_mma_order.py),
// in f16, as a group has 16 and 32 channels (multiples of the MMA tile).
// GPU-LABEL: func.func @conv_2d_k1x1_s1_p0_d1_g2_f16
// GPU-NOT:     torch.aten.convolution
// GPU:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x2x16x5x5xf16>, tensor<2x32x16x1x1xf16>) outs(%{{.*}} : tensor<2x2x32x5x5xf32>)
// GPU:         torch_c.from_builtin_tensor {{.*}} : tensor<2x64x5x5xf16>

func.func @conv_2d_k1x1_s1_p0_d1_g2_f16(%arg0: !torch.vtensor<[2,32,5,5],f16>, %arg1: !torch.vtensor<[64,16,1,1],f16>) -> !torch.vtensor<[2,64,5,5],f16> {
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.aten.convolution %arg0, %arg1, %none, %0, %1, %0, %false, %1, %int2 : !torch.vtensor<[2,32,5,5],f16>, !torch.vtensor<[64,16,1,1],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,64,5,5],f16>
  return %2 : !torch.vtensor<[2,64,5,5],f16>
}

// -----

// With 8 channels a group IREE's f16 code did not finish: widened to f32.
// GPU-LABEL: func.func @conv_2d_k1x1_s1_p0_d1_g4_f16
// GPU:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x4x8x5x5xf32>, tensor<4x8x8x1x1xf32>) outs(%{{.*}} : tensor<2x4x8x5x5xf32>)

func.func @conv_2d_k1x1_s1_p0_d1_g4_f16(%arg0: !torch.vtensor<[2,32,5,5],f16>, %arg1: !torch.vtensor<[32,8,1,1],f16>) -> !torch.vtensor<[2,32,5,5],f16> {
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int4 = torch.constant.int 4
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.aten.convolution %arg0, %arg1, %none, %0, %1, %0, %false, %1, %int4 : !torch.vtensor<[2,32,5,5],f16>, !torch.vtensor<[32,8,1,1],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,32,5,5],f16>
  return %2 : !torch.vtensor<[2,32,5,5],f16>
}

// -----

// GPU-LABEL: func.func @declined_gpu_2d_k1x1_s1_p0_d1_g1_f32
// GPU:         torch.aten.convolution
// GPU-NOT:     linalg.matmul

func.func @declined_gpu_2d_k1x1_s1_p0_d1_g1_f32(%arg0: !torch.vtensor<[2,8,5,5],f32>, %arg1: !torch.vtensor<[12,8,1,1],f32>) -> !torch.vtensor<[2,12,5,5],f32> {
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.aten.convolution %arg0, %arg1, %none, %0, %1, %0, %false, %1, %int1 : !torch.vtensor<[2,8,5,5],f32>, !torch.vtensor<[12,8,1,1],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,12,5,5],f32>
  return %2 : !torch.vtensor<[2,12,5,5],f32>
}

// -----

// A depthwise convolution over 3 spatial dims, which torch-mlir cannot
// lower: one grouped convolution generic (conv_3d's maps with a group dim)
// on every target, accumulated in f32.
// CHECK-LABEL: func.func @conv_3d_s1_p1_d1_g4_depthwise_f32
// CHECK:         tensor.pad
// CHECK:         tensor.expand_shape {{.*}} : tensor<2x4x7x6x8xf32> into tensor<2x4x1x7x6x8xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]
// CHECK:         tensor.collapse_shape {{.*}} : tensor<2x4x1x5x4x6xf32> into tensor<2x4x5x4x6xf32>
// CHECK-NOT:     torch.aten.convolution
// GPU-LABEL: func.func @conv_3d_s1_p1_d1_g4_depthwise_f32
// GPU:         linalg.generic
// GPU-NOT:     torch.aten.convolution

func.func @conv_3d_s1_p1_d1_g4_depthwise_f32(%arg0: !torch.vtensor<[2,4,5,4,6],f32>, %arg1: !torch.vtensor<[4,1,3,3,3],f32>) -> !torch.vtensor<[2,4,5,4,6],f32> {
  %false = torch.constant.bool false
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int4 = torch.constant.int 4
  %0 = torch.prim.ListConstruct %int1, %int1, %int1 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int0, %int0, %int0 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.aten.convolution %arg0, %arg1, %none, %0, %0, %0, %false, %1, %int4 : !torch.vtensor<[2,4,5,4,6],f32>, !torch.vtensor<[4,1,3,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,4,5,4,6],f32>
  return %2 : !torch.vtensor<[2,4,5,4,6],f32>
}
