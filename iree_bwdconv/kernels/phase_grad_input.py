"""The Triton source of the CUDA kernel for a strided grad_input by stride
phases (`phase_catalog`), grouped or not; a strided transposed
convolution's forward is the same computation. Only `generate` imports
this module, with Triton installed; the package ships the PTX it produced.

Per image and group, dilation 1:
`dx[c, ih, iw] = sum over f, kh, kw of dy[f, oh, ow] * w[f, c, kh, kw]`
where `ih + P_H - kh = oh*S_H` and `iw + P_W - kw = ow*S_W`. Every
position (ih, iw) of one stride phase (ih % S_H, iw % S_W) sums the same
taps, the kh with `kh % S_H == (ih + P_H) % S_H` and the kw alike, so a
program computes one phase's tile: no multiply by an inserted zero, the
window's edges masked on the loads (no padded copy of dy), the values
stored at their stride into dx. All phases of all images and groups are
one launch, where IREE's code runs one dispatch per phase (IREE 3.13 takes
no implicit GEMM over several phases) and pads each phase's window inside
it. A phase without taps stores zeros, so dx needs no fill.
"""

import triton
import triton.language as tl


@triton.jit
def phase_grad_input(
    w_ptr, dy_ptr, dx_ptr,
    G, CG, KG, H, W, OH, OW, KH, KW, S_H, S_W, P_H, P_W,
    BLOCK_C: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # grid: (position tiles of the largest phase, channel tiles of a group,
    # images x groups x phases); dy [n, G*KG, OH, OW], w [G*KG, CG, KH, KW],
    # dx [n, G*CG, H, W].
    phases = S_H * S_W
    z = tl.program_id(2)
    phase = z % phases
    g = (z // phases) % G
    image = (z // phases // G).to(tl.int64)
    ph = phase // S_W
    pw = phase - ph * S_W
    cols = (W - pw + S_W - 1) // S_W
    positions = ((H - ph + S_H - 1) // S_H) * cols
    q = tl.program_id(0) * BLOCK_Q + tl.arange(0, BLOCK_Q)
    in_q = q < positions
    ih = (q // cols) * S_H + ph
    iw = (q % cols) * S_W + pw
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    in_c = c < CG
    f = tl.arange(0, BLOCK_K)
    dy_group = dy_ptr + (image * G + g) * KG * OH * OW
    w_group = w_ptr + g * KG * CG * KH * KW
    acc = tl.zeros((BLOCK_C, BLOCK_Q), dtype=tl.float32)
    for kh in range((ph + P_H) % S_H, KH, S_H):
        oh = (ih + P_H - kh) // S_H
        for kw in range((pw + P_W) % S_W, KW, S_W):
            ow = (iw + P_W - kw) // S_W
            inside = in_q & (ih + P_H >= kh) & (oh < OH) & (iw + P_W >= kw) & (ow < OW)
            for f0 in range(0, KG, BLOCK_K):
                ff = f0 + f
                in_f = ff < KG
                taps = tl.load(w_group + ((ff[None, :] * CG + c[:, None]) * KH + kh) * KW + kw,
                               mask=in_c[:, None] & in_f[None, :], other=0.0)
                window = tl.load(dy_group + (ff * (OH * OW))[:, None] + (oh * OW + ow)[None, :],
                                 mask=in_f[:, None] & inside[None, :], other=0.0)
                acc = tl.dot(taps, window, acc)
    dx_group = dx_ptr + (image * G + g) * CG * H * W
    tl.store(dx_group + (c * (H * W))[:, None] + (ih * W + iw)[None, :], acc.to(dx_ptr.dtype.element_ty),
             mask=in_c[:, None] & in_q[None, :])
