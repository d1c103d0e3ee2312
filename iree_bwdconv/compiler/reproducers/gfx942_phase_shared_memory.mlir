// A stride phase (2x2 taps) of a grouped 3x3 stride-2 grad_input in f16, 2 groups of
// 8 input and 32 output channels, one image: IREE 3.13's gfx942 code for the
// convolution asks for 69632 bytes of shared memory, past the limit of 65536. One group
// of 8 and 32 fails alike.
func.func @main(%grad_output: tensor<1x2x32x9x9xf16>, %weight: tensor<2x8x32x2x2xf16>) -> tensor<1x2x8x8x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %empty = tensor.empty() : tensor<1x2x8x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
  %phase = linalg.generic {
      indexing_maps = [affine_map<(n, g, c, oh, ow, f, kh, kw) -> (n, g, f, oh + kh, ow + kw)>,
                       affine_map<(n, g, c, oh, ow, f, kh, kw) -> (g, c, f, kh, kw)>,
                       affine_map<(n, g, c, oh, ow, f, kh, kw) -> (n, g, c, oh, ow)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%grad_output, %weight : tensor<1x2x32x9x9xf16>, tensor<2x8x32x2x2xf16>) outs(%init : tensor<1x2x8x8x8xf32>) {
  ^bb0(%dy: f16, %w: f16, %acc: f32):
    %a = arith.extf %dy : f16 to f32
    %b = arith.extf %w : f16 to f32
    %product = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x8x8x8xf32>
  return %phase : tensor<1x2x8x8x8xf32>
}
