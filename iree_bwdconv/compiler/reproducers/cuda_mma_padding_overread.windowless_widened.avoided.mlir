// The same phase as the plan builds it (phase_widened / half_in_f32): operands widened to f32 first.
func.func @main(%grad_output: tensor<1x2x8x4x4xf16>, %weight: tensor<2x8x8x1x1xf16>) -> tensor<1x2x8x4x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %dy_empty = tensor.empty() : tensor<1x2x8x4x4xf32>
  %dy32 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d, e) -> (a, b, c, d, e)>, affine_map<(a, b, c, d, e) -> (a, b, c, d, e)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%grad_output : tensor<1x2x8x4x4xf16>) outs(%dy_empty : tensor<1x2x8x4x4xf32>) {
  ^bb0(%i: f16, %o: f32):
    %e = arith.extf %i : f16 to f32
    linalg.yield %e : f32
  } -> tensor<1x2x8x4x4xf32>
  %w_empty = tensor.empty() : tensor<2x8x8x1x1xf32>
  %w32 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d, e) -> (a, b, c, d, e)>, affine_map<(a, b, c, d, e) -> (a, b, c, d, e)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%weight : tensor<2x8x8x1x1xf16>) outs(%w_empty : tensor<2x8x8x1x1xf32>) {
  ^bb0(%i: f16, %o: f32):
    %e = arith.extf %i : f16 to f32
    linalg.yield %e : f32
  } -> tensor<2x8x8x1x1xf32>
  %empty = tensor.empty() : tensor<1x2x8x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x2x8x4x4xf32>) -> tensor<1x2x8x4x4xf32>
  %phase = linalg.generic {
      indexing_maps = [affine_map<(n, g, oh, ow, c, f, kh, kw) -> (n, g, f, oh + kh, ow + kw)>,
                       affine_map<(n, g, oh, ow, c, f, kh, kw) -> (g, c, f, kh, kw)>,
                       affine_map<(n, g, oh, ow, c, f, kh, kw) -> (n, g, c, oh, ow)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%dy32, %w32 : tensor<1x2x8x4x4xf32>, tensor<2x8x8x1x1xf32>) outs(%init : tensor<1x2x8x4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %product = arith.mulf %x, %y : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x8x4x4xf32>
  return %phase : tensor<1x2x8x4x4xf32>
}
