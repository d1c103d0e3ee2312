"""Marks made in torch-mlir's context become IREE optimization barriers."""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import func

from iree_bwdconv import barriers, lowering
from iree_bwdconv import contraction_forms as forms
from iree_bwdconv import linalg_builders as lb


def _module(marked: bool) -> str:
    """main(w[8, 4]) -> its transpose, the transpose marked where `marked`."""
    with lowering.new_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            @func.FuncOp.from_py_func(lb.tensor_type([8, 4], lb.element_type("f16")), name="main")
            def main(w):
                transposed = forms.transpose(w, [1, 0])
                return barriers.mark(transposed) if marked else transposed
        return str(module)


def test_a_marked_result_goes_behind_a_barrier_and_the_mark_goes():
    text = barriers.insert_barriers(_module(marked=True))
    assert barriers.ATTRIBUTE not in text
    (barrier,) = [line for line in text.splitlines() if "util.optimization_barrier" in line]
    assert "tensor<4x8xf16>" in barrier
    returned = next(line for line in text.splitlines() if line.strip().startswith("return"))
    assert barrier.split("=", 1)[0].strip() in returned  # the barrier's result is what is used


def test_unmarked_text_is_left_as_it_is():
    text = _module(marked=False)
    assert barriers.insert_barriers(text) == text
