// The grouped weight-gradient contraction split by images (3x3 stride 2) in f16: 2 splits of one image,
// 2 groups of 8 input and 8 output channels, 14x14 positions. IREE 3.13's CUDA code pads it to its MMA
// tiles and clamps loads (mma_padding.overreads_in flags it). Plan rule: grouped_weight_widened.
func.func @main(%input: tensor<2x1x2x8x29x29xf16>, %grad_output: tensor<2x1x2x8x14x14xf16>) -> tensor<2x2x8x8x3x3xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %empty = tensor.empty() : tensor<2x2x8x8x3x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x2x8x8x3x3xf32>) -> tensor<2x2x8x8x3x3xf32>
  %partials = linalg.generic {
      indexing_maps = [affine_map<(s, g, f, c, kh, kw, i, oh, ow) -> (s, i, g, c, oh * 2 + kh, ow * 2 + kw)>,
                       affine_map<(s, g, f, c, kh, kw, i, oh, ow) -> (s, i, g, f, oh, ow)>,
                       affine_map<(s, g, f, c, kh, kw, i, oh, ow) -> (s, g, f, c, kh, kw)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%input, %grad_output : tensor<2x1x2x8x29x29xf16>, tensor<2x1x2x8x14x14xf16>) outs(%init : tensor<2x2x8x8x3x3xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %a = arith.extf %x : f16 to f32
    %b = arith.extf %y : f16 to f32
    %product = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<2x2x8x8x3x3xf32>
  return %partials : tensor<2x2x8x8x3x3xf32>
}
