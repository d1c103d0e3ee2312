// IREE fault `cpu_batchless_conv_store` (iree_bwdconv/compiler/iree_faults.py).
// A grouped convolution of one image whose result, of one row, is inserted
// at row 0 of a larger zero tensor: the stride phase of a grad_input whose
// strided dim has a kernel of 1. IREE's llvm-cpu codegen gives the
// convolution its batch dim back (InsertBatchDimForBatchlessConvPass) and
// folds the reshape into a store that drops a dim after a kept one, as if
// every dropped dim came first: groups after the first land at the wrong
// channels. out[n, g, f, 0, ow] = sum_{c, kh, kw} x[n, g, c, kh, ow + 2 kw] * w[g, f, c, kh, kw].
#x = affine_map<(n, g, f, oh, ow, c, kh, kw) -> (n, g, c, oh + kh, ow + kw * 2)>
#w = affine_map<(n, g, f, oh, ow, c, kh, kw) -> (g, f, c, kh, kw)>
#out = affine_map<(n, g, f, oh, ow, c, kh, kw) -> (n, g, f, oh, ow)>
module {
  func.func @main(%x: tensor<1x3x3x1x8xf32>, %w: tensor<3x2x3x1x2xf32>) -> tensor<1x3x2x2x6xf32> {
    %zero = arith.constant 0.000000e+00 : f32
    %empty = tensor.empty() : tensor<1x3x2x1x6xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x3x2x1x6xf32>) -> tensor<1x3x2x1x6xf32>
    %conv = linalg.generic {indexing_maps = [#x, #w, #out],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel",
                                              "reduction", "reduction", "reduction"]}
        ins(%x, %w : tensor<1x3x3x1x8xf32>, tensor<3x2x3x1x2xf32>) outs(%init : tensor<1x3x2x1x6xf32>) {
    ^bb0(%in: f32, %weight: f32, %acc: f32):
      %product = arith.mulf %in, %weight : f32
      %sum = arith.addf %acc, %product : f32
      linalg.yield %sum : f32
    } -> tensor<1x3x2x1x6xf32>
    %whole_empty = tensor.empty() : tensor<1x3x2x2x6xf32>
    %whole = linalg.fill ins(%zero : f32) outs(%whole_empty : tensor<1x3x2x2x6xf32>) -> tensor<1x3x2x2x6xf32>
    %placed = tensor.insert_slice %conv into %whole[0, 0, 0, 0, 0] [1, 3, 2, 1, 6] [1, 1, 1, 1, 1]
        : tensor<1x3x2x1x6xf32> into tensor<1x3x2x2x6xf32>
    return %placed : tensor<1x3x2x2x6xf32>
  }
}
