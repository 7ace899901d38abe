"""Fixtures for the bench tests (the fakes themselves are in tests/bench/helpers.py)."""

from __future__ import annotations

import pytest

from tests.bench.helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
