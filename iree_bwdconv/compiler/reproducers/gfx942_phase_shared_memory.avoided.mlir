// The same phase as the plan's rule half_in_f32 (narrow_channels_on_gfx942) builds it:
// the f16 operands widened to f32 by elementwise ops, the convolution in f32.
func.func @main(%grad_output: tensor<1x2x32x9x9xf16>, %weight: tensor<2x8x32x2x2xf16>) -> tensor<1x2x8x8x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %dy_empty = tensor.empty() : tensor<1x2x32x9x9xf32>
  %dy32 = linalg.generic {
      indexing_maps = [affine_map<(a, b, c, d, e) -> (a, b, c, d, e)>, affine_map<(a, b, c, d, e) -> (a, b, c, d, e)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%grad_output : tensor<1x2x32x9x9xf16>) outs(%dy_empty : tensor<1x2x32x9x9xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<1x2x32x9x9xf32>
  %w_empty = tensor.empty() : tensor<2x8x32x2x2xf32>
  %w32 = linalg.generic {
      indexing_maps = [affine_map<(a, b, c, d, e) -> (a, b, c, d, e)>, affine_map<(a, b, c, d, e) -> (a, b, c, d, e)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%weight : tensor<2x8x32x2x2xf16>) outs(%w_empty : tensor<2x8x32x2x2xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<2x8x32x2x2xf32>
  %empty = tensor.empty() : tensor<1x2x8x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  %phase = linalg.generic {
      indexing_maps = [affine_map<(n, g, c, oh, ow, f, kh, kw) -> (n, g, f, oh + kh, ow + kw)>,
                       affine_map<(n, g, c, oh, ow, f, kh, kw) -> (g, c, f, kh, kw)>,
                       affine_map<(n, g, c, oh, ow, f, kh, kw) -> (n, g, c, oh, ow)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%dy32, %w32 : tensor<1x2x32x9x9xf32>, tensor<2x8x32x2x2xf32>) outs(%init : tensor<1x2x8x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %product = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x8x8x8xf32>
  return %phase : tensor<1x2x8x8x8xf32>
}
