// The weight rows of a 1x1 grad_weight in f16, grad_output read in place: 160 output channels (off IREE's
// tile of 64), 64 input channels, 64 positions, one split of one image. IREE 3.13's CUDA code pads the
// output channels, an outer dim of grad_output: mma_padding.overreads_in flags it.
func.func @main(%grad_output: tensor<1x1x160x64xf16>, %input: tensor<1x1x64x64xf16>) -> tensor<1x160x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %empty = tensor.empty() : tensor<1x160x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x160x64xf32>) -> tensor<1x160x64xf32>
  %rows = linalg.generic {
      indexing_maps = [affine_map<(s, f, c, i, p) -> (s, i, f, p)>,
                       affine_map<(s, f, c, i, p) -> (s, i, p, c)>,
                       affine_map<(s, f, c, i, p) -> (s, f, c)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%grad_output, %input : tensor<1x1x160x64xf16>, tensor<1x1x64x64xf16>) outs(%init : tensor<1x160x64xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %a = arith.extf %x : f16 to f32
    %b = arith.extf %y : f16 to f32
    %product = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<1x160x64xf32>
  return %rows : tensor<1x160x64xf32>
}
