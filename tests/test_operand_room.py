"""$IREE_BWDCONV_OPERAND_ROOM (`iree_bwdconv.compiler.operand_room`): room after the
f16/bf16 operands of CUDA's contractions, so that IREE's reads one row
past a padded operand stay in its buffer. Whether memcheck then finds
nothing is checked on a GPU (docs/performance-journal.md, "Reads past an
operand's end"); here, what the rewrite emits, that it compiles, and that
it keeps the numbers."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from iree.compiler import ir

from iree_bwdconv import functional, reference
from iree_bwdconv.compiler import operand_room, pipeline
from iree_bwdconv.run import runtime
from iree_bwdconv import options as lowering_options
from iree_bwdconv.compiler.iree_ir import ops_where

from specs import spec_nd

# gpu_check's 3x3_s2_g2_odd_f16, which read past grad_output without room.
_GROUPED = dict(batch=6, channels=64, out_channels=96, sizes=(29, 29), kernel=(3, 3), stride=(2, 2),
                padding=(0, 0), groups=2, mask=(True, True, False))


@pytest.fixture
def room(monkeypatch):
    monkeypatch.setenv(operand_room.VARIABLE, "1")
    functional.clear_cache()
    yield
    functional.clear_cache()


_DYN = operand_room.DYNAMIC


def _dynamic_batch(spec):
    return dataclasses.replace(spec, grad_output_shape=(None, *spec.grad_output_shape[1:]),
                               input_shape=(None, *spec.input_shape[1:]))


@pytest.mark.parametrize("shape, roomy", [([6, 96, 15, 15], [7, 96, 15, 15]), ([1, 48, 484], [1, 49, 484]),
                                          ([1, 1, 5], [1, 1, 6]), ([_DYN, 96, 15, 15], [_DYN, 96, 15, 15])])
def test_room_is_one_slice_of_the_first_dim_of_more_than_one_element(shape, roomy):
    assert operand_room.roomy_shape(shape) == roomy


def test_a_dynamic_dim_counts_as_more_than_one_element():
    assert operand_room.roomy_axis([1, _DYN, 5]) == 1 and operand_room.roomy_axis([_DYN, 1, 5]) == 0


def test_every_half_operand_of_a_contraction_is_a_slice_of_a_kept_larger_buffer(room):
    text = functional.lowered(spec_nd(**_GROUPED), target="cuda")
    with ir.Context():
        module = ir.Module.parse(text)
        barriers = ops_where(module, lambda op: op.name == "util.optimization_barrier")
        contractions = ops_where(module, lambda op: op.name == "linalg.generic"
                                 and "reduction" in str(op.attributes["iterator_types"]))
        read = set()
        for op in contractions:
            for operand in list(op.operands)[:len(op.operands) - len(op.results)]:
                if "f16" not in str(operand.type):
                    continue
                slice_op = operand.owner
                assert slice_op.name == "tensor.extract_slice"
                kept = slice_op.operands[0].owner
                assert kept.name == "util.optimization_barrier"
                placed = kept.operands[0].owner
                assert placed.name == "tensor.insert_slice" and placed.operands[1].owner.name == "tensor.empty"
                larger = ir.RankedTensorType(placed.result.type).shape
                assert larger == operand_room.roomy_shape(ir.RankedTensorType(operand.type).shape)
                read.add(str(kept.result))
    assert contractions and len(barriers) == len(read)  # one copy per value, however many readers
    pipeline.iree_compile(text, "cuda")


def test_off_unless_asked_for_and_only_for_cuda(monkeypatch, room):
    assert "util.optimization_barrier" in functional.lowered(spec_nd(**_GROUPED), target="cuda")
    assert "util.optimization_barrier" not in functional.lowered(spec_nd(**_GROUPED), target="gfx942")
    f32 = functional.lowered(spec_nd(**dict(_GROUPED, dtype=torch.float32)), target="cuda")
    assert "util.optimization_barrier" not in f32  # no MMA padding in f32
    monkeypatch.delenv(operand_room.VARIABLE)
    assert "util.optimization_barrier" not in functional.lowered(spec_nd(**_GROUPED), target="cuda")


def test_a_setting_other_than_0_or_1_is_refused(monkeypatch):
    monkeypatch.setenv(operand_room.VARIABLE, "yes")
    with pytest.raises(ValueError, match=f"{operand_room.VARIABLE}='yes'"):
        lowering_options.from_environment("cuda")


def test_room_keeps_the_numbers():
    """The rewrite is the same on any target: on the CPU, a grouped f16
    layer's gradients with room are eager's within f16's bound."""
    spec = spec_nd(**_GROUPED)
    text = operand_room.give(functional.lowered(spec, target="cpu"))
    assert text.count("util.optimization_barrier") >= 2
    generator = torch.Generator().manual_seed(0)
    dy, x, w = (torch.randn(shape, generator=generator).half()
                for shape in (spec.grad_output_shape, spec.input_shape, spec.weight_shape))
    grad_input, grad_weight = runtime.run(pipeline.iree_compile(text, "cpu"), [dy, x, w], "cpu")
    arguments = [None, [2, 2], [0, 0], [1, 1], False, [0, 0], 2, [True, True, False]]
    comparisons = reference.compare([grad_input, grad_weight, None], dy, x, w, arguments)
    assert all(c.ok for c in comparisons), comparisons


def test_a_module_that_calls_our_kernel_is_linked_and_given_room(room):
    """`lower_torch` runs both steps in IREE's bindings on one parse: the
    1x1 kernel's extern dispatch and room for grad_weight's operands."""
    spec = spec_nd(2, 64, 128, (28, 28), (1, 1), (2, 2), (0, 0), mask=(True, True, False))
    text = functional.lowered(spec, target="cuda")
    assert text.count("hal.dispatch.extern") == 1 and "iree_bwdconv.kernel" not in text
    assert "util.optimization_barrier" in text
    pipeline.iree_compile(text, "cuda")


def test_a_dynamic_batch_gets_room_one_image_more_than_it_has(room):
    """The copy's buffer is sized at run time: the batch as `tensor.dim`,
    plus one."""
    text = functional.lowered(_dynamic_batch(spec_nd(**_GROUPED)), target="cuda")
    with ir.Context():
        module = ir.Module.parse(text)
        barriers = ops_where(module, lambda op: op.name == "util.optimization_barrier")
        dynamic = [op for op in barriers if str(op.operands[0].type).startswith("tensor<?x")]
        assert dynamic
        for kept in dynamic:
            empty = kept.operands[0].owner.operands[1].owner
            assert empty.name == "tensor.empty"
            plus_one = empty.operands[0].owner
            assert plus_one.name == "arith.addi" and plus_one.operands[0].owner.name == "tensor.dim"
            assert "1 : index" in str(plus_one.operands[1].owner)
    pipeline.iree_compile(text, "cuda")


def test_room_keeps_the_numbers_of_a_dynamic_batch():
    spec = _dynamic_batch(spec_nd(**_GROUPED))
    text = operand_room.give(functional.lowered(spec, target="cpu"))
    assert "tensor<?x" in text and text.count("util.optimization_barrier") >= 2
    vmfb = pipeline.iree_compile(text, "cpu")
    arguments = [None, [2, 2], [0, 0], [1, 1], False, [0, 0], 2, [True, True, False]]
    generator = torch.Generator().manual_seed(0)
    w = torch.randn(spec.weight_shape, generator=generator).half()
    for batch in (3, 6):
        dy, x = (torch.randn([batch, *shape[1:]], generator=generator).half()
                 for shape in (spec.grad_output_shape, spec.input_shape))
        grad_input, grad_weight = runtime.run(vmfb, [dy, x, w], "cpu")
        comparisons = reference.compare([grad_input, grad_weight, None], dy, x, w, arguments)
        assert all(c.ok for c in comparisons), (batch, comparisons)
