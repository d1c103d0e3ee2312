// The same GEMM with its operands widened to f32 (the plan takes the windowless convolution in f32 instead).
func.func @main(%weight: tensor<2x8x8xf16>, %grad_output: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w_empty = tensor.empty() : tensor<2x8x8xf32>
  %w32 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%weight : tensor<2x8x8xf16>) outs(%w_empty : tensor<2x8x8xf32>) {
  ^bb0(%v: f16, %o: f32):
    %e = arith.extf %v : f16 to f32
    linalg.yield %e : f32
  } -> tensor<2x8x8xf32>
  %dy_empty = tensor.empty() : tensor<1x2x8x16xf32>
  %dy32 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%grad_output : tensor<1x2x8x16xf16>) outs(%dy_empty : tensor<1x2x8x16xf32>) {
  ^bb0(%v: f16, %o: f32):
    %e = arith.extf %v : f16 to f32
    linalg.yield %e : f32
  } -> tensor<1x2x8x16xf32>
  %empty = tensor.empty() : tensor<1x2x8x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %grad_input = linalg.generic {
      indexing_maps = [affine_map<(n, g, c, p, f) -> (g, c, f)>,
                       affine_map<(n, g, c, p, f) -> (n, g, f, p)>,
                       affine_map<(n, g, c, p, f) -> (n, g, c, p)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%w32, %dy32 : tensor<2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%init : tensor<1x2x8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %product = arith.mulf %x, %y : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<1x2x8x16xf32>
  return %grad_input : tensor<1x2x8x16xf32>
}
