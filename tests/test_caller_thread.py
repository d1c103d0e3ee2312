"""The calling thread's scheduling policy during a CPU call
(`caller_thread`): SCHED_BATCH during the call where it was SCHED_OTHER,
put back after, and any other policy left alone."""

from __future__ import annotations

import os
import threading

import pytest
import torch

from iree_bwdconv.run import caller_thread, runtime
from iree_bwdconv import lowering
from iree_bwdconv.compiler import pipeline


def _in_new_thread(body) -> None:
    """Runs `body` in a thread of its own, so that no policy it sets outlives
    it, and re-raises what it raised."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            body()
        except BaseException as err:  # noqa: BLE001 - handed to the test's thread
            errors.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


def test_batch_during_the_block_and_other_after():
    def body() -> None:
        assert os.sched_getscheduler(0) == os.SCHED_OTHER
        with caller_thread.batch_scheduling():
            assert os.sched_getscheduler(0) == os.SCHED_BATCH
        assert os.sched_getscheduler(0) == os.SCHED_OTHER

    _in_new_thread(body)


def test_policy_put_back_when_the_block_raises():
    def body() -> None:
        with pytest.raises(KeyError), caller_thread.batch_scheduling():
            raise KeyError("call failed")
        assert os.sched_getscheduler(0) == os.SCHED_OTHER

    _in_new_thread(body)


def test_another_policy_is_left_alone():
    def body() -> None:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        with caller_thread.batch_scheduling():
            assert os.sched_getscheduler(0) == os.SCHED_IDLE
        assert os.sched_getscheduler(0) == os.SCHED_IDLE

    _in_new_thread(body)


def test_nothing_changes_where_the_os_has_no_batch_policy(monkeypatch):
    monkeypatch.setattr(caller_thread, "_BATCH", None)

    def body() -> None:
        with caller_thread.batch_scheduling():
            assert os.sched_getscheduler(0) == os.SCHED_OTHER

    _in_new_thread(body)


def test_a_refused_switch_still_runs_the_block(monkeypatch):
    def refuse(*args) -> None:
        raise PermissionError("not allowed here")

    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    ran = []
    with caller_thread.batch_scheduling():
        ran.append(True)
    assert ran == [True]


class _Double(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def test_a_cpu_module_is_called_under_batch():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    module = runtime.LoadedModule(pipeline.iree_compile(lowering.lower(_Double(), x, target="cpu"), "cpu"), "cpu")
    call = module._function
    seen: list[int] = []

    def recording(*arguments):
        seen.append(os.sched_getscheduler(0))
        return call(*arguments)

    module._function = recording

    def body() -> None:
        (result,) = module(x)
        torch.testing.assert_close(result, x * 2)
        assert os.sched_getscheduler(0) == os.SCHED_OTHER

    _in_new_thread(body)
    assert seen == [os.SCHED_BATCH]
