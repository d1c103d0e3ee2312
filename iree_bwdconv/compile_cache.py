"""A disk cache of compiled .vmfb files.

Entries are keyed by the imported graph (its torch-dialect IR, constants
included), the iree-compile flags and the versions of the whole stack, and a
digest of this package's code, so a new torch, torch-mlir, IREE or
iree-bwdconv (or an edited checkout) never reuses an old entry. Each
file carries a digest of its payload: a truncated, corrupted or foreign file
is reported, removed and recompiled, never loaded. Writes go to a temporary
file in the same folder and are renamed into place, so concurrent processes
(DDP ranks) see a whole entry or none.

Location: `cache_dir` given to the backend, else $IREE_BWDCONV_CACHE_DIR,
else $XDG_CACHE_HOME/iree-bwdconv (~/.cache/iree-bwdconv).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Callable, Optional, Sequence

log = logging.getLogger(__name__)

CACHE_DIR_VARIABLE = "IREE_BWDCONV_CACHE_DIR"
_MAGIC = b"iree-bwdconv vmfb v1\n"
_DIGEST_LENGTH = 64  # hex sha256
_STACK = ("torch", "torch-mlir", "iree-base-compiler", "iree-base-runtime", "iree-bwdconv")


def default_dir() -> Path:
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "iree-bwdconv"


@functools.cache
def lowering_digest() -> str:
    """A digest of this package's own code and kernels: an edited pattern (a
    development checkout keeps its version number) must not reuse old modules."""
    digest = hashlib.sha256()
    root = Path(__file__).parent
    patterns_dir = Path(importlib.import_module("iree_bwdconv.patterns").__file__).parent
    kernels = [path for path in (root / "kernels").iterdir() if path.suffix in (".py", ".ptx", ".json")]
    for path in sorted([*root.glob("*.py"), *patterns_dir.glob("*.py"), *kernels]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def stack_versions() -> tuple[str, ...]:
    versions = [f"iree-bwdconv-code=={lowering_digest()}"]
    for name in _STACK:
        try:
            versions.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name}==unknown")
    return tuple(versions)


def cache_key(graph_ir: str, flags: Sequence[str], extra: Sequence[str] = ()) -> str:
    digest = hashlib.sha256()
    for part in (*stack_versions(), *flags, *extra, graph_ir):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class CompileCache:
    def __init__(self, directory: Optional[os.PathLike] = None) -> None:
        self.directory = Path(directory) if directory is not None else default_dir()
        self.hits = 0
        self.misses = 0
        self.corrupt = 0

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.vmfb"

    def load(self, key: str) -> Optional[bytes]:
        """The entry's payload, or None when absent or unreadable."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            log.warning("iree-bwdconv: cache entry %s unreadable (%s); recompiling", path, err)
            self.corrupt += 1
            return None
        header = len(_MAGIC) + _DIGEST_LENGTH + 1
        payload = data[header:]
        digest = data[len(_MAGIC) : header - 1].decode("ascii", "replace")
        if not data.startswith(_MAGIC) or digest != hashlib.sha256(payload).hexdigest():
            log.warning("iree-bwdconv: cache entry %s is corrupted; removing it and recompiling", path)
            self.corrupt += 1
            path.unlink(missing_ok=True)
            return None
        return payload

    def store(self, key: str, payload: bytes) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        blob = _MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_or_compile(self, key: str, compile_fn: Callable[[], bytes]) -> bytes:
        cached = self.load(key)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        payload = compile_fn()
        try:
            self.store(key, payload)
        except OSError as err:  # a read-only or full disk costs speed, not correctness
            log.warning("iree-bwdconv: could not write cache entry in %s (%s)", self.directory, err)
        return payload
