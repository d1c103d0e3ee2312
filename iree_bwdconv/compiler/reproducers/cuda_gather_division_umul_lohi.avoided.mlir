// The same taps gathered by one op per phase (phase_one_table declines
// tables whose sizes are not powers of two): each phase's table indexed by
// its own dims, with no flat index to divide.
#id = affine_map<(c, f, kh, kw) -> (c, f, kh, kw)>
func.func @main(%w: tensor<64x64x3x3xf16>) -> (tensor<64x64x3x2xf16>, tensor<64x64x3x1xf16>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %empty0 = tensor.empty() : tensor<64x64x3x2xf16>
  %phase0 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%empty0 : tensor<64x64x3x2xf16>) {
  ^bb0(%out: f16):
    %c = linalg.index 0 : index
    %f = linalg.index 1 : index
    %kh = linalg.index 2 : index
    %kw = linalg.index 3 : index
    %h = arith.subi %c2, %kh : index
    %t = arith.muli %kw, %c2 : index
    %ww = arith.subi %c2, %t : index
    %v = tensor.extract %w[%f, %c, %h, %ww] : tensor<64x64x3x3xf16>
    linalg.yield %v : f16
  } -> tensor<64x64x3x2xf16>
  %empty1 = tensor.empty() : tensor<64x64x3x1xf16>
  %phase1 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%empty1 : tensor<64x64x3x1xf16>) {
  ^bb0(%out: f16):
    %c = linalg.index 0 : index
    %f = linalg.index 1 : index
    %kh = linalg.index 2 : index
    %h = arith.subi %c2, %kh : index
    %v = tensor.extract %w[%f, %c, %h, %c1] : tensor<64x64x3x3xf16>
    linalg.yield %v : f16
  } -> tensor<64x64x3x1xf16>
  return %phase0, %phase1 : tensor<64x64x3x2xf16>, tensor<64x64x3x1xf16>
}
