"""A disk cache of compiled .vmfb files that trusts nothing it did not
write for the key it is asked for.

Entries are keyed by the imported graph (its torch-dialect IR, constants
included), the iree-compile flags with the host CPU resolved to IREE's
name and features for it (an entry built for wider vector units must not
run here), the versions of the whole stack and a digest of this package's
code, so a new torch, torch-mlir, IREE or iree-bwdconv (or an edited
checkout) never reuses an old entry.

Each file records its full key and a digest of key and payload: a
truncated, corrupted or foreign file, or one copied over another key, is
reported, removed and recompiled, never loaded. The folder is made private
to the user (0700, files 0600); a folder or file that another user owns or
that others may write is refused with a warning naming it, as ssh and pip
do, and the cache is then not used. Writes go to a temporary file in the
same folder renamed into place, so concurrent processes (DDP ranks) see a
whole entry or none; a writer killed before the rename leaves a temporary
file that the next process to open the cache removes once it is an hour
old. A cache that cannot be written degrades to no cache, with one warning.

Location: `cache_dir` given to the backend, else $IREE_BWDCONV_CACHE_DIR,
else $XDG_CACHE_HOME/iree-bwdconv (~/.cache/iree-bwdconv).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
import os
import stat
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

log = logging.getLogger(__name__)

CACHE_DIR_VARIABLE = "IREE_BWDCONV_CACHE_DIR"
_MAGIC = b"iree-bwdconv vmfb v2\n"
_DIGEST_LENGTH = 64  # hex sha256
_KEY_LENGTH = 64  # hex sha256
_STALE_S = 3600  # a temporary file this old has no live writer
_STACK = ("torch", "torch-mlir", "iree-base-compiler", "iree-base-runtime", "iree-bwdconv")


def default_dir(environ: Mapping[str, str]) -> Path:
    """The cache folder an environment names ($IREE_BWDCONV_CACHE_DIR, else
    iree-bwdconv under $XDG_CACHE_HOME or ~/.cache); read at the edges."""
    configured = environ.get(CACHE_DIR_VARIABLE)
    if configured:
        return Path(configured)
    base = environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "iree-bwdconv"


def digested_files() -> list[Path]:
    """This package's own code and kernels, every subpackage (the plan's
    rules, the patterns) included: what `lowering_digest` reads."""
    root = Path(importlib.import_module("iree_bwdconv").__file__).parent
    kernels = [path for path in (root / "kernels").iterdir() if path.suffix in (".py", ".ptx", ".json")]
    return sorted({*root.rglob("*.py"), *kernels})


@functools.cache
def lowering_digest() -> str:
    """A digest of this package's own code and kernels: an edited pattern or
    rule (a development checkout keeps its version number) must not reuse
    old modules."""
    digest = hashlib.sha256()
    for path in digested_files():
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


def _unsafe(path: Path, info: os.stat_result) -> Optional[str]:
    """Why a file or folder of the cache must not be trusted, or None."""
    if info.st_uid != os.getuid():
        return f"{path} is owned by user {info.st_uid}, not by this user ({os.getuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} may be written by other users (mode {stat.filemode(info.st_mode)})"
    return None


def _digest(key: str, payload: bytes) -> str:
    return hashlib.sha256(key.encode() + b"\0" + payload).hexdigest()


class CompileCache:
    def __init__(self, directory: os.PathLike) -> None:
        self.directory = Path(directory)
        self.hits = 0
        self.misses = 0
        self.corrupt = 0
        self._usable: Optional[bool] = None  # decided on first use
        self._writable = True

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.vmfb"

    def usable(self) -> bool:
        """Whether the folder is ours alone (made so if it is new); stale
        temporary files removed on the way. Decided once."""
        if self._usable is None:
            self._usable = self._open()
        return self._usable

    def _open(self) -> bool:
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            reason = _unsafe(self.directory, self.directory.stat())
        except OSError as err:
            reason = f"{self.directory} cannot be made ({err})"
        if reason:
            log.warning("iree-bwdconv: not using the compile cache: %s", reason)
            return False
        now = time.time()
        for partial in self.directory.glob(".*.tmp"):
            try:
                if now - partial.stat().st_mtime > _STALE_S:
                    partial.unlink()
            except OSError:
                pass  # another process's, or a read-only folder
        return True

    def _drop(self, path: Path, why: str) -> None:
        log.warning("iree-bwdconv: cache entry %s %s; removing it and recompiling", path, why)
        self.corrupt += 1
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only cache keeps it; it is never loaded

    def load(self, key: str) -> Optional[bytes]:
        """The entry's payload, or None when absent, unreadable, not ours or
        not written for `key`."""
        if not self.usable():
            return None
        path = self.path(key)
        try:
            with path.open("rb") as f:
                reason = _unsafe(path, os.fstat(f.fileno()))
                data = f.read() if reason is None else b""
        except FileNotFoundError:
            return None
        except OSError as err:
            log.warning("iree-bwdconv: cache entry %s unreadable (%s); recompiling", path, err)
            self.corrupt += 1
            return None
        if reason:
            log.warning("iree-bwdconv: cache entry refused: %s; recompiling", reason)
            self.corrupt += 1
            return None
        header = len(_MAGIC) + _DIGEST_LENGTH + 1 + _KEY_LENGTH + 1
        digest = data[len(_MAGIC):len(_MAGIC) + _DIGEST_LENGTH].decode("ascii", "replace")
        stored_key = data[len(_MAGIC) + _DIGEST_LENGTH + 1:header - 1].decode("ascii", "replace")
        payload = data[header:]
        if not data.startswith(_MAGIC) or digest != _digest(stored_key, payload):
            self._drop(path, "is corrupted")
            return None
        if stored_key != key:
            self._drop(path, f"holds the module of another key ({stored_key[:16]}...)")
            return None
        return payload

    def store(self, key: str, payload: bytes) -> None:
        if not (self.usable() and self._writable):
            return
        blob = _MAGIC + _digest(key, payload).encode() + b"\n" + key.encode() + b"\n" + payload
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".tmp", dir=self.directory)
        except OSError as err:  # a read-only or full disk costs speed, not correctness
            self._writable = False
            log.warning("iree-bwdconv: the compile cache %s cannot be written (%s); compiling without it",
                        self.directory, err)
            return
        try:
            with os.fdopen(fd, "wb") as f:  # mkstemp makes it 0600
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
        except OSError as err:
            log.warning("iree-bwdconv: could not write cache entry in %s (%s)", self.directory, err)
        return payload
