// IREE fault `cpu_pad_fused_grouped_conv` (iree_bwdconv/compiler/iree_faults.py).
// A dispatch region of ours (`dispatch_regions`) that holds a grouped
// convolution and the pad of its input, of sizes 7x9 that do not tile
// evenly: IREE's llvm-cpu codegen fails in ConcretizePadResultShapePass.
// `dispatch_regions.unwrap` takes the region apart again on the CPU.
#in = affine_map<(n, g, f, oh, ow, c, kh, kw) -> (n, g, c, oh + kh, ow + kw)>
#w = affine_map<(n, g, f, oh, ow, c, kh, kw) -> (g, f, c, kh, kw)>
#out = affine_map<(n, g, f, oh, ow, c, kh, kw) -> (n, g, f, oh, ow)>
func.func @main(%x: tensor<2x2x4x7x9xf32>, %k: tensor<2x3x4x2x2xf32>) -> tensor<2x2x3x7x9xf32> {
  %zero = arith.constant 0.0 : f32
  %r = flow.dispatch.region -> (tensor<2x2x3x7x9xf32>) attributes {iree_bwdconv.own_dispatch} {
    %p = tensor.pad %x low[0, 0, 0, 0, 0] high[0, 0, 0, 1, 1] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
      tensor.yield %zero : f32
    } : tensor<2x2x4x7x9xf32> to tensor<2x2x4x8x10xf32>
    %e = tensor.empty() : tensor<2x2x3x7x9xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2x3x7x9xf32>) -> tensor<2x2x3x7x9xf32>
    %c = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%p, %k : tensor<2x2x4x8x10xf32>, tensor<2x3x4x2x2xf32>) outs(%init : tensor<2x2x3x7x9xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<2x2x3x7x9xf32>
    flow.return %c : tensor<2x2x3x7x9xf32>
  }
  return %r : tensor<2x2x3x7x9xf32>
}
