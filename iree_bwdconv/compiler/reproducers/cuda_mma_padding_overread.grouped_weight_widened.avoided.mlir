// The same contraction as grouped_weight_widened builds it: the smaller operand (grad_output) read as
// f32, the input widened in the body.
func.func @main(%input: tensor<2x1x2x8x29x29xf16>, %grad_output: tensor<2x1x2x8x14x14xf16>) -> tensor<2x2x8x8x3x3xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %dy_empty = tensor.empty() : tensor<2x1x2x8x14x14xf32>
  %dy32 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d, e, f) -> (a, b, c, d, e, f)>, affine_map<(a, b, c, d, e, f) -> (a, b, c, d, e, f)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%grad_output : tensor<2x1x2x8x14x14xf16>) outs(%dy_empty : tensor<2x1x2x8x14x14xf32>) {
  ^bb0(%v: f16, %o: f32):
    %e = arith.extf %v : f16 to f32
    linalg.yield %e : f32
  } -> tensor<2x1x2x8x14x14xf32>
  %empty = tensor.empty() : tensor<2x2x8x8x3x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x2x8x8x3x3xf32>) -> tensor<2x2x8x8x3x3xf32>
  %partials = linalg.generic {
      indexing_maps = [affine_map<(s, g, f, c, kh, kw, i, oh, ow) -> (s, i, g, c, oh * 2 + kh, ow * 2 + kw)>,
                       affine_map<(s, g, f, c, kh, kw, i, oh, ow) -> (s, i, g, f, oh, ow)>,
                       affine_map<(s, g, f, c, kh, kw, i, oh, ow) -> (s, g, f, c, kh, kw)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%input, %dy32 : tensor<2x1x2x8x29x29xf16>, tensor<2x1x2x8x14x14xf32>) outs(%init : tensor<2x2x8x8x3x3xf32>) {
  ^bb0(%x: f16, %y: f32, %acc: f32):
    %xe = arith.extf %x : f16 to f32
    %product = arith.mulf %xe, %y : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<2x2x8x8x3x3xf32>
  return %partials : tensor<2x2x8x8x3x3xf32>
}
