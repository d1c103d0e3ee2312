// Channels first, four groups, the kernel dilated by 2 along h: IREE's
// conversion transposes to channels last, inserts, and convolves in a
// linalg.generic.
func.func @main(%x: tensor<2x8x5x6xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<2x4x8x12xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 2], [1, 2]], lhs_dilate = [2, 2], rhs_dilate = [2, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<2x8x5x6xf32>, tensor<4x2x3x3xf32>) -> tensor<2x4x8x12xf32>
  return %y : tensor<2x4x8x12xf32>
}
