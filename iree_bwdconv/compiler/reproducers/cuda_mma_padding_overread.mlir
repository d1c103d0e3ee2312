// The weight-first GEMM of a 1x1 stride-2 data gradient in f16, 12 input
// channels and 24 filters: IREE 3.13 pads the channel dims to its MMA
// tiles, and its loads of the weight's rows (12) and of grad_output's
// filters (24) clamp to one past the last.
func.func @main(%weight: tensor<12x24xf16>, %grad_output: tensor<2x24x4x4xf16>) -> tensor<2x12x4x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %empty = tensor.empty() : tensor<2x12x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x12x4x4xf32>) -> tensor<2x12x4x4xf32>
  %grad_input = linalg.generic {
      indexing_maps = [affine_map<(n, c, oh, ow, f) -> (c, f)>,
                       affine_map<(n, c, oh, ow, f) -> (n, f, oh, ow)>,
                       affine_map<(n, c, oh, ow, f) -> (n, c, oh, ow)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%weight, %grad_output : tensor<12x24xf16>, tensor<2x24x4x4xf16>) outs(%init : tensor<2x12x4x4xf32>) {
  ^bb0(%w: f16, %dy: f16, %acc: f32):
    %a = arith.extf %w : f16 to f32
    %b = arith.extf %dy : f16 to f32
    %product = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<2x12x4x4xf32>
  return %grad_input : tensor<2x12x4x4xf32>
}
