"""The translation memory's HTTP API and LibreTranslate's /suggest end to end, on `mtserve serve` with the
real small model: a .po imported over HTTP serves its exact matches without the engine (the
response and a metric say so), `tm: false` sends the same text to the model, search and delete work, two
keys do not see each other's entries, and a suggestion serves translations only once the operator has
accepted it, through the CLI or over HTTP. SIGTERM during a long import ends the process within the shutdown
grace period.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from mtserve.service.access import KeyStore
from mtserve.service.tm import TranslationMemory
from tests.servers import GENERATED_TOKENS, UI_PO, engine_generates, metric_value, real_server

pytestmark = pytest.mark.model

SUGGESTED = {"今天天气很好": "Splendid weather we are having today",
             "我们明天见": "Until tomorrow, dear friends"}  # worded as no model would put them


def import_po(url: str, headers: dict | None = None) -> httpx.Response:
    return httpx.post(f"{url}/tm/import", files={"file": ("ui.po", UI_PO.encode())},
                      data={"source": "zh", "target": "en"}, headers=headers or {}, timeout=60)


def translate(url: str, q: str, headers: dict | None = None, **extra) -> dict:
    r = httpx.post(f"{url}/translate", json={"q": q, "source": "zh", "target": "en", **extra},
                   headers=headers or {}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def from_memory(url: str, q: str, headers: dict | None = None) -> str:
    """The translation of ``q``, which must come from the TM: said in the response, counted in /metrics,
    and no token generated."""
    before = metric_value(url, "mtserve_tm_exact_matches_total")
    tokens = metric_value(url, GENERATED_TOKENS)
    body = translate(url, q, headers)
    assert body.get("translationMemory") == {"segments": 1}, body
    assert metric_value(url, "mtserve_tm_exact_matches_total") == before + 1
    assert metric_value(url, GENERATED_TOKENS) == tokens
    return body["translatedText"]


def from_model(url: str, q: str, headers: dict | None = None, **extra) -> str:
    with engine_generates(url):
        body = translate(url, q, headers, **extra)
    assert "translationMemory" not in body, body
    assert body["translatedText"].strip()
    return body["translatedText"]


def error(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json")
    return r.json()["error"]


def cli_tm(home, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "mtserve.cli", "tm", *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "MTSERVE_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def operator(model_path, tmp_path_factory):
    """API keys off (every caller is the operator), suggestions on, uploads up to 50 kB."""
    home = tmp_path_factory.mktemp("tm-operator")
    env = {"MTSERVE_HOME": str(home), "MTSERVE_SUGGESTIONS": "1", "MTSERVE_FILES_MAX_MB": "0.05",
           "MTSERVE_N_PARALLEL": "1"}
    with real_server(model_path, env) as (url, _):
        yield url, home


@pytest.fixture(scope="module")
def keyed(model_path, tmp_path_factory):
    """API keys on (not required), suggestions off; two keys."""
    home = tmp_path_factory.mktemp("tm-keyed")
    store = KeyStore(home / "keys.sqlite3")
    (one, first), (two, _) = store.add(name="one"), store.add(name="two")
    env = {"MTSERVE_HOME": str(home), "MTSERVE_API_KEYS": "1", "MTSERVE_N_PARALLEL": "1"}
    with real_server(model_path, env) as (url, _):
        yield url, {"Authorization": f"Bearer {one}"}, first.id, {"Authorization": f"Bearer {two}"}


def test_an_imported_po_serves_exact_matches_and_tm_false_goes_to_the_model(operator):
    url, _ = operator
    done = import_po(url)
    assert done.status_code == 201, done.text
    assert done.json() == {"source": "zh", "target": "en", "origin": "ui.po", "added": 2, "duplicates": 0,
                           "skipped": {"fuzzy": 1}, "entries": 2}
    assert from_memory(url, "保存您的更改") == "Save your changes"
    assert from_memory(url, "打开设置") == "Open the settings"
    print("tm: false ->", from_model(url, "保存您的更改", tm=False))
    print("fuzzy entry, not imported ->", from_model(url, "删除文件"))

    near = httpx.get(f"{url}/tm/search", params={"q": "保存更改", "source": "zh", "target": "en"}).json()
    top = near["matches"][0]
    assert top["sourceText"] == "保存您的更改" and not top["exact"] and 60 <= top["score"] < 100, near
    exact = httpx.get(f"{url}/tm/search", params={"q": "打开设置", "source": "zh", "target": "en", "limit": 1})
    assert [(m["targetText"], m["score"], m["exact"]) for m in exact.json()["matches"]] == [
        ("Open the settings", 100.0, True)]

    entries = httpx.get(f"{url}/tm/entries").json()["entries"]
    save = next(e for e in entries if e["sourceText"] == "保存您的更改")
    assert httpx.delete(f"{url}/tm/entries/{save['id']}").json() == {"deleted": 1}
    print("deleted entry ->", from_model(url, "保存您的更改"))
    assert from_memory(url, "打开设置") == "Open the settings"
    assert httpx.delete(f"{url}/tm/entries", params={"origin": "ui.po"}).json() == {"deleted": 1}
    assert httpx.get(f"{url}/tm").json()["entries"] == 0


def test_suggestions_serve_once_accepted_through_the_cli_and_over_http(operator):
    url, home = operator
    assert httpx.get(f"{url}/frontend/settings").json()["suggestions"] is True
    for q, s in SUGGESTED.items():
        r = httpx.post(f"{url}/suggest", data={"q": q, "s": s, "source": "zh", "target": "en"}, timeout=30)
        assert r.json() == {"success": True}, r.text  # form data, as LibreTranslate's page sends it
    for q, s in SUGGESTED.items():
        assert from_model(url, q) != s  # waiting: not used yet
    waiting = {e["sourceText"]: e for e in httpx.get(f"{url}/tm/suggestions").json()["entries"]}
    assert set(waiting) == set(SUGGESTED) and all(e["origin"] == "suggest:anonymous" for e in waiting.values())
    over_http, by_cli = SUGGESTED
    accepted = httpx.post(f"{url}/tm/suggestions/accept", json={"ids": [waiting[over_http]["id"]]})
    assert accepted.json() == {"accepted": 1}, accepted.text
    assert from_memory(url, over_http) == SUGGESTED[over_http]
    listed = cli_tm(home, "accept")  # without ids: the suggestions waiting
    assert by_cli in listed and over_http not in listed
    assert cli_tm(home, "accept", str(waiting[by_cli]["id"])) == "accepted 1 suggestions\n"
    assert from_memory(url, by_cli) == SUGGESTED[by_cli]
    assert httpx.get(f"{url}/tm/suggestions").json()["entries"] == []


def test_hostile_uploads_and_fields_get_4xx_json(operator):
    url, _ = operator
    big = "打开\tOpen\n".encode() * 8000  # 104 kB, over this server's 50 kB
    oversized = httpx.post(f"{url}/tm/import", files={"file": ("big.tsv", big)},
                           data={"source": "zh", "target": "en"}, timeout=60)
    assert "MTSERVE_FILES_MAX_MB" in error(oversized, 413)
    wrong = httpx.post(f"{url}/tm/import", files={"file": ("ui.docx", b"PK\x03\x04")}, timeout=30)
    assert "cannot tell the format" in error(wrong, 400)
    not_xml = httpx.post(f"{url}/tm/import", files={"file": ("ui.tmx", b"<tmx><body><tu>")}, timeout=30)
    assert "not well-formed XML" in error(not_xml, 400)
    unserved = httpx.post(f"{url}/tm/import", files={"file": ("a.tsv", "打开\tOpen\n".encode())},
                          data={"source": "xx", "target": "en"}, timeout=30)
    assert "not a language this server translates" in error(unserved, 400)
    assert "greater than or equal to 1" in error(
        httpx.get(f"{url}/tm/search", params={"q": "打开", "source": "zh", "target": "en", "limit": 0}), 400)
    assert error(httpx.post(f"{url}/suggest", json={"q": "你好", "source": "zh", "target": "en"}), 400) == \
        "Invalid request: missing s parameter"
    assert "ids" in error(httpx.post(f"{url}/tm/suggestions/accept", json={"ids": "all"}), 400)
    assert error(httpx.delete(f"{url}/tm/entries/" + "9" * 30), 400)


def test_two_keys_do_not_see_or_use_each_others_entries(keyed):
    url, one, one_id, two = keyed
    assert "needs an API key" in error(import_po(url), 403)
    mine = import_po(url, one)
    assert mine.status_code == 201 and mine.json()["entries"] == 2, mine.text
    assert from_memory(url, "保存您的更改", one) == "Save your changes"
    print("the other key ->", from_model(url, "保存您的更改", two))
    assert httpx.get(f"{url}/tm/entries", headers=two).json()["entries"] == []
    assert httpx.get(f"{url}/tm/search", params={"q": "保存您的更改", "source": "zh", "target": "en"},
                     headers=two).json()["matches"] == []
    entries = httpx.get(f"{url}/tm/entries", headers=one).json()["entries"]
    assert {e["owner"] for e in entries} == {one_id}
    assert error(httpx.delete(f"{url}/tm/entries/{entries[0]['id']}", headers=two), 404)
    assert error(httpx.delete(f"{url}/tm/entries", params={"origin": "ui.po"}, headers=two), 404)
    assert "is for the operator" in error(
        httpx.post(f"{url}/tm/suggestions/accept", json={"all": True}, headers=one), 403)
    assert httpx.delete(f"{url}/tm/entries", params={"origin": "ui.po"}, headers=one).json() == {"deleted": 2}


def test_suggest_is_refused_as_libretranslate_refuses_it_when_off(keyed):
    url, one, _, _ = keyed
    r = httpx.post(f"{url}/suggest", json={"q": "你好", "s": "Hi", "source": "zh", "target": "en"}, headers=one)
    assert error(r, 403) == "Suggestions are disabled on this server."
    assert httpx.get(f"{url}/frontend/settings").json()["suggestions"] is False


def long_lines_tsv(lines: int, chars: int = 5000) -> bytes:
    """``lines`` pairs whose sources are ``chars`` CJK characters drawn at random: thousands of index rows each."""
    pick = random.Random(45)
    return "".join("".join(chr(0x4E00 + pick.randrange(3000)) for _ in range(chars)) + f"\tline {i}\n"
                   for i in range(lines)).encode()


def test_sigterm_during_a_tm_import_exits_within_the_grace_period(model_path, tmp_path):
    """An import stops at shutdown. An import thread that could not be stopped gave the client its 503 when
    the grace ran out, but kept the process going until the import was done (59 s, past a 20 s grace)."""
    grace_s = 3
    env = {"MTSERVE_SHUTDOWN_GRACE_S": str(grace_s), "MTSERVE_HOME": str(tmp_path), "MTSERVE_THREADS": "1"}
    data = long_lines_tsv(400)  # 2,000,000 index rows: minutes of writing here
    with real_server(model_path, env) as (url, proc):
        answer: dict[str, httpx.Response] = {}
        importer = threading.Thread(target=lambda: answer.setdefault("r", httpx.post(
            f"{url}/tm/import", files={"file": ("long.tsv", data)}, data={"source": "zh", "target": "en"},
            timeout=300)))
        importer.start()
        deadline = time.monotonic() + 120
        while httpx.get(f"{url}/tm", timeout=10).json()["entries"] == 0:  # until its first batch is stored
            assert time.monotonic() < deadline and importer.is_alive(), "the import never stored a batch"
            time.sleep(0.2)
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        limit = grace_s + 10  # the grace, one batch of the import, and the engine's shutdown
        while proc.poll() is None and time.monotonic() - signalled < limit:
            time.sleep(0.1)
        exited_s = time.monotonic() - signalled
        importer.join(timeout=30)
    print(f"\nSIGTERM during an import: exited after {exited_s:.1f} s (grace {grace_s} s)")
    assert proc.returncode == 0, f"still running {limit} s after SIGTERM, or failed: {proc.returncode}"
    assert answer["r"].status_code == 503 and "shutting down" in answer["r"].json()["error"]
    stored = TranslationMemory(tmp_path / "tm.sqlite3")
    assert 0 < len(stored) < 400  # the batches written before the stop are kept, the rest is not
