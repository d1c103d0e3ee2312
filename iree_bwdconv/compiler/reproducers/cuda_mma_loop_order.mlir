// C[b] = A[b] x B in f16, f32 accumulation, its loops (b, n, m, k): N's
// innermost dim before M's. IREE keeps this order in the dispatch; its CUDA
// MMA code then returns values 1.35x the largest value off on an H100.
#a = affine_map<(b, n, m, k) -> (b, k, m)>
#b = affine_map<(b, n, m, k) -> (k, n)>
#c = affine_map<(b, n, m, k) -> (b, n, m)>
func.func @main(%a: tensor<2x192x256xf16>, %b: tensor<192x128xf16>) -> tensor<2x128x256xf16> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x128x256xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x128x256xf32>) -> tensor<2x128x256xf32>
  %acc = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<2x192x256xf16>, tensor<192x128xf16>) outs(%init : tensor<2x128x256xf32>) {
  ^bb0(%x: f16, %y: f16, %sum: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %sum, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x128x256xf32>
  %result = arith.truncf %acc : tensor<2x128x256xf32> to tensor<2x128x256xf16>
  return %result : tensor<2x128x256xf16>
}
