// 3-D depthwise (linalg.depthwise_conv_3d_ndhwc_dhwc).
func.func @main(%x: tensor<2x3x4x5x6xf32>, %w: tensor<3x3x3x1x6xf32>) -> tensor<2x6x8x10x6xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f], window = {stride = [1, 1, 1], pad = [[1, 2], [1, 2], [1, 2]], lhs_dilate = [2, 2, 2], rhs_dilate = [1, 1, 1]} {batch_group_count = 1 : i64, feature_group_count = 6 : i64} : (tensor<2x3x4x5x6xf32>, tensor<3x3x3x1x6xf32>) -> tensor<2x6x8x10x6xf32>
  return %y : tensor<2x6x8x10x6xf32>
}
