"""The forward convolution of 1x1 kernels in f32 on the GPU: the forward
pattern's im2col gather and named matmul (`iree_bwdconv/patterns/convolution_forward.py`)
against torch-mlir's named convolution of the same layer (the pattern's
GPU rule switched off) and torch eager, on ResNet-50's strided projections
and a stride-1 control. Every training step runs these beside the gradients.

    ./dev python -m benchmarks.forward_gpu prepare .bench-forward          # here
    python3 benchmarks/run_on_gpu.py .bench-forward results.json           # there
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from unittest import mock

import torch

from iree_bwdconv import lowering
from iree_bwdconv import options as lowering_options
from iree_bwdconv.plan import targets

from . import modules

# name, n, c, k, hw, stride
LAYERS = (
    ("R50 1x1 s2 n32 c256 k512 56x56 (projection)", 32, 256, 512, 56, 2),
    ("R50 1x1 s2 n32 c512 k1024 28x28 (projection)", 32, 512, 1024, 28, 2),
    ("R50 1x1 s2 n32 c1024 k2048 14x14 (projection)", 32, 1024, 2048, 14, 2),
    ("1x1 s2 n8 c64 k128 112x112", 8, 64, 128, 112, 2),
    ("R50 1x1 s1 n32 c256 k64 56x56 (control)", 32, 256, 64, 56, 1),
)


class Conv(torch.nn.Module):
    def __init__(self, stride: int) -> None:
        super().__init__()
        self.stride = stride

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(x, w, None, self.stride)


def prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for index, (name, n, c, k, hw, stride) in enumerate(LAYERS):
        x, w = torch.zeros(n, c, hw, hw), torch.zeros(k, c, 1, 1)
        inputs = [f"{n}x{c}x{hw}x{hw}xf32", f"{k}x{c}x1x1xf32"]
        cuda = lowering_options.from_environment("cuda")
        ours = lowering.lower(Conv(stride), x, w, target=cuda)
        with mock.patch.object(targets, "one_tap_strided_f32_on_gpu", lambda *args: False):
            named = lowering.lower(Conv(stride), x, w, target=cuda)
        for variant, text in (("ours", ours), ("named-conv", named)):
            manifest.append(modules.compiled_entry(folder, text, "cuda", shape=name, mask="forward", variant=variant,
                                                   vmfb=f"f{index}-{variant}.vmfb", inputs=inputs))
        eager = dict(n=n, c=c, k=k, hw=[hw, hw], kernel=1, stride=stride, padding=0, groups=1, dtype="f32")
        manifest.append(dict(shape=name, mask="forward", variant="torch-eager", eager=eager))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    prepare(Path(sys.argv[2]))
