// A contraction of f16 operands into f32 (a lone stride phase of a 1-D
// convolution's grad_input), rounded to f16 and inserted with stride 2
// along one dim into zeros: IREE fuses the insert into the MMA dispatch.
#x = affine_map<(n, f, o, c, k) -> (n, c, o + k)>
#w = affine_map<(n, f, o, c, k) -> (f, c, k)>
#y = affine_map<(n, f, o, c, k) -> (n, f, o)>
#id = affine_map<(n, f, o) -> (n, f, o)>
func.func @main(%x: tensor<2x16x12xf16>, %w: tensor<16x16x3xf16>) -> tensor<2x16x20xf16> {
  %zero = arith.constant 0.0 : f32
  %zero_h = arith.constant 0.0 : f16
  %empty = tensor.empty() : tensor<2x16x10xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x16x10xf32>) -> tensor<2x16x10xf32>
  %sum = linalg.generic {indexing_maps = [#x, #w, #y],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<2x16x12xf16>, tensor<16x16x3xf16>) outs(%acc : tensor<2x16x10xf32>) {
  ^bb0(%a: f16, %b: f16, %out: f32):
    %a32 = arith.extf %a : f16 to f32
    %b32 = arith.extf %b : f16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x16x10xf32>
  %half_empty = tensor.empty() : tensor<2x16x10xf16>
  %half = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sum : tensor<2x16x10xf32>) outs(%half_empty : tensor<2x16x10xf16>) {
  ^bb0(%v: f32, %out: f16):
    %t = arith.truncf %v : f32 to f16
    linalg.yield %t : f16
  } -> tensor<2x16x10xf16>
  %grid_empty = tensor.empty() : tensor<2x16x20xf16>
  %grid = linalg.fill ins(%zero_h : f16) outs(%grid_empty : tensor<2x16x20xf16>) -> tensor<2x16x20xf16>
  %dx = tensor.insert_slice %half into %grid[0, 0, 0] [2, 16, 10] [1, 1, 2] : tensor<2x16x10xf16> into tensor<2x16x20xf16>
  return %dx : tensor<2x16x20xf16>
}
