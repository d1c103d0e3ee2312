"""max_pool2d's backward as a gather by stride phase (`pool_backward`):
equal to torch's own kernel, ties and padding and ceil_mode included, and
what our backend gets in place of torch's scatter_add decomposition."""

from __future__ import annotations

import copy
import itertools

import pytest
import torch
from torch import nn
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

import iree_bwdconv
from iree_bwdconv import lowering
from iree_bwdconv.torch_compile.pool_backward import max_pool2d_with_indices_backward

aten = torch.ops.aten


def _configs():
    for k, s, p, d, ceil, size in itertools.product((1, 2, 3, 4), (1, 2, 3), (0, 1, 2), (1, 2), (False, True),
                                                     ((5, 7), (8, 8), (2, 3), (9, 4))):
        if p <= k // 2:
            yield k, s, p, d, ceil, size


def test_equals_torchs_kernel_everywhere():
    torch.manual_seed(0)
    checked = 0
    for k, s, p, d, ceil, (h, w) in _configs():
        x = torch.randn(2, 3, h, w, dtype=torch.float64)
        x = torch.where(torch.rand_like(x) < 0.2, 0.0, x)  # ties: the first maximum holds the index
        try:
            out, index = aten.max_pool2d_with_indices(x, [k, k], [s, s], [p, p], [d, d], ceil)
        except RuntimeError:  # the window does not fit: no forward, no backward
            continue
        grad = torch.randn_like(out)
        args = (grad, x, [k, k], [s, s], [p, p], [d, d], ceil, index)
        want = aten.max_pool2d_with_indices_backward(*args)
        assert torch.equal(max_pool2d_with_indices_backward(*args), want), (k, s, p, d, ceil, h, w)
        checked += 1
    assert checked > 300


@pytest.mark.parametrize("kernel, stride, padding, dilation, shape", [
    ((3, 2), [2, 1], (1, 0), (1, 2), (3, 9, 6)),         # unbatched, a different window per dim
    ((2, 4), [3, 2], (0, 2), (2, 1), (1, 2, 11, 10)),
    ((3, 3), [], (1, 1), (1, 1), (2, 2, 7, 7)),          # no stride: the kernel's
    ((1, 1), [3, 3], (0, 0), (1, 1), (1, 2, 7, 8)),      # phases no tap reaches: zeros
])
def test_uneven_windows(kernel, stride, padding, dilation, shape):
    x = torch.randn(*shape, dtype=torch.float64)
    out, index = aten.max_pool2d_with_indices(x, kernel, stride, padding, dilation, False)
    args = (torch.randn_like(out), x, kernel, stride, padding, dilation, False, index)
    assert torch.equal(max_pool2d_with_indices_backward(*args), aten.max_pool2d_with_indices_backward(*args))


def test_half_precision_sums_in_float32():
    torch.manual_seed(1)
    x = torch.randn(2, 3, 8, 8, dtype=torch.float16)
    out, index = aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 1], False)
    grad = torch.randn_like(out)
    got = max_pool2d_with_indices_backward(grad, x, [3, 3], [2, 2], [1, 1], [1, 1], False, index)
    want = aten.max_pool2d_with_indices_backward(grad.double(), x.double(), [3, 3], [2, 2], [1, 1], [1, 1], False,
                                                 index)
    assert got.dtype == torch.float16
    # Up to 4 windows meet at a position: one rounding of their f32 sum.
    assert (got.double() - want).abs().max() <= want.abs().max() * torch.finfo(torch.float16).eps


def test_the_backward_graph_gathers_instead_of_scattering():
    graphs = []

    def keep(gm, _):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    traced = torch.compile(nn.MaxPool2d(3, 2, 1), backend=aot_autograd(fw_compiler=keep, bw_compiler=keep,
                                                                       decompositions=lowering.decompositions()))
    traced(torch.randn(1, 2, 8, 8, requires_grad=True)).sum().backward()
    backward_ops = {str(n.target) for n in graphs[-1].graph.nodes if n.op == "call_function"}
    assert not any("scatter" in op or "index_put" in op or "max_pool2d_with_indices_backward" in op
                   for op in backward_ops), backward_ops
    torch._dynamo.reset()


@pytest.mark.parametrize("pool", [nn.MaxPool2d(3, 2, 1), nn.MaxPool2d(2)], ids=["resnet_stem_3x3_s2_p1", "unet_2x2"])
def test_compiled_backward_against_float64(pool, tmp_path):
    torch.manual_seed(0)
    x = torch.randn(2, 4, 16, 16, requires_grad=True)
    backend = iree_bwdconv.backend(fallback="raise", cache_dir=str(tmp_path))
    y = torch.compile(copy.deepcopy(pool), backend=backend)(x)
    grad = torch.randn_like(y)
    y.backward(grad)
    exact = x.detach().double().requires_grad_()
    pool(exact).backward(grad.double())
    assert (x.grad.double() - exact.grad).abs().max() <= 4 * torch.finfo(torch.float32).eps * exact.grad.abs().max()
    torch._dynamo.reset()
