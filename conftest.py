"""What tests/ and e2e_tests/ share: iree-compile runs once per distinct
module in a test session, and the long matrices run whole only with
`--full` (`e2e_tests/tiers.py`).

Three quarters of the suite's time is iree-compile, and one compile in ten
repeated another: a grad_input form forced by one test is the form the
rule picks in another, and the same GPU module is compiled by the tests of
its forms and of its targets. iree-compile is deterministic, so each
result is kept by everything that decides it (the module, the target, the
flags, the stack's versions) in a folder the session's workers share.
Failures are not kept, and a compile whose flags dump files for the caller
to read runs every time.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import pytest

from iree_bwdconv.compiler import compile_cache, pipeline

_DUMPS = ("--iree-hal-dump", "--dump-")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true",
                     help="run the long matrices whole (tests marked long; e2e_tests/tiers.py)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long: part of a long matrix, run with --full (e2e_tests/tiers.py)")


def pytest_report_header(config: pytest.Config) -> str:
    return ("long matrices: whole (--full)" if config.getoption("--full")
            else "long matrices: a part of each; --full runs them whole")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--full"):
        return
    long = [item for item in items if item.get_closest_marker("long")]
    if long:
        config.hook.pytest_deselected(items=long)
        items[:] = [item for item in items if not item.get_closest_marker("long")]


def _memo_folder(factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    # Under xdist each worker's folder sits in the session's; alone, the
    # folder is the session's.
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "iree-compile-once"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(autouse=True, scope="session")
def iree_compile_once(tmp_path_factory: pytest.TempPathFactory):
    folder = _memo_folder(tmp_path_factory)
    compile_for_real = pipeline._run_iree_compile
    versions = compile_cache.stack_versions()

    def once(mlir, target, extra_flags, output, **options):
        if any(flag.startswith(_DUMPS) for flag in extra_flags):
            return compile_for_real(mlir, target, extra_flags, output, **options)
        deciding = sorted((name, value) for name, value in options.items() if name != "timeout_s")
        decided_by = (versions, mlir, target, tuple(extra_flags), output, deciding)
        path = folder / hashlib.sha256(repr(decided_by).encode()).hexdigest()
        try:
            return pickle.loads(path.read_bytes())
        except FileNotFoundError:
            pass
        result = compile_for_real(mlir, target, extra_flags, output, **options)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(pickle.dumps(result))
        os.replace(partial, path)
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "_run_iree_compile", once)
        yield
