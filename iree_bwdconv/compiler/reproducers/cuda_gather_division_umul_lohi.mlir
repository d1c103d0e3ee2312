// Every phase's taps of a 3x3 weight at stride (1, 2), gathered by one op
// into one flat table: its flat index decoded by divisions by 2, 3 and 64.
#flat = affine_map<(i) -> (i)>
func.func @main(%w: tensor<64x64x3x3xf16>) -> tensor<36864xf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %c24576 = arith.constant 24576 : index
  %empty = tensor.empty() : tensor<36864xf16>
  %table = linalg.generic {indexing_maps = [#flat], iterator_types = ["parallel"]} outs(%empty : tensor<36864xf16>) {
  ^bb0(%out: f16):
    %i = linalg.index 0 : index
    // phase 0: [c, f, 3 taps, 2 taps]
    %kw0 = arith.remui %i, %c2 : index
    %q0 = arith.divui %i, %c2 : index
    %kh0 = arith.remui %q0, %c3 : index
    %r0 = arith.divui %q0, %c3 : index
    %f0 = arith.remui %r0, %c64 : index
    %s0 = arith.divui %r0, %c64 : index
    %c_0 = arith.remui %s0, %c64 : index
    %h0 = arith.subi %c2, %kh0 : index
    %t0 = arith.muli %kw0, %c2 : index
    %w0 = arith.subi %c2, %t0 : index
    // phase 1: [c, f, 3 taps, 1 tap], after phase 0's 24576
    %j = arith.subi %i, %c24576 : index
    %kh1 = arith.remui %j, %c3 : index
    %q1 = arith.divui %j, %c3 : index
    %f1 = arith.remui %q1, %c64 : index
    %s1 = arith.divui %q1, %c64 : index
    %c_1 = arith.remui %s1, %c64 : index
    %h1 = arith.subi %c2, %kh1 : index
    %second = arith.cmpi uge, %i, %c24576 : index
    %f = arith.select %second, %f1, %f0 : index
    %c = arith.select %second, %c_1, %c_0 : index
    %h = arith.select %second, %h1, %h0 : index
    %ww = arith.select %second, %c1, %w0 : index
    %v = tensor.extract %w[%f, %c, %h, %ww] : tensor<64x64x3x3xf16>
    linalg.yield %v : f16
  } -> tensor<36864xf16>
  return %table : tensor<36864xf16>
}
