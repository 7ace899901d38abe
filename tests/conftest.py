"""Shared fixtures: the real small model and a real mtserve server on loopback (built on tests/servers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtserve.models.store import ModelStore, ModelStoreError
from mtserve.settings import Settings
from tests.servers import TEST_MODEL, real_server


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The real small model from the user's store; `make test` pulls it first."""
    try:
        return ModelStore(Settings().models_dir).resolve(TEST_MODEL).path
    except ModelStoreError as exc:
        pytest.fail(f"{exc}\n(`make test` pulls it; or run `mtserve models pull {TEST_MODEL}`)")


@pytest.fixture(scope="session")
def live_home(tmp_path_factory) -> Path:
    """The home of ``live_server`` (glossaries, files, keys), so a test's CLI calls can share it."""
    return tmp_path_factory.mktemp("live-home")


@pytest.fixture(scope="session")
def live_server(model_path, live_home) -> str:
    """A real `mtserve serve` with the small model on a free loopback port, with no translation
    cache (every request reaches the model, whatever ran before) and a home of its own."""
    with real_server(model_path, {"MTSERVE_N_PARALLEL": "2", "MTSERVE_HOME": str(live_home)}) as (url, _):
        yield url
