// IREE fault `multi_use_fusion_partial_write` (iree_bwdconv/compiler/iree_faults.py).
// %negated has two users: %picked, which reads every other element of it
// (a strided map, as an im2col gather of a strided 1x1 convolution reads
// its input), and the return. IREE fuses %negated into %picked and keeps
// it as a second result written through %picked's map: only the elements
// at even indices of the returned %negated are written.
#identity = affine_map<(d0, d1) -> (d0, d1)>
#every_other = affine_map<(d0, d1) -> (d0 * 2, d1 * 2)>
func.func @main(%x: tensor<4x4xf32>) -> (tensor<2x2xf32>, tensor<4x4xf32>) {
  %all = tensor.empty() : tensor<4x4xf32>
  %negated = linalg.generic {indexing_maps = [#identity, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x4xf32>) outs(%all : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x4xf32>
  %some = tensor.empty() : tensor<2x2xf32>
  %picked = linalg.generic {indexing_maps = [#every_other, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%negated : tensor<4x4xf32>) outs(%some : tensor<2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x2xf32>
  return %picked, %negated : tensor<2x2xf32>, tensor<4x4xf32>
}
