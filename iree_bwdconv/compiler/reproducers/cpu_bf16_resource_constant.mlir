// IREE fault `cpu_bf16_resource_constant` (iree_bwdconv/compiler/iree_faults.py).
// A bf16 constant held as a resource blob (as torch-mlir's importers hold
// a model's weights and biases) added to an argument: IREE inlines the
// small constant into the CPU dispatch, whose bf16 code then meets a
// constant of another type: "'arith.constant' op failed to verify that all
// of {value, result} have same type". The same constant written inline
// (dense<...>), or in f16, or for a GPU target, compiles.
func.func @main(%x: tensor<2x4xbf16>) -> tensor<2x4xbf16> {
  %bias = arith.constant dense_resource<bias> : tensor<4xbf16>
  %empty = tensor.empty() : tensor<2x4xbf16>
  %sum = linalg.generic {indexing_maps = [affine_map<(n, c) -> (n, c)>, affine_map<(n, c) -> (c)>, affine_map<(n, c) -> (n, c)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x, %bias : tensor<2x4xbf16>, tensor<4xbf16>) outs(%empty : tensor<2x4xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %out: bf16):
    %s = arith.addf %a, %b : bf16
    linalg.yield %s : bf16
  } -> tensor<2x4xbf16>
  return %sum : tensor<2x4xbf16>
}
{-#
  dialect_resources: {
    builtin: {
      bias: "0x020000000EBD3FBD013D363D"
    }
  }
#-}
