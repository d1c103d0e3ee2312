// Padding after the data of a stride and more (output_padding 3 at stride
// 2), which StableHLO allows and PyTorch does not: the grad_input of a
// convolution whose grad_output has a row of zeros more.
func.func @main(%x: tensor<2x5x6x8xf32>, %w: tensor<3x3x8x4xf32>) -> tensor<2x12x14x4xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 4], [1, 4]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x5x6x8xf32>, tensor<3x3x8x4xf32>) -> tensor<2x12x14x4xf32>
  return %y : tensor<2x12x14x4xf32>
}
