// The weight-first GEMM of a grouped transposed 1x1 kernel's grad_input in f16: 2 groups of 8 channels each
// way, 16 positions. IREE 3.13's CUDA code pads both 8s (rows of the weight, grad_output's channels: outer
// dims) to its MMA tile of 16: mma_padding.overreads_in flags it. Plan rule: transposed_one_tap_gemm (at least 64 channels a group).
func.func @main(%weight: tensor<2x8x8xf16>, %grad_output: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %empty = tensor.empty() : tensor<1x2x8x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %grad_input = linalg.generic {
      indexing_maps = [affine_map<(n, g, c, p, f) -> (g, c, f)>,
                       affine_map<(n, g, c, p, f) -> (n, g, f, p)>,
                       affine_map<(n, g, c, p, f) -> (n, g, c, p)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%weight, %grad_output : tensor<2x8x8xf16>, tensor<1x2x8x16xf16>) outs(%init : tensor<1x2x8x16xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %a = arith.extf %x : f16 to f32
    %b = arith.extf %y : f16 to f32
    %product = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x8x16xf32>
  return %grad_input : tensor<1x2x8x16xf32>
}
