// RUN: iree-bwdconv opt --pattern convolution_transposed --split-input-file %s 2>%t.notes | FileCheck %s
// RUN: iree-bwdconv opt --pattern convolution_transposed --target cuda --split-input-file %s 2>/dev/null | FileCheck --check-prefix=GPU %s
// RUN: FileCheck --check-prefix=NOTE %s < %t.notes

// NOTE: convolution_transposed did not match torch.aten.convolution at {{.*}}: stride 1 in every dim: no inserted zeros to avoid; torch-mlir's lowering keeps it (transposed_forward_torch_mlir)

// A strided transposed convolution, forward: the grad_input of the
// convolution it transposes (from [2,4,10,12] to x's [2,8,5,6], the weight
// as it is), in the form its plan picks. On the CPU, ungrouped and larger
// than 1x1: col2im, one matmul of x with every tap ([(f, k), c] by
// [c, (n, positions)]) and the phases' sums of taps; x is never inserted
// into zeros. The bias is added in f32 to the result.
// CHECK-LABEL: func.func @conv_transpose_2d_k4_s2_p1_g1_bias_f32
// CHECK-NOT:     tensor.insert_slice
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x8xf32>, tensor<8x128xf32>)
// CHECK:         arith.addf
// CHECK:         torch_c.from_builtin_tensor {{.*}} : tensor<2x4x10x12xf32>
// CHECK-NOT:     torch.aten.convolution
// GPU-LABEL: func.func @conv_transpose_2d_k4_s2_p1_g1_bias_f32
// GPU-NOT:     torch.aten.convolution
// GPU:         torch_c.from_builtin_tensor {{.*}} : tensor<2x4x10x12xf32>

func.func @conv_transpose_2d_k4_s2_p1_g1_bias_f32(%arg0: !torch.vtensor<[2,8,5,6],f32>, %arg1: !torch.vtensor<[8,4,4,4],f32>, %arg2: !torch.vtensor<[4],f32>) -> !torch.vtensor<[2,4,10,12],f32> {
  %true = torch.constant.bool true
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.aten.convolution %arg0, %arg1, %arg2, %0, %1, %2, %true, %3, %int1 : !torch.vtensor<[2,8,5,6],f32>, !torch.vtensor<[8,4,4,4],f32>, !torch.vtensor<[4],f32>, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,4,10,12],f32>
  return %4 : !torch.vtensor<[2,4,10,12],f32>
}

// -----

// Grouped, 1-D, with output_padding, in f16. On the CPU grouped kernels
// keep the direct form, group by group (the plan's cpu_grouped_direct): x's
// channels of a group inserted with stride 2 into zeros, one f32
// contraction, rounded to f16. On CUDA per-phase: each phase's contraction
// reads x as it is (its one-tap phase widened to f32 off the MMA tile),
// and no insert of x into zeros.
// CHECK-LABEL: func.func @conv_transpose_1d_k3_s2_p1_op1_g2_f16
// CHECK:         tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 1] [2, 2, 7] [1, 1, 2] : tensor<2x2x7xf16> into tensor<2x2x16xf16>
// CHECK:         arith.extf
// CHECK:         arith.truncf
// CHECK:         torch_c.from_builtin_tensor {{.*}} : tensor<2x6x14xf16>
// GPU-LABEL: func.func @conv_transpose_1d_k3_s2_p1_op1_g2_f16
// GPU-NOT:     [1, 1, 2] : tensor<2x2x7xf16>
// GPU:         "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x2x2x8xf16>, tensor<2x3x2x2xf16>)
// GPU:         "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x2x2x7xf32>, tensor<2x3x2x1xf32>)
// GPU:         torch_c.from_builtin_tensor {{.*}} : tensor<2x6x14xf16>

func.func @conv_transpose_1d_k3_s2_p1_op1_g2_f16(%arg0: !torch.vtensor<[2,4,7],f16>, %arg1: !torch.vtensor<[4,3,3],f16>) -> !torch.vtensor<[2,6,14],f16> {
  %true = torch.constant.bool true
  %none = torch.constant.none
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %0 = torch.prim.ListConstruct %int2 : (!torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %4 = torch.aten.convolution %arg0, %arg1, %none, %0, %1, %2, %true, %3, %int2 : !torch.vtensor<[2,4,7],f16>, !torch.vtensor<[4,3,3],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,6,14],f16>
  return %4 : !torch.vtensor<[2,6,14],f16>
}

// -----

// Stride 1: no zeros to avoid; torch-mlir keeps it (the NOTE above).
// CHECK-LABEL: func.func @conv_transpose_2d_k3_s1_p1_g1_f32
// CHECK:         torch.aten.convolution
// GPU-LABEL: func.func @conv_transpose_2d_k3_s1_p1_g1_f32
// GPU:         torch.aten.convolution

func.func @conv_transpose_2d_k3_s1_p1_g1_f32(%arg0: !torch.vtensor<[2,4,5,5],f32>, %arg1: !torch.vtensor<[4,4,3,3],f32>) -> !torch.vtensor<[2,4,5,5],f32> {
  %true = torch.constant.bool true
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %0 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %1 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %2 = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = torch.aten.convolution %arg0, %arg1, %none, %0, %1, %2, %true, %3, %int1 : !torch.vtensor<[2,4,5,5],f32>, !torch.vtensor<[4,4,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,4,5,5],f32>
  return %4 : !torch.vtensor<[2,4,5,5],f32>
}
