"""The layouts read from a convolution's indexing maps against the letters
in the names of every named linalg convolution of the pinned IREE (a
depthwise `c` is a group, its `m` an output channel), with strides and
dilations; and what is not read as one, with the reason."""

from __future__ import annotations

import re

import pytest
from iree.compiler import ir
from iree.compiler.dialects import linalg

from iree_bwdconv.compiler import iree_ir
from iree_bwdconv.plugin.convolution_layouts import ConvolutionLayouts, convolution_layouts

NAMED = re.compile(r"^(depthwise_)?conv_([123])d_([a-z]+)_([a-z]+)$")
OPS = sorted(name for name in dir(linalg) if NAMED.match(name))


def _expected(name: str, strides: list[int], dilations: list[int]) -> ConvolutionLayouts:
    depthwise, _, input_, filter_ = NAMED.match(name).groups()
    if depthwise:
        input_, filter_ = input_.replace("c", "g"), filter_.replace("c", "g").replace("m", "f")
        output = input_ + "f" * ("f" in filter_)
    else:
        output = input_.replace("c", "f")
    return ConvolutionLayouts(input_, filter_, output, tuple(strides), tuple(dilations))


def _op_text(name: str, strides: list[int], dilations: list[int], body: str = "") -> str:
    expected = _expected(name, strides, dilations)
    types = [f"tensor<{'?x' * len(layout)}f32>" for layout in (expected.input, expected.filter, expected.output)]
    attrs = (f"{{dilations = dense<{dilations}> : tensor<{len(dilations)}xi64>, "
             f"strides = dense<{strides}> : tensor<{len(strides)}xi64>}}")
    return (f"func.func @f(%x: {types[0]}, %w: {types[1]}, %y: {types[2]}) -> {types[2]} {{\n"
            f"  %r = linalg.{name} {attrs} ins(%x, %w : {types[0]}, {types[1]}) outs(%y : {types[2]}) -> {types[2]}\n"
            f"  return %r : {types[2]}\n}}\n")


def _read(text: str, op_name: str):
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        (op,) = iree_ir.ops_where(module, lambda op: op.name == op_name)
        return convolution_layouts(op)


def test_every_named_convolution_is_read():
    assert len(OPS) >= 19  # conv_{1,2,3}d in each layout, depthwise with and without a multiplier


@pytest.mark.parametrize("name", OPS)
def test_named_convolution_layouts_are_its_name(name: str):
    rank = int(NAMED.match(name).group(2))
    strides, dilations = [1, 2, 3][:rank], [2, 1, 3][:rank]
    assert _read(_op_text(name, strides, dilations), f"linalg.{name}") == _expected(name, strides, dilations)


GENERIC = """
#input = affine_map<(n, oh, ow, g, f, kh, kw, c) -> (n, oh + kh * 2, ow + kw, g, c)>
#filter = affine_map<(n, oh, ow, g, f, kh, kw, c) -> (kh, kw, c, g, f)>
#output = affine_map<(n, oh, ow, g, f, kh, kw, c) -> (n, oh, ow, g, f)>
func.func @f(%x: tensor<2x12x14x4x2xf32>, %w: tensor<3x3x2x4x1xf32>, %y: tensor<2x8x12x4x1xf32>) -> tensor<2x8x12x4x1xf32> {
  %r = linalg.generic {indexing_maps = [#input, #filter, #output],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel",
                                         "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<2x12x14x4x2xf32>, tensor<3x3x2x4x1xf32>) outs(%y : tensor<2x8x12x4x1xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = BODY
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x8x12x4x1xf32>
  return %r : tensor<2x8x12x4x1xf32>
}
"""


def test_a_generic_convolution_is_read_as_stablehlo_writes_a_grouped_one():
    got = _read(GENERIC.replace("BODY", "arith.mulf %a, %b : f32"), "linalg.generic")
    assert got == ConvolutionLayouts("nhwgc", "hwcgf", "nhwgf", (1, 1), (2, 1))


@pytest.mark.parametrize("body, why", [("arith.maximumf %a, %b : f32", "not a sum of products"),
                                       ("arith.mulf %a, %a : f32", "not a sum of products")])
def test_a_generic_that_does_not_multiply_input_by_filter_is_not_read(body: str, why: str):
    assert why in _read(GENERIC.replace("BODY", body), "linalg.generic")


@pytest.mark.parametrize("operand, reads", [
    ("input", "(n, oh + kh * 2, ow + kw, g, g)"), ("input", "(n, oh + kh * 2, ow + kw, n, c)"),
    ("filter", "(kh, kw, f, g, f)"), ("output", "(n, oh, ow, g, g)"),
])
def test_a_generic_that_reads_an_operand_by_one_loop_twice_is_refused(operand: str, reads: str):
    """No layout is read where one loop indexes two dims of an operand (the
    sizes dynamic, so that the op verifies): it is not a convolution of
    one input, filter and output that we could rearrange."""
    text = re.sub(r"tensor<\d+x\d+x\d+x\d+x\d+xf32>", "tensor<?x?x?x?x?xf32>",
                  GENERIC.replace("BODY", "arith.mulf %a, %b : f32"))
    text = re.sub(rf"(#{operand} = affine_map<\(n, oh, ow, g, f, kh, kw, c\) -> )\([^)]*\)", rf"\g<1>{reads}", text)
    assert reads in text
    assert isinstance(_read(text, "linalg.generic"), str)


def test_a_matmul_is_not_a_convolution():
    text = ("func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %c: tensor<4x3xf32>) -> tensor<4x3xf32> {\n"
            "  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%c : tensor<4x3xf32>)"
            " -> tensor<4x3xf32>\n  return %r : tensor<4x3xf32>\n}\n")
    assert _read(text, "linalg.matmul") == "linalg.matmul is not a convolution"
