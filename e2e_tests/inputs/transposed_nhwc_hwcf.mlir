// A strided transposed convolution as StableHLO's conversion leaves it:
// channels last, the data inserted 2 apart into zeros, a stride-1
// convolution with the (already reversed) HWCF filter.
func.func @main(%x: tensor<2x5x6x8xf32>, %filter: tensor<3x3x8x4xf32>) -> tensor<2x10x12x4xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %zeros = arith.constant dense<0.000000e+00> : tensor<2x12x14x8xf32>
  %inserted = tensor.insert_slice %x into %zeros[0, 1, 1, 0] [2, 5, 6, 8] [1, 2, 2, 1] : tensor<2x5x6x8xf32> into tensor<2x12x14x8xf32>
  %empty = tensor.empty() : tensor<2x10x12x4xf32>
  %init = linalg.fill ins(%cst : f32) outs(%empty : tensor<2x10x12x4xf32>) -> tensor<2x10x12x4xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%inserted, %filter : tensor<2x12x14x8xf32>, tensor<3x3x8x4xf32>) outs(%init : tensor<2x10x12x4xf32>) -> tensor<2x10x12x4xf32>
  return %y : tensor<2x10x12x4xf32>
}
