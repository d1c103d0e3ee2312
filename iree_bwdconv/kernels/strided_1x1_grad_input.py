"""The Triton source of the CUDA kernel for a strided 1x1 kernel's
grad_input (`catalog`). Only `generate` imports this module, with Triton
installed; the package itself ships the PTX it produced.

Per image: `dx[c, oh*S_H - P_H, ow*S_W - P_W] = sum_k w[k, c] * dy[k, oh, ow]`
where that position is inside dx. The GEMM is tiled over (c, flat positions
q = oh*OW + ow) of dy, the layout IREE 3.13's own matmul runs at its best.
dx comes in filled with zeros where a stride leaves gaps (the dispatch
writes in place: IREE makes the fill a memset), unfilled at stride 1,
where every position gets a value; the kernel stores only the GEMM's
values. Writing the
zeros itself too, each tile writing its whole S_H x S_W blocks, kept the
GPU 1.05x-1.5x longer on the H100 than the memset and this kernel, with
stop 28's tile and with the present one (docs/performance.md).
"""

import triton
import triton.language as tl


@triton.jit
def strided_1x1_grad_input(
    w_ptr, dy_ptr, dx_ptr,
    C, K, OHW, OW, H, W, S_H, S_W, P_H, P_W,
    BLOCK_C: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_q = tl.program_id(0)
    pid_c = tl.program_id(1)
    image = tl.program_id(2).to(tl.int64)
    c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    q = pid_q * BLOCK_Q + tl.arange(0, BLOCK_Q)
    k = tl.arange(0, BLOCK_K)
    in_c = c < C
    in_q = q < OHW
    dy_image = dy_ptr + image * K * OHW
    acc = tl.zeros((BLOCK_C, BLOCK_Q), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + k
        w = tl.load(w_ptr + kk[None, :] * C + c[:, None], mask=in_c[:, None] & (kk[None, :] < K), other=0.0)
        dy = tl.load(dy_image + kk[:, None] * OHW + q[None, :], mask=(kk[:, None] < K) & in_q[None, :], other=0.0)
        acc = tl.dot(w, dy, acc)
    value = acc.to(dx_ptr.dtype.element_ty)
    oh = q // OW
    ow = q - oh * OW
    i = oh * S_H - P_H
    j = ow * S_W - P_W
    inside = in_q & (i >= 0) & (i < H) & (j >= 0) & (j < W)
    dx_image = dx_ptr + image * C * H * W
    tl.store(dx_image + (c * (H * W))[:, None] + (i * W + j)[None, :], value, mask=in_c[:, None] & inside[None, :])
