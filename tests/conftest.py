"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def fresh_dynamo():
    """dynamo's caches emptied before and after the test: a graph compiled
    by one test's backend must not be found by the next test's."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
