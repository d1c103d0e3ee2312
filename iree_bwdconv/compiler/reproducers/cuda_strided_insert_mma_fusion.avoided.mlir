// The same contraction woven with zeros by one elementwise op (the plan's
// rule phase_woven): each value rounded to f16 and followed by a zero, the
// pairs collapsed into the strided dim; no strided insert.
#x = affine_map<(n, f, o, c, k) -> (n, c, o + k)>
#w = affine_map<(n, f, o, c, k) -> (f, c, k)>
#y = affine_map<(n, f, o, c, k) -> (n, f, o)>
#pick = affine_map<(n, f, o, r) -> (n, f, o)>
#id = affine_map<(n, f, o, r) -> (n, f, o, r)>
func.func @main(%x: tensor<2x16x12xf16>, %w: tensor<16x16x3xf16>) -> tensor<2x16x20xf16> {
  %zero = arith.constant 0.0 : f32
  %zero_h = arith.constant 0.0 : f16
  %c0 = arith.constant 0 : index
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
  %woven_empty = tensor.empty() : tensor<2x16x10x2xf16>
  %woven = linalg.generic {indexing_maps = [#pick, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sum : tensor<2x16x10xf32>) outs(%woven_empty : tensor<2x16x10x2xf16>) {
  ^bb0(%v: f32, %out: f16):
    %r = linalg.index 3 : index
    %first = arith.cmpi eq, %r, %c0 : index
    %t = arith.truncf %v : f32 to f16
    %e = arith.select %first, %t, %zero_h : f16
    linalg.yield %e : f16
  } -> tensor<2x16x10x2xf16>
  %dx = tensor.collapse_shape %woven [[0], [1], [2, 3]] : tensor<2x16x10x2xf16> into tensor<2x16x20xf16>
  return %dx : tensor<2x16x20xf16>
}
