// Depthwise: a group per channel, which IREE's conversion writes as
// linalg.depthwise_conv_2d_nhwc_hwc.
func.func @main(%x: tensor<2x5x6x8xf32>, %w: tensor<3x3x1x8xf32>) -> tensor<2x10x12x8xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 2], [1, 2]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 8 : i64} : (tensor<2x5x6x8xf32>, tensor<3x3x1x8xf32>) -> tensor<2x10x12x8xf32>
  return %y : tensor<2x10x12x8xf32>
}
