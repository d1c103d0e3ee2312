// IREE fault `cuda_padded_gemm_store` (iree_bwdconv/compiler/iree_faults.py).
// One stride phase of grad_input of a 3x1 stride-2 convolution, f16: a phase
// of one tap, its window of dy padded by one row past dy's end, as a GEMM
// with the weight first, its result stored with the stride into a
// zero-filled grad_input in the same dispatch (a dispatch region of ours).
// On an H200 (this module: n1, 16 channels, dy 3x4) the row read from the
// padding, which must be zero, came out 153% of the largest value off (59%
// on the layer it was met on, n8 c64 28x28); the other rows are right,
// and so is the same phase cut to the rows that read dy.
#wmap = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
#xmap = affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2, d3)>
#omap = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
module {
  func.func @main(%dy: tensor<1x16x3x4xf16>, %weight: tensor<16x16xf16>) -> tensor<1x16x8x8xf16> {
    %zero = arith.constant 0.000000e+00 : f16
    %empty = tensor.empty() : tensor<1x16x8x8xf16>
    %dx = linalg.fill ins(%zero : f16) outs(%empty : tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16>
    %stored = flow.dispatch.region -> (tensor<1x16x8x8xf16>) {
      %zero32 = arith.constant 0.000000e+00 : f32
      %sums = tensor.empty() : tensor<1x16x4x4xf32>
      %init = linalg.fill ins(%zero32 : f32) outs(%sums : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
      %padded = tensor.pad %dy low[0, 0, 0, 0] high[0, 0, 1, 0] {
      ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
        tensor.yield %zero : f16
      } : tensor<1x16x3x4xf16> to tensor<1x16x4x4xf16>
      %gemm = linalg.generic {indexing_maps = [#wmap, #xmap, #omap], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%weight, %padded : tensor<16x16xf16>, tensor<1x16x4x4xf16>) outs(%init : tensor<1x16x4x4xf32>) {
      ^bb0(%a: f16, %b: f16, %acc: f32):
        %a32 = arith.extf %a : f16 to f32
        %b32 = arith.extf %b : f16 to f32
        %product = arith.mulf %a32, %b32 : f32
        %sum = arith.addf %acc, %product : f32
        linalg.yield %sum : f32
      } -> tensor<1x16x4x4xf32>
      %halves = tensor.empty() : tensor<1x16x4x4xf16>
      %rounded = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%gemm : tensor<1x16x4x4xf32>) outs(%halves : tensor<1x16x4x4xf16>) {
      ^bb0(%v: f32, %o: f16):
        %r = arith.truncf %v : f32 to f16
        linalg.yield %r : f16
      } -> tensor<1x16x4x4xf16>
      %inserted = tensor.insert_slice %rounded into %dx[0, 0, 1, 0] [1, 16, 4, 4] [1, 1, 2, 2] : tensor<1x16x4x4xf16> into tensor<1x16x8x8xf16>
      flow.return %inserted : tensor<1x16x8x8xf16>
    }
    return %stored : tensor<1x16x8x8xf16>
  }
}
