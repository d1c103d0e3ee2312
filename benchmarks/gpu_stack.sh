#!/bin/bash
# The compiler stack for a GPU machine with Python 3.12, its own torch and
# no package index: run here, copy .whl/ there, then run there
#   bash benchmarks/gpu_stack.sh install
# and train with `iree-bwdconv train --device cuda ...`. The two large
# wheels are split into parts under 64 MiB (.whl/a-d), for copies that
# take files of a bounded size; `install` joins them.
set -euo pipefail
case "${1:-}" in
  download)
    rm -rf .whl/a .whl/b .whl/c .whl/d && mkdir -p .whl/a .whl/b .whl/c .whl/d
    tmp=$(mktemp -d)
    ./dev python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d "$tmp" \
      iree-base-compiler==3.13.0 iree-base-runtime==3.13.0 torch-mlir==20261001 ml_dtypes tqdm
    split -b 42m "$tmp"/iree_base_compiler-*.whl .whl/a/compiler.part. && mv .whl/a/compiler.part.ab .whl/b/
    split -b 41m "$tmp"/torch_mlir-*.whl .whl/c/torchmlir.part. && mv .whl/c/torchmlir.part.ab .whl/d/
    cp "$tmp"/ml_dtypes-*.whl "$tmp"/tqdm-*.whl .whl/a/ && cp "$tmp"/iree_base_runtime-*.whl .whl/
    rm -rf "$tmp" ;;
  install)
    tmp=$(mktemp -d)
    cat .whl/a/compiler.part.* .whl/b/compiler.part.* > "$tmp/iree_base_compiler-3.13.0-cp312-abi3-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
    cat .whl/c/torchmlir.part.* .whl/d/torchmlir.part.* > "$tmp/torch_mlir-20261001-cp312-abi3-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
    python3 -m pip install --quiet --no-deps "$tmp"/*.whl .whl/a/*.whl .whl/iree_base_runtime-*.whl
    python3 -m pip install --quiet --no-deps --no-build-isolation -e .
    rm -rf "$tmp"
    python3 -c "import torch, iree_bwdconv; print('torch', torch.__version__, torch.cuda.get_device_name())" ;;
  *) echo "usage: bash benchmarks/gpu_stack.sh download|install" >&2; exit 2 ;;
esac
