"""DeepL's own client test suite (``deepl_tests/``, README.md) against a live mtserve on the small model.

The session starts one ``mtserve serve`` with the small model (``tests/servers.py``'s real_server, as
``live_server``) and points the suite at it the way its README says to point it at a server:
``DEEPL_SERVER_URL``, and ``DEEPL_AUTH_KEY``: API keys are on and required, and the suite's key is
one made in the server's home, so the tests of a wrong key get DeepL's 403. No mock-server
port is set, so the tests that need DeepL's mock server skip themselves, as the suite decides. The
client's read timeout is raised from 10 s: a CPU model answers slower than DeepL's service.

What mtserve cannot pass is listed in ``expected_failures.py``, each test with its reason: DeepL's
translations of its example texts, languages the small model does not serve, DeepL Write. Every test
here needs the model (marker ``model``).
"""

from __future__ import annotations

import os
from pathlib import Path

import deepl.http_client
import pytest

from mtserve.service.access import KeyStore
from tests.deepl_client_suite.expected_failures import CERTAIN, EXPECTED_FAILURES
from tests.servers import real_server

SUITE = Path(__file__).resolve().parent / "deepl_tests"
for name in ("DEEPL_MOCK_SERVER_PORT", "DEEPL_MOCK_PROXY_SERVER_PORT", "DEEPL_PROXY_URL"):
    os.environ.pop(name, None)  # read when the suite's conftest is imported: a real server, no mock, no proxy
# The client gives up on an answer after 10 s and retries, where DeepL's service answers in one; a small
# model on a loaded 2-core CPU can take longer over a sentence it checks and retries (a glossary term).
deepl.http_client.min_connection_timeout = 120.0


@pytest.fixture(scope="package", autouse=True)
def mtserve_for_deepl(model_path, tmp_path_factory):
    """One live mtserve for the whole suite; the suite's own fixtures read where it is from the environment."""
    home = tmp_path_factory.mktemp("deepl-suite-home")
    key, _ = KeyStore(home / "keys.sqlite3").add(name="deepl-client-suite")
    saved = {name: os.environ.get(name) for name in ("DEEPL_SERVER_URL", "DEEPL_AUTH_KEY")}
    env = {"MTSERVE_N_PARALLEL": "2", "MTSERVE_HOME": str(home), "MTSERVE_API_KEYS": "true",
           "MTSERVE_REQUIRE_API_KEY": "true"}
    with real_server(model_path, env) as (url, _):
        os.environ["DEEPL_SERVER_URL"] = url
        os.environ["DEEPL_AUTH_KEY"] = key
        try:
            yield url
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@pytest.hookimpl(tryfirst=True)  # marked before -m selects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if SUITE not in Path(str(item.fspath)).parents:
            continue
        item.add_marker(pytest.mark.model)
        name = f"{Path(str(item.fspath)).name}::{item.name}"
        if name in EXPECTED_FAILURES:
            item.add_marker(pytest.mark.xfail(reason=EXPECTED_FAILURES[name], strict=name in CERTAIN))
