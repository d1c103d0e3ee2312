// The same rows with grad_output's channels padded with zeros to a multiple of 128 (256) first, as the
// rows' copy does (rows_padding), and the result cropped back to 160.
func.func @main(%grad_output: tensor<1x1x160x64xf16>, %input: tensor<1x1x64x64xf16>) -> tensor<1x160x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %zero16 = arith.constant 0.000000e+00 : f16
  %dy_padded = tensor.pad %grad_output low[0, 0, 0, 0] high[0, 0, 96, 0] {
  ^bb0(%a0: index, %a1: index, %a2: index, %a3: index):
    tensor.yield %zero16 : f16
  } : tensor<1x1x160x64xf16> to tensor<1x1x256x64xf16>
  %empty = tensor.empty() : tensor<1x256x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x256x64xf32>) -> tensor<1x256x64xf32>
  %rows_all = linalg.generic {
      indexing_maps = [affine_map<(s, f, c, i, p) -> (s, i, f, p)>,
                       affine_map<(s, f, c, i, p) -> (s, i, p, c)>,
                       affine_map<(s, f, c, i, p) -> (s, f, c)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%dy_padded, %input : tensor<1x1x256x64xf16>, tensor<1x1x64x64xf16>) outs(%init : tensor<1x256x64xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %a = arith.extf %x : f16 to f32
    %b = arith.extf %y : f16 to f32
    %product = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %product : f32
    linalg.yield %sum : f32
  } -> tensor<1x256x64xf32>
  %rows = tensor.extract_slice %rows_all[0, 0, 0] [1, 160, 64] [1, 1, 1] : tensor<1x256x64xf32> to tensor<1x160x64xf32>
  return %rows : tensor<1x160x64xf32>
}
