"""Rewrites the PTX of the kernels of `catalog` and `phase_catalog`, and
their manifest, from the Triton sources beside them. Needs Triton (3.9.0 wrote the shipped files), no
GPU and none of this package's dependencies:

    python iree_bwdconv/kernels/generate.py

Triton appends two scratch pointers to every kernel's parameters; these
kernels use neither, and IREE passes only the bindings and constants that
the dispatch declares, so they are cut from the entry point.
"""

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import os  # noqa: E402

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # the default of the Triton that wrote the shipped files
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

import catalog  # noqa: E402
import phase_catalog  # noqa: E402
from phase_grad_input import phase_grad_input  # noqa: E402
from strided_1x1_grad_input import (  # noqa: E402
    strided_1x1_grad_input, strided_1x1_grad_input_blocks, strided_1x1_grad_input_pairs)

SM = 80  # IREE 3.13's CUDA target (sm_80 PTX runs on Hopper too)
PTX_VERSION = 78  # CUDA 11.8 drivers and later load it


def _without_scratch(ptx: str, name: str, arguments: int) -> str:
    params = re.findall(rf"\.param \.(\w+)(?: \.ptr \.global \.align \d+)? {name}_param_(\d+)", ptx)
    scratch = [index for kind, index in params[3 + arguments:]]
    if len(scratch) != 2 or len(params) != 3 + arguments + 2:
        raise RuntimeError(f"{name}: unexpected parameters {params}")
    for index in scratch:
        if ptx.count(f"{name}_param_{index}") != 1:
            raise RuntimeError(f"{name}: parameter {index} is used")
        ptx = re.sub(rf",\n\t\.param \.u64 \.ptr \.global \.align \d+ {name}_param_{index}", "", ptx)
    return ptx


def compile_variant(dtype: str, row_alignment: int, tile: tuple[int, int, int, int, int],
                    form: str = "") -> tuple[str, dict]:
    block_c, block_q, block_k, warps, stages = tile
    name = catalog.variant_name(dtype, row_alignment, block_c, form)
    block_vector = catalog.BLOCK_FORMS.get(form, 0)
    kernel = (strided_1x1_grad_input_blocks if block_vector else
              strided_1x1_grad_input_pairs if form == catalog.PAIRS else strided_1x1_grad_input)
    pointer = f"*{catalog.DTYPES[dtype]}"
    signature = {"w_ptr": pointer, "dy_ptr": pointer, "dx_ptr": pointer, **{a: "i32" for a in catalog.ARGUMENTS}}
    constants = {"BLOCK_C": block_c, "BLOCK_Q": block_q, "BLOCK_K": block_k}
    if block_vector:
        constants["VEC"] = block_vector
    signature.update({key: "constexpr" for key in constants})
    hints = {(i,): [["tt.divisibility", 16]] for i in range(3)}
    hints[(3 + catalog.ARGUMENTS.index("C"),)] = [["tt.divisibility", catalog.CHANNEL_MULTIPLE]]
    if row_alignment > 1:
        hints[(3 + catalog.ARGUMENTS.index("OHW"),)] = [["tt.divisibility", row_alignment]]
    if block_vector:  # W = 2*OW, OW a multiple of the vector
        hints[(3 + catalog.ARGUMENTS.index("W"),)] = [["tt.divisibility", 2 * block_vector]]
    return _compiled(kernel, name, len(catalog.ARGUMENTS), signature, constants, hints, tile)


def compile_phase_variant(dtype: str, tile: tuple[int, int, int, int, int]) -> tuple[str, dict]:
    block_c, block_q, block_k, _, _ = tile
    pointer = f"*{phase_catalog.DTYPES[dtype]}"
    signature = {"w_ptr": pointer, "dy_ptr": pointer, "dx_ptr": pointer,
                 **{a: "i32" for a in phase_catalog.ARGUMENTS}}
    constants = {"BLOCK_C": block_c, "BLOCK_Q": block_q, "BLOCK_K": block_k}
    signature.update({key: "constexpr" for key in constants})
    hints = {(i,): [["tt.divisibility", 16]] for i in range(3)}
    return _compiled(phase_grad_input, phase_catalog.variant_name(dtype, block_c), len(phase_catalog.ARGUMENTS),
                     signature, constants, hints, tile)


def _compiled(kernel, name: str, arguments: int, signature: dict, constants: dict, hints: dict,
              tile: tuple[int, int, int, int, int]) -> tuple[str, dict]:
    block_c, block_q, block_k, warps, stages = tile
    source = triton.compiler.ASTSource(fn=kernel, signature=signature, constexprs=constants, attrs=hints)
    compiled = triton.compile(source, target=GPUTarget("cuda", SM, 32),
                              options={"num_warps": warps, "num_stages": stages, "ptx_version": PTX_VERSION})
    ptx = _without_scratch(compiled.asm["ptx"], kernel.__name__, arguments).replace(kernel.__name__, name)
    entry = {"ptx": f"{name}.ptx", "workgroup_size": [32 * warps, 1, 1], "shared_memory": compiled.metadata.shared,
             "block": [block_c, block_q, block_k], "triton": triton.__version__}
    return ptx, entry


def main() -> None:
    manifest = {}
    for tile, dtype, alignment, form in catalog.VARIANTS:
        ptx, entry = compile_variant(dtype, alignment, tile, form)
        (HERE / entry["ptx"]).write_text(ptx)
        manifest[catalog.variant_name(dtype, alignment, tile[0], form)] = entry
    for tile, dtype in phase_catalog.VARIANTS:
        ptx, entry = compile_phase_variant(dtype, tile)
        (HERE / entry["ptx"]).write_text(ptx)
        manifest[phase_catalog.variant_name(dtype, tile[0])] = entry
    catalog.MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
