// The one phase of a grouped 1x1 grad_input (a window that slides along no dim) in f16: 2 groups of
// 8 input and 8 output channels, one 4x4 image. IREE 3.13's CUDA code pads the reduction (8 output
// channels a group, an outer dim of grad_output) to the MMA tile: mma_padding.overreads_in flags it.
func.func @main(%grad_output: tensor<1x2x8x4x4xf16>, %weight: tensor<2x8x8x1x1xf16>) -> tensor<1x2x8x4x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %empty = tensor.empty() : tensor<1x2x8x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x2x8x4x4xf32>) -> tensor<1x2x8x4x4xf32>
  %phase = linalg.generic {
      indexing_maps = [affine_map<(n, g, oh, ow, c, f, kh, kw) -> (n, g, f, oh + kh, ow + kw)>,
                       affine_map<(n, g, oh, ow, c, f, kh, kw) -> (g, c, f, kh, kw)>,
                       affine_map<(n, g, oh, ow, c, f, kh, kw) -> (n, g, c, oh, ow)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%grad_output, %weight : tensor<1x2x8x4x4xf16>, tensor<2x8x8x1x1xf16>) outs(%init : tensor<1x2x8x4x4xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %a = arith.extf %x : f16 to f32
    %b = arith.extf %y : f16 to f32
    %product = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x8x4x4xf32>
  return %phase : tensor<1x2x8x4x4xf32>
}
