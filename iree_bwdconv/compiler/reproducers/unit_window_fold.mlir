// IREE fault `unit_window_fold` (iree_bwdconv/compiler/iree_faults.py).
// A 3x3 stride-2 convolution of a 3x4 image has one output position, and
// its window reads 3 of the 4 columns. IREE folds the output's unit dims,
// takes the window's width from the image's (4) and refuses the module:
// "inferred input/output operand #1 has shape's dimension #3 to be 4, but
// found 3".
func.func @main(%image: tensor<1x1x3x4xf32>, %filter: tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x1x1x1xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %out = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%image, %filter : tensor<1x1x3x4xf32>, tensor<1x1x3x3xf32>) outs(%init : tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  return %out : tensor<1x1x1x1xf32>
}
