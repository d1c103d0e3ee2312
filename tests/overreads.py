"""What `mma_padding` finds in IREE's CUDA code for a module compiled as
given (no rewrite of ours), for the tests of the overread fault's steps."""

from __future__ import annotations

import tempfile
from pathlib import Path

from iree_bwdconv.compiler import iree_faults, mma_padding, pipeline


def found_as_given(text: str) -> list[mma_padding.Overread]:
    with tempfile.TemporaryDirectory() as folder:
        configured, binaries = Path(folder, "configured"), Path(folder, "binaries")
        flags = (*iree_faults.flags_for("cuda"), f"{pipeline.CONFIGURATIONS_FLAG}={configured}",
                 f"{pipeline.BINARIES_FLAG}={binaries}")
        pipeline.iree_compile(text, "cuda", flags, as_given=True)
        return mma_padding.overreads_in(configured, binaries)
