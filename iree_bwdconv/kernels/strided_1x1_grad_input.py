"""The Triton source of the CUDA kernels for a strided 1x1 kernel's
grad_input (`catalog`). Only `generate` imports this module, with Triton
installed; the package itself ships the PTX it produced.

Per image: `dx[c, oh*S_H - P_H, ow*S_W - P_W] = sum_k w[k, c] * dy[k, oh, ow]`
where that position is inside dx. The GEMM is tiled over (c, flat positions
q = oh*OW + ow) of dy, the layout IREE 3.13's own matmul runs at its best.

`strided_1x1_grad_input` stores only the GEMM's values, 2 bytes apart from
each other. dx comes in filled with zeros where a stride leaves gaps (the
dispatch writes in place: IREE makes the fill a memset), unfilled at
stride 1, where every position gets a value. Writing the zeros itself
too, each of its 2-byte stores a position of an S_H x S_W block, kept the
GPU 1.05x-1.5x longer on the H100 than the memset and this kernel
(docs/performance-journal.md).

`strided_1x1_grad_input_blocks` is for stride 2 without padding where dx
is exactly twice dy's size: each position's 2 x 2 block, its value and
three zeros, into an unfilled dx. Runs of VEC positions (dy's rows a
multiple of VEC long) write 2*VEC elements of each of the block's two rows
at once, 16 or 8 bytes; with those wide stores the whole blocks cost the
GPU less than the memset and values alone (docs/performance-journal.md).
"""

import triton
import triton.language as tl


@triton.jit
def _tile_values(w_ptr, dy_ptr, dx_ptr, C, K, OHW,
                 BLOCK_C: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr):
    """This workgroup's image, channels c and positions q (with which are in
    range), and sum_k w[k, c] * dy[k, q] over them in dx's dtype."""
    pid_q = tl.program_id(0)
    pid_c = tl.program_id(1)
    image = tl.program_id(2).to(tl.int64)
    c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    q = pid_q * BLOCK_Q + tl.arange(0, BLOCK_Q)
    in_c = c < C
    in_q = q < OHW
    dy_image = dy_ptr + image * K * OHW
    k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_C, BLOCK_Q), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + k
        w = tl.load(w_ptr + kk[None, :] * C + c[:, None], mask=in_c[:, None] & (kk[None, :] < K), other=0.0)
        dy = tl.load(dy_image + kk[:, None] * OHW + q[None, :], mask=(kk[:, None] < K) & in_q[None, :], other=0.0)
        acc = tl.dot(w, dy, acc)
    return image, c, q, in_c, in_q, acc.to(dx_ptr.dtype.element_ty)


@triton.jit
def strided_1x1_grad_input(
    w_ptr, dy_ptr, dx_ptr,
    C, K, OHW, OW, H, W, S_H, S_W, P_H, P_W,
    BLOCK_C: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
):
    image, c, q, in_c, in_q, value = _tile_values(w_ptr, dy_ptr, dx_ptr, C, K, OHW, BLOCK_C, BLOCK_Q, BLOCK_K)
    oh = q // OW
    ow = q - oh * OW
    i = oh * S_H - P_H
    j = ow * S_W - P_W
    inside = in_q & (i >= 0) & (i < H) & (j >= 0) & (j < W)
    dx_image = dx_ptr + image * C * H * W
    tl.store(dx_image + (c * (H * W))[:, None] + (i * W + j)[None, :], value, mask=in_c[:, None] & inside[None, :])


@triton.jit
def strided_1x1_grad_input_blocks(
    w_ptr, dy_ptr, dx_ptr,
    C, K, OHW, OW, H, W, S_H, S_W, P_H, P_W,
    BLOCK_C: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr, VEC: tl.constexpr,
):
    # S = 2, P = 0, H = 2*OH, W = 2*OW, OW % VEC == 0 (catalog.block_vector):
    # a run of VEC positions from a multiple of VEC stays in one dy row, and
    # its blocks' rows are 2*VEC contiguous elements from a multiple of 2*VEC.
    image, c, q, in_c, in_q, value = _tile_values(w_ptr, dy_ptr, dx_ptr, C, K, OHW, BLOCK_C, BLOCK_Q, BLOCK_K)
    zero = tl.zeros((BLOCK_C, BLOCK_Q), dtype=dx_ptr.dtype.element_ty)
    oh = q // OW
    ow = q - oh * OW
    top_left = 2 * oh * W + 2 * ow
    top = tl.max_contiguous(tl.multiple_of(tl.interleave(top_left, top_left + 1), 2 * VEC), 2 * VEC)
    bottom = tl.max_contiguous(tl.multiple_of(top + W, 2 * VEC), 2 * VEC)
    mask = in_c[:, None] & tl.max_constancy(tl.interleave(in_q, in_q), 2 * VEC)[None, :]
    dx_rows = dx_ptr + image * C * H * W + (c * (H * W))[:, None]
    tl.store(dx_rows + top[None, :], tl.interleave(value, zero), mask=mask)
    tl.store(dx_rows + bottom[None, :], tl.interleave(zero, zero), mask=mask)


# `strided_1x1_grad_input_pairs` is for the other stride-2 layers without
# padding (rows of odd length, an odd last row, or the narrow tile): each
# position's value and the zero after it as one 32-bit word, and a word of
# zeros in the row below, into an unfilled dx. Triton keeps a pair of 16-bit
# stores apart even where told that they are contiguous; a word it stores
# whole. Fewer bytes a store than blocks, but no memset (docs/performance-journal.md).
@triton.jit
def strided_1x1_grad_input_pairs(
    w_ptr, dy_ptr, dx_ptr,
    C, K, OHW, OW, H, W, S_H, S_W, P_H, P_W,
    BLOCK_C: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # S = 2, P = 0, H in (2*OH - 1, 2*OH), W in (2*OW - 1, 2*OW), H*W even
    # (catalog.writes_pairs): in 32-bit words, a plane is H*W/2 of them, and
    # position (oh, ow)'s value is the low half of word oh*W + ow. Below it,
    # a word of zeros covers row 2*oh + 1 from column 2*ow, or from 2*ow + 1
    # where W is odd (the row's column 0 is then the word above's zero).
    image, c, q, in_c, in_q, value = _tile_values(w_ptr, dy_ptr, dx_ptr, C, K, OHW, BLOCK_C, BLOCK_Q, BLOCK_K)
    word = value.to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    oh = q // OW
    ow = q - oh * OW
    odd = W % 2
    top = oh * W + ow
    bottom = top + (W + odd) // 2
    in_bottom = in_q & (2 * oh + 1 < H) & (2 * ow + 1 + odd < W)
    plane = H * W // 2
    words = dx_ptr.to(tl.pointer_type(tl.int32)) + image * C * plane + (c * plane)[:, None]
    # streaming stores: dx is not read again by this kernel (1.08x less GPU time on a wide layer)
    tl.store(words + top[None, :], word, mask=in_c[:, None] & in_q[None, :], cache_modifier=".cs")
    tl.store(words + bottom[None, :], tl.zeros_like(word), mask=in_c[:, None] & in_bottom[None, :],
             cache_modifier=".cs")
