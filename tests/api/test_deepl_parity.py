"""Where mtserve's DeepL API answers as DeepL's does: error shapes, glossary entries, the values DeepL
checks, document ids and status. Over real HTTP, on a server around a prompted test double."""

from __future__ import annotations

import httpx
import pytest

from tests.quality.helpers import ScriptedEngine
from tests.servers import serve


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(ScriptedEngine(languages=("en", "zh", "de", "fr", "ko", "tr", "uk")),
               home=tmp_path_factory.mktemp("home")) as url:
        yield url


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/v2/no-such-thing", 404),
    ("POST", "/v2/glossaries/abc/entries/more", 404),
    ("GET", "/v3/glossaries", 404),  # DeepL's v3 API, which mtserve does not serve
    ("GET", "/v3", 404),
    ("GET", "/v2/translate", 405),
    ("POST", "/v2/translate", 400),  # no text
])
def test_every_deepl_path_answers_errors_in_deepl_s_shape(server, method, path, status):
    r = httpx.request(method, server + path)
    assert r.status_code == status, r.text
    assert set(r.json()) == {"message"} and r.json()["message"]


def test_other_families_keep_their_own_error_shapes(server):
    libretranslate = httpx.get(f"{server}/v3x/nothing")
    assert libretranslate.status_code == 404 and set(libretranslate.json()) == {"error"}
    openai = httpx.get(f"{server}/v1/nothing")
    assert openai.status_code == 404 and set(openai.json()["error"]) == {"message", "type", "param", "code"}
