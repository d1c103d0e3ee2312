// RUN: iree-bwdconv-compile %s --compile-from=input --compile-to=input --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-bwdconv-explain 2>%t.notes | FileCheck %s
// RUN: FileCheck --check-prefix=NOTE %s < %t.notes

// linalg after IREE's input phase, as torch-mlir's TorchToLinalg and
// IREE's StableHLO conversion leave a strided transposed convolution: the
// data inserted s apart into zeros, convolved at stride 1. Each is replaced
// by its grad_input in the plan's form (on the CPU: col2im, one matmul and
// the phases' sums), inlined; no zero is multiplied.

// CHECK-LABEL: func.func @transposed_2d_nchw_k4_s2_p1_f32
// CHECK-NOT:     tensor.insert_slice %arg0
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         linalg.matmul
// CHECK:         return {{.*}} : tensor<2x4x10x12xf32>
// NOTE: rewrote linalg.conv_2d_nchw_fchw at {{.*}}: the zero-insertion form of a transposed convolution
// NOTE-NEXT:   transposed: the grad_input of 2-D n2 c4 f8 10x12 k4x4 s2x2 p1x1 d1x1 g1 f32, gradients 100
func.func @transposed_2d_nchw_k4_s2_p1_f32(%arg0: tensor<2x8x5x6xf32>, %arg1: tensor<4x8x4x4xf32>) -> tensor<2x4x10x12xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %3 = tensor.empty() : tensor<2x8x13x15xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<2x8x13x15xf32>) -> tensor<2x8x13x15xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %4[0, 0, 2, 2] [2, 8, 5, 6] [1, 1, 2, 2] : tensor<2x8x5x6xf32> into tensor<2x8x13x15xf32>
  %5 = tensor.empty() : tensor<2x4x10x12xf32>
  %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<2x4x10x12xf32>) -> tensor<2x4x10x12xf32>
  %7 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%inserted_slice, %arg1 : tensor<2x8x13x15xf32>, tensor<4x8x4x4xf32>) outs(%6 : tensor<2x4x10x12xf32>) -> tensor<2x4x10x12xf32>
  return %7 : tensor<2x4x10x12xf32>
}

// -----

// The bias as the convolution's init: added, in f32, to the result.
// CHECK-LABEL: func.func @transposed_2d_nchw_k4_s2_p1_bias_f32
// CHECK:         linalg.broadcast ins(%arg2
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         linalg.matmul
// CHECK:         arith.addf
// NOTE: rewrote linalg.conv_2d_nchw_fchw
func.func @transposed_2d_nchw_k4_s2_p1_bias_f32(%arg0: tensor<2x8x5x6xf32>, %arg1: tensor<4x8x4x4xf32>, %arg2: tensor<4xf32>) -> tensor<2x4x10x12xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %3 = tensor.empty() : tensor<2x8x13x15xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<2x8x13x15xf32>) -> tensor<2x8x13x15xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %4[0, 0, 2, 2] [2, 8, 5, 6] [1, 1, 2, 2] : tensor<2x8x5x6xf32> into tensor<2x8x13x15xf32>
  %5 = tensor.empty() : tensor<2x4x10x12xf32>
  %broadcasted = linalg.broadcast ins(%arg2 : tensor<4xf32>) outs(%5 : tensor<2x4x10x12xf32>) dimensions = [0, 2, 3]
  %6 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%inserted_slice, %arg1 : tensor<2x8x13x15xf32>, tensor<4x8x4x4xf32>) outs(%broadcasted : tensor<2x4x10x12xf32>) -> tensor<2x4x10x12xf32>
  return %6 : tensor<2x4x10x12xf32>
}

// -----

// Groups split from the channels after the insertion, as torch-mlir does.
// CHECK-LABEL: func.func @transposed_2d_ngchw_k4_s2_p1_g2_f32
// CHECK-NOT:     linalg.conv_2d_ngchw_gfchw
// CHECK:         return {{.*}} : tensor<2x4x10x12xf32>
// NOTE: rewrote linalg.conv_2d_ngchw_gfchw
// NOTE-NEXT:   transposed: the grad_input of 2-D n2 c4 f8 10x12 k4x4 s2x2 p1x1 d1x1 g2 f32, gradients 100
func.func @transposed_2d_ngchw_k4_s2_p1_g2_f32(%arg0: tensor<2x8x5x6xf32>, %arg1: tensor<2x2x4x4x4xf32>) -> tensor<2x4x10x12xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %3 = tensor.empty() : tensor<2x8x13x15xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<2x8x13x15xf32>) -> tensor<2x8x13x15xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %4[0, 0, 2, 2] [2, 8, 5, 6] [1, 1, 2, 2] : tensor<2x8x5x6xf32> into tensor<2x8x13x15xf32>
  %5 = tensor.empty() : tensor<2x4x10x12xf32>
  %expanded_0 = tensor.expand_shape %inserted_slice [[0], [1, 2], [3], [4]] output_shape [2, 2, 4, 13, 15] : tensor<2x8x13x15xf32> into tensor<2x2x4x13x15xf32>
  %expanded_1 = tensor.expand_shape %5 [[0], [1, 2], [3], [4]] output_shape [2, 2, 2, 10, 12] : tensor<2x4x10x12xf32> into tensor<2x2x2x10x12xf32>
  %6 = linalg.fill ins(%cst : f32) outs(%expanded_1 : tensor<2x2x2x10x12xf32>) -> tensor<2x2x2x10x12xf32>
  %7 = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%expanded_0, %arg1 : tensor<2x2x4x13x15xf32>, tensor<2x2x4x4x4xf32>) outs(%6 : tensor<2x2x2x10x12xf32>) -> tensor<2x2x2x10x12xf32>
  %collapsed = tensor.collapse_shape %7 [[0], [1, 2], [3], [4]] : tensor<2x2x2x10x12xf32> into tensor<2x4x10x12xf32>
  return %collapsed : tensor<2x4x10x12xf32>
}

// -----

// A dynamic batch: the buffer's is the data's (one size value).
// CHECK-LABEL: func.func @transposed_2d_nchw_k4_s2_p1_dynamic_batch_f32
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         return {{.*}} : tensor<?x4x10x12xf32>
// NOTE: rewrote linalg.conv_2d_nchw_fchw
// NOTE-NEXT:   transposed: the grad_input of 2-D n? c4 f8 10x12 k4x4 s2x2 p1x1 d1x1 g1 f32, gradients 100
func.func @transposed_2d_nchw_k4_s2_p1_dynamic_batch_f32(%arg0: tensor<?x8x5x6xf32>, %arg1: tensor<4x8x4x4xf32>) -> tensor<?x4x10x12xf32> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %dim = tensor.dim %arg0, %c0 : tensor<?x8x5x6xf32>
  %3 = tensor.empty(%dim) : tensor<?x8x13x15xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<?x8x13x15xf32>) -> tensor<?x8x13x15xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %4[0, 0, 2, 2] [%dim, 8, 5, 6] [1, 1, 2, 2] : tensor<?x8x5x6xf32> into tensor<?x8x13x15xf32>
  %5 = tensor.empty(%dim) : tensor<?x4x10x12xf32>
  %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<?x4x10x12xf32>) -> tensor<?x4x10x12xf32>
  %7 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%inserted_slice, %arg1 : tensor<?x8x13x15xf32>, tensor<4x8x4x4xf32>) outs(%6 : tensor<?x4x10x12xf32>) -> tensor<?x4x10x12xf32>
  return %7 : tensor<?x4x10x12xf32>
}

// -----

// Channels last, as StableHLO's conversion leaves it (k3 s2 p1 op1: the
// buffer ends op1 = 1 row later than the insertion's reach).
// CHECK-LABEL: func.func @transposed_2d_nhwc_hwcf_k3_s2_p1_op1_f32
// CHECK-NOT:     linalg.conv_2d_nhwc_hwcf
// CHECK:         return {{.*}} : tensor<2x10x12x4xf32>
// NOTE: rewrote linalg.conv_2d_nhwc_hwcf
// NOTE-NEXT:   transposed: the grad_input of 2-D n2 c4 f8 10x12 k3x3 s2x2 p1x1 d1x1 g1 f32, gradients 100
func.func @transposed_2d_nhwc_hwcf_k3_s2_p1_op1_f32(%arg0: tensor<2x5x6x8xf32>, %arg1: tensor<3x3x8x4xf32>) -> tensor<2x10x12x4xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %zeros = arith.constant dense<0.000000e+00> : tensor<2x12x14x8xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %zeros[0, 1, 1, 0] [2, 5, 6, 8] [1, 2, 2, 1] : tensor<2x5x6x8xf32> into tensor<2x12x14x8xf32>
  %5 = tensor.empty() : tensor<2x10x12x4xf32>
  %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<2x10x12x4xf32>) -> tensor<2x10x12x4xf32>
  %7 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%inserted_slice, %arg1 : tensor<2x12x14x8xf32>, tensor<3x3x8x4xf32>) outs(%6 : tensor<2x10x12x4xf32>) -> tensor<2x10x12x4xf32>
  return %7 : tensor<2x10x12x4xf32>
}

// -----

// Not ours: an insertion at stride 1 is a padding, no zeros between.
// CHECK-LABEL: func.func @padded_2d_nchw_k3_s1_p1_f32
// CHECK:         tensor.insert_slice %arg0
// CHECK:         linalg.conv_2d_nchw_fchw
// NOTE: kept linalg.conv_2d_nchw_fchw at {{.*}}: it inserts at stride 1: no zeros between the data
func.func @padded_2d_nchw_k3_s1_p1_f32(%arg0: tensor<2x8x5x6xf32>, %arg1: tensor<4x8x3x3xf32>) -> tensor<2x4x5x6xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %3 = tensor.empty() : tensor<2x8x7x8xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<2x8x7x8xf32>) -> tensor<2x8x7x8xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %4[0, 0, 1, 1] [2, 8, 5, 6] [1, 1, 1, 1] : tensor<2x8x5x6xf32> into tensor<2x8x7x8xf32>
  %5 = tensor.empty() : tensor<2x4x5x6xf32>
  %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<2x4x5x6xf32>) -> tensor<2x4x5x6xf32>
  %7 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%inserted_slice, %arg1 : tensor<2x8x7x8xf32>, tensor<4x8x3x3xf32>) outs(%6 : tensor<2x4x5x6xf32>) -> tensor<2x4x5x6xf32>
  return %7 : tensor<2x4x5x6xf32>
}

// -----

// Not ours: the buffer holds ones, not zeros.
// CHECK-LABEL: func.func @ones_filled_2d_nchw_k4_s2_p1_f32
// CHECK:         linalg.conv_2d_nchw_fchw
// NOTE: kept linalg.conv_2d_nchw_fchw at {{.*}}: it inserts into a tensor that is not zeros
func.func @ones_filled_2d_nchw_k4_s2_p1_f32(%arg0: tensor<2x8x5x6xf32>, %arg1: tensor<4x8x4x4xf32>) -> tensor<2x4x10x12xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %3 = tensor.empty() : tensor<2x8x13x15xf32>
  %4 = linalg.fill ins(%one : f32) outs(%3 : tensor<2x8x13x15xf32>) -> tensor<2x8x13x15xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %4[0, 0, 2, 2] [2, 8, 5, 6] [1, 1, 2, 2] : tensor<2x8x5x6xf32> into tensor<2x8x13x15xf32>
  %5 = tensor.empty() : tensor<2x4x10x12xf32>
  %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<2x4x10x12xf32>) -> tensor<2x4x10x12xf32>
  %7 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%inserted_slice, %arg1 : tensor<2x8x13x15xf32>, tensor<4x8x4x4xf32>) outs(%6 : tensor<2x4x10x12xf32>) -> tensor<2x4x10x12xf32>
  return %7 : tensor<2x4x10x12xf32>
}

// -----

// Not ours: a padded input, not an insertion.
// CHECK-LABEL: func.func @pad_not_insertion_2d_nchw_k3_f32
// CHECK:         linalg.conv_2d_nchw_fchw
// NOTE: kept linalg.conv_2d_nchw_fchw at {{.*}}: its input is not a tensor.insert_slice
func.func @pad_not_insertion_2d_nchw_k3_f32(%arg0: tensor<2x8x5x6xf32>, %arg1: tensor<4x8x3x3xf32>) -> tensor<2x4x5x6xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<2x8x5x6xf32> to tensor<2x8x7x8xf32>
  %5 = tensor.empty() : tensor<2x4x5x6xf32>
  %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<2x4x5x6xf32>) -> tensor<2x4x5x6xf32>
  %7 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %arg1 : tensor<2x8x7x8xf32>, tensor<4x8x3x3xf32>) outs(%6 : tensor<2x4x5x6xf32>) -> tensor<2x4x5x6xf32>
  return %7 : tensor<2x4x5x6xf32>
}

// -----

// Not ours: the data sits 3 rows in, past a 3-tap kernel's reach, so no
// padding of a transposed convolution puts it there.
// CHECK-LABEL: func.func @offset_past_kernel_2d_nchw_k3_s2_f32
// CHECK:         linalg.conv_2d_nchw_fchw
// NOTE: kept linalg.conv_2d_nchw_fchw at {{.*}}: along h, offset 3 in 15 rows is not the zero insertion of a transposed convolution with kernel 3, stride 2, dilation 1
func.func @offset_past_kernel_2d_nchw_k3_s2_f32(%arg0: tensor<2x8x5x6xf32>, %arg1: tensor<4x8x3x3xf32>) -> tensor<2x4x13x15xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %3 = tensor.empty() : tensor<2x8x15x17xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<2x8x15x17xf32>) -> tensor<2x8x15x17xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %4[0, 0, 3, 3] [2, 8, 5, 6] [1, 1, 2, 2] : tensor<2x8x5x6xf32> into tensor<2x8x15x17xf32>
  %5 = tensor.empty() : tensor<2x4x13x15xf32>
  %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<2x4x13x15xf32>) -> tensor<2x4x13x15xf32>
  %7 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%inserted_slice, %arg1 : tensor<2x8x15x17xf32>, tensor<4x8x3x3xf32>) outs(%6 : tensor<2x4x13x15xf32>) -> tensor<2x4x13x15xf32>
  return %7 : tensor<2x4x13x15xf32>
}

// -----

// IREE's StableHLO conversion writes a grouped convolution that is neither
// ungrouped nor depthwise as a linalg.generic: the loops are read from its
// maps, the groups split from the channels after the insertion.
// CHECK-LABEL: func.func @transposed_2d_nhwgc_generic_k3_s2_p1_op1_g2_f32
// CHECK-NOT:     tensor.insert_slice %arg0
// CHECK-NOT:     arith.maximumf
// CHECK:         return {{.*}} : tensor<2x10x12x4xf32>
// NOTE: rewrote linalg.generic at {{.*}}: the zero-insertion form of a transposed convolution
// NOTE-NEXT:   transposed: the grad_input of 2-D n2 c4 f8 10x12 k3x3 s2x2 p1x1 d1x1 g2 f32, gradients 100
func.func @transposed_2d_nhwgc_generic_k3_s2_p1_op1_g2_f32(%arg0: tensor<2x5x6x8xf32>, %arg1: tensor<3x3x4x4xf32>) -> tensor<2x10x12x4xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<2x12x14x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x12x14x8xf32>) -> tensor<2x12x14x8xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %1[0, 1, 1, 0] [2, 5, 6, 8] [1, 2, 2, 1] : tensor<2x5x6x8xf32> into tensor<2x12x14x8xf32>
  %expanded = tensor.expand_shape %inserted_slice [[0], [1], [2], [3, 4]] output_shape [2, 12, 14, 2, 4] : tensor<2x12x14x8xf32> into tensor<2x12x14x2x4xf32>
  %expanded_0 = tensor.expand_shape %arg1 [[0], [1], [2], [3, 4]] output_shape [3, 3, 4, 2, 2] : tensor<3x3x4x4xf32> into tensor<3x3x4x2x2xf32>
  %2 = tensor.empty() : tensor<2x10x12x2x2xf32>
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<2x10x12x2x2xf32>) -> tensor<2x10x12x2x2xf32>
  %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d7, d3 + d4, d5 + d6, d0, d1)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d4, d6, d1, d0, d2)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d7, d3, d5, d0, d2)>], iterator_types = ["parallel", "reduction", "parallel", "parallel", "reduction", "parallel", "reduction", "parallel"]} ins(%expanded, %expanded_0 : tensor<2x12x14x2x4xf32>, tensor<3x3x4x2x2xf32>) outs(%3 : tensor<2x10x12x2x2xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %5 = arith.mulf %in, %in_1 : f32
    %6 = arith.addf %out, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<2x10x12x2x2xf32>
  %collapsed = tensor.collapse_shape %4 [[0], [1], [2], [3, 4]] : tensor<2x10x12x2x2xf32> into tensor<2x10x12x4xf32>
  return %collapsed : tensor<2x10x12x4xf32>
}

// -----

// Depthwise, as StableHLO's conversion writes one channel a group: a filter
// with no channel dims, each of its taps one group's.
// CHECK-LABEL: func.func @transposed_2d_nhwc_depthwise_hwc_k3_s2_p1_op1_g8_f32
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwc
// CHECK:         return {{.*}} : tensor<2x10x12x8xf32>
// NOTE: rewrote linalg.depthwise_conv_2d_nhwc_hwc at {{.*}}: the zero-insertion form of a transposed convolution
// NOTE-NEXT:   transposed: the grad_input of 2-D n2 c8 f8 10x12 k3x3 s2x2 p1x1 d1x1 g8 f32, gradients 100
func.func @transposed_2d_nhwc_depthwise_hwc_k3_s2_p1_op1_g8_f32(%arg0: tensor<2x5x6x8xf32>, %arg1: tensor<3x3x8xf32>) -> tensor<2x10x12x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<2x12x14x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x12x14x8xf32>) -> tensor<2x12x14x8xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %1[0, 1, 1, 0] [2, 5, 6, 8] [1, 2, 2, 1] : tensor<2x5x6x8xf32> into tensor<2x12x14x8xf32>
  %2 = tensor.empty() : tensor<2x10x12x8xf32>
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<2x10x12x8xf32>) -> tensor<2x10x12x8xf32>
  %4 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%inserted_slice, %arg1 : tensor<2x12x14x8xf32>, tensor<3x3x8xf32>) outs(%3 : tensor<2x10x12x8xf32>) -> tensor<2x10x12x8xf32>
  return %4 : tensor<2x10x12x8xf32>
}

// -----

// Depthwise with a multiplier: each group's one channel makes two.
// CHECK-LABEL: func.func @transposed_2d_nhwc_depthwise_hwcm_k3_s2_p1_op1_g4_m2_f32
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwcm
// CHECK:         return {{.*}} : tensor<2x10x12x8xf32>
// NOTE: rewrote linalg.depthwise_conv_2d_nhwc_hwcm at {{.*}}: the zero-insertion form of a transposed convolution
// NOTE-NEXT:   transposed: the grad_input of 2-D n2 c8 f4 10x12 k3x3 s2x2 p1x1 d1x1 g4 f32, gradients 100
func.func @transposed_2d_nhwc_depthwise_hwcm_k3_s2_p1_op1_g4_m2_f32(%arg0: tensor<2x5x6x4xf32>, %arg1: tensor<3x3x4x2xf32>) -> tensor<2x10x12x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<2x12x14x4xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x12x14x4xf32>) -> tensor<2x12x14x4xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %1[0, 1, 1, 0] [2, 5, 6, 4] [1, 2, 2, 1] : tensor<2x5x6x4xf32> into tensor<2x12x14x4xf32>
  %2 = tensor.empty() : tensor<2x10x12x4x2xf32>
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<2x10x12x4x2xf32>) -> tensor<2x10x12x4x2xf32>
  %4 = linalg.depthwise_conv_2d_nhwc_hwcm {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%inserted_slice, %arg1 : tensor<2x12x14x4xf32>, tensor<3x3x4x2xf32>) outs(%3 : tensor<2x10x12x4x2xf32>) -> tensor<2x10x12x4x2xf32>
  %collapsed = tensor.collapse_shape %4 [[0], [1], [2], [3, 4]] : tensor<2x10x12x4x2xf32> into tensor<2x10x12x8xf32>
  return %collapsed : tensor<2x10x12x8xf32>
}

// -----

// Not ours: a generic that reads windows of the inserted data but takes
// their maximum; only a sum of products is a convolution's grad_input.
// CHECK-LABEL: func.func @max_body_generic_2d_nhwc_k3_s2_f32
// CHECK:         arith.maximumf
// NOTE: kept linalg.generic at {{.*}}: its body is not a sum of products
func.func @max_body_generic_2d_nhwc_k3_s2_f32(%arg0: tensor<2x5x6x8xf32>, %arg1: tensor<3x3x8x4xf32>) -> tensor<2x10x12x4xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<2x12x14x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x12x14x8xf32>) -> tensor<2x12x14x8xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %1[0, 1, 1, 0] [2, 5, 6, 8] [1, 2, 2, 1] : tensor<2x5x6x8xf32> into tensor<2x12x14x8xf32>
  %2 = tensor.empty() : tensor<2x10x12x4xf32>
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<2x10x12x4xf32>) -> tensor<2x10x12x4xf32>
  %4 = linalg.generic {indexing_maps = [affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh + kh, ow + kw, c)>, affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>, affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%inserted_slice, %arg1 : tensor<2x12x14x8xf32>, tensor<3x3x8x4xf32>) outs(%3 : tensor<2x10x12x4xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %5 = arith.mulf %in, %in_1 : f32
    %6 = arith.maximumf %out, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<2x10x12x4xf32>
  return %4 : tensor<2x10x12x4xf32>
}

// -----

// Padding after the data of a stride and more, which StableHLO allows:
// output_padding 3 at stride 2 is a zero row after the data, and 1.
// CHECK-LABEL: func.func @transposed_2d_nhwc_hwcf_k3_s2_p1_op3_f32
// CHECK-NOT:     tensor.insert_slice %arg0
// CHECK:         tensor.pad {{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK:         return {{.*}} : tensor<2x12x14x4xf32>
// NOTE: rewrote linalg.conv_2d_nhwc_hwcf at {{.*}}: the zero-insertion form of a transposed convolution
// NOTE-NEXT:   transposed: the grad_input of 2-D n2 c4 f8 12x14 k3x3 s2x2 p1x1 d1x1 g1 f32, gradients 100
func.func @transposed_2d_nhwc_hwcf_k3_s2_p1_op3_f32(%arg0: tensor<2x5x6x8xf32>, %arg1: tensor<3x3x8x4xf32>) -> tensor<2x12x14x4xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<2x12x14x4xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x12x14x4xf32>) -> tensor<2x12x14x4xf32>
  %2 = tensor.empty() : tensor<2x14x16x8xf32>
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<2x14x16x8xf32>) -> tensor<2x14x16x8xf32>
  %inserted_slice = tensor.insert_slice %arg0 into %3[0, 1, 1, 0] [2, 5, 6, 8] [1, 2, 2, 1] : tensor<2x5x6x8xf32> into tensor<2x14x16x8xf32>
  %4 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%inserted_slice, %arg1 : tensor<2x14x16x8xf32>, tensor<3x3x8x4xf32>) outs(%1 : tensor<2x12x14x4xf32>) -> tensor<2x12x14x4xf32>
  return %4 : tensor<2x12x14x4xf32>
}
