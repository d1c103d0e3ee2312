#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0)>
#map4 = affine_map<(d0) -> (d0)>
module {
  func.func @main(%arg0: tensor<?x8x5x5xf16>) -> tensor<8xf16> {
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.000000e+00 : f32
    %collapsed = tensor.collapse_shape %arg0 [[0], [1], [2, 3]] : tensor<?x8x5x5xf16> into tensor<?x8x25xf16>
    %dim = tensor.dim %arg0, %c0 : tensor<?x8x5x5xf16>
    %expanded = tensor.expand_shape %collapsed [[0], [1], [2, 3]] output_shape [%dim, 8, 1, 25] : tensor<?x8x25xf16> into tensor<?x8x1x25xf16>
    %0 = tensor.empty(%dim) : tensor<?x8x1xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x8x1xf32>) -> tensor<?x8x1xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%expanded : tensor<?x8x1x25xf16>) outs(%1 : tensor<?x8x1xf32>) {
    ^bb0(%in: f16, %out: f32):
      %8 = arith.extf %in : f16 to f32
      %9 = arith.addf %out, %8 : f32
      linalg.yield %9 : f32
    } -> tensor<?x8x1xf32>
    %3 = tensor.empty() : tensor<8xf32>
    %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<8xf32>) -> tensor<8xf32>
    %5 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "reduction", "reduction"]} ins(%2 : tensor<?x8x1xf32>) outs(%4 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = arith.addf %out, %in : f32
      linalg.yield %8 : f32
    } -> tensor<8xf32>
    %6 = tensor.empty() : tensor<8xf16>
    %7 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel"]} ins(%5 : tensor<8xf32>) outs(%6 : tensor<8xf16>) {
    ^bb0(%in: f32, %out: f16):
      %8 = arith.truncf %in : f32 to f16
      linalg.yield %8 : f16
    } -> tensor<8xf16>
    return %7 : tensor<8xf16>
  }
}
