# lit configuration: FileCheck tests of our rewrite patterns, driven through
# `iree-bwdconv opt`, one .mlir file per pattern.
import os
import shutil

import lit.formats

config.name = "iree-bwdconv"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PATH"] = os.environ.get("PATH", "")
# The Python FileCheck port installs as `filecheck`.
config.substitutions.append(("FileCheck", shutil.which("filecheck") or "filecheck"))
