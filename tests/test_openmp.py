"""The OpenMP spin limit: set by the command before torch is imported,
never over a user's own choice, and advice from the backend otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from iree_bwdconv.run import openmp

PROBE = "import os, sys, iree_bwdconv.cli; print(os.environ.get('GOMP_SPINCOUNT'), 'torch' in sys.modules)"


def run_probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    proc = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def test_command_sets_the_limit_before_importing_torch():
    # The command module sets it on import; torch comes later, with the
    # commands that trace or train.
    assert run_probe() == f"{openmp.SPIN_COUNT} False"


@pytest.mark.parametrize("env, expected", [
    ({"GOMP_SPINCOUNT": "50"}, "50 False"),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, "None False"),
])
def test_command_keeps_the_users_choice(env, expected):
    assert run_probe(**env) == expected


def test_importing_the_package_does_not_import_torch():
    proc = subprocess.run([sys.executable, "-c", "import sys, iree_bwdconv; print('torch' in sys.modules)"],
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"


def test_no_limit_once_torch_is_imported(monkeypatch):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert "torch" in sys.modules or __import__("torch")
    assert openmp.limit_spinning() is False
    assert "GOMP_SPINCOUNT" not in os.environ


def test_advice_only_when_torch_threads_can_spin(monkeypatch):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert "GOMP_SPINCOUNT=3000" in openmp.spinning_advice(2)
    assert openmp.spinning_advice(1) is None
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert openmp.spinning_advice(2) is None
