// 1-D, two groups, bf16.
func.func @main(%x: tensor<2x7x6xbf16>, %w: tensor<5x3x4xbf16>) -> tensor<2x14x4xbf16> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [1], pad = [[2, 3]], lhs_dilate = [2], rhs_dilate = [1]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x7x6xbf16>, tensor<5x3x4xbf16>) -> tensor<2x14x4xbf16>
  return %y : tensor<2x14x4xbf16>
}
