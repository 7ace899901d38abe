"""LibreTranslate clients work unchanged: fields as Flask reads them (JSON, a UTF-8 form, the
query string of a POST), /frontend/settings, /health, /spec, and LibreTranslate's own error strings
and status codes, with mtserve's advice in a separate ``hint``. A real uvicorn on loopback around the
test double engine: what is tested here is the HTTP surface, which the model adds nothing to.

The strings are LibreTranslate's, from its libretranslate/app.py (``abort(400, description=...)``,
its 429 handler's "Slowdown: " prefix and flask-limiter's "N per 1 minute").
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from libretranslatepy import LibreTranslateAPI

from mtserve.service.access import KeyStore
from tests.fakes import FakeEngine
from tests.servers import metric_value, serve

FORM = "application/x-www-form-urlencoded"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    with serve(FakeEngine(fail_on="坏"), home=tmp_path_factory.mktemp("home")) as base:
        yield base


def form_post(url: str, path: str, raw: bytes, content_type: str = FORM) -> httpx.Response:
    """The bytes exactly as given, as `curl -d '...'` sends them: no escaping, the form content type."""
    return httpx.post(url + path, content=raw, headers={"content-type": content_type}, timeout=30)


# --- fields: a UTF-8 form, a charset, the query string ----------------------------------------------
REPAIRED = "mtserve_inputs_repaired_total"


def test_a_raw_utf8_form_from_curl_is_read_as_utf8(url: str) -> None:
    repaired = metric_value(url, REPAIRED)
    # curl -d 'q=你好世界&source=auto&target=en' localhost:8000/translate, byte for byte
    r = form_post(url, "/translate", "q=你好世界&source=auto&target=en".encode())
    assert r.status_code == 200, r.text
    assert r.json()["translatedText"] == "<en>你好世界"  # not 'ä½ å¥½ä¸\x96ç\x95\x8c'
    assert r.json()["detectedLanguage"]["language"] == "zh"
    detected = form_post(url, "/detect", "q=你好世界".encode())
    assert detected.status_code == 200 and detected.json()[0]["language"] == "zh", detected.text
    # Read as sent, not read as Latin-1 and then repaired by the service's mojibake check.
    assert metric_value(url, REPAIRED) == repaired


def test_a_raw_utf8_form_is_counted_and_glossed_in_characters_not_latin1_bytes(tmp_path: Path) -> None:
    engine = FakeEngine()
    with serve(engine, home=tmp_path, char_limit=10) as base:
        # nine characters, 27 bytes: under the limit of 10, which Latin-1 would have made 27
        fits = form_post(base, "/translate", "q=你好世界你好世界你&source=zh&target=en".encode())
        glossed = form_post(base, "/translate", 'q=白猫&source=zh&target=en&glossary={"猫": "cat"}'.encode())
    assert fits.status_code == 200, fits.text
    assert glossed.status_code == 200, glossed.text
    assert engine.calls[-1].glossary == (("猫", "cat"),)  # the term, read as sent, is found in the text


def test_a_form_is_read_in_the_charset_its_content_type_names(url: str) -> None:
    latin1 = form_post(url, "/translate", "q=Grüße aus Köln&source=de&target=en".encode("latin-1"),
                       f"{FORM}; charset=ISO-8859-1")
    assert latin1.json()["translatedText"] == "<en>Grüße aus Köln", latin1.text
    escaped = form_post(url, "/translate", b"q=%E4%BD%A0%E5%A5%BD+a%2Bb&source=zh&target=en")
    assert escaped.json()["translatedText"] == "<en>你好 a+b"  # %-escapes are UTF-8 too, + a space
    multipart = httpx.post(f"{url}/translate", files={"q": (None, "你好世界".encode()), "source": (None, b"zh"),
                                                      "target": (None, b"en")})
    assert multipart.json()["translatedText"] == "<en>你好世界", multipart.text  # curl -F, the WebUI's FormData


@pytest.mark.parametrize("raw, content_type, fragment", [
    (b"q=a&target=en", f"{FORM}; charset=klingon", "charset 'klingon'"),
    (b"q=a&target=en", f"{FORM}; charset=base64", "charset 'base64'"),  # a codec, not a text encoding
    (b"q=a&target=en", "multipart/form-data; boundary=x; charset=klingon", "charset 'klingon'"),
    (b"q=\xff\xfe&target=en", FORM, "not valid utf-8"),
    (b"q=%FF%FE&target=en", FORM, "not valid utf-8"),
])
def test_an_unknown_charset_or_bytes_that_are_not_its_text_are_a_400(url, raw, content_type, fragment) -> None:
    r = form_post(url, "/translate", raw, content_type)
    assert r.status_code == 400 and fragment in r.json()["error"], r.text


def test_a_post_may_carry_its_fields_in_the_query_string(url: str) -> None:
    alone = httpx.post(f"{url}/translate", params={"q": "你好", "source": "zh", "target": "en"})
    assert alone.status_code == 200 and alone.json()["translatedText"] == "<en>你好", alone.text
    raw_query = httpx.post(f"{url}/translate?q=%E4%BD%A0%E5%A5%BD&target=de")
    assert raw_query.json()["translatedText"] == "<de>你好", raw_query.text
    detect = httpx.post(f"{url}/detect", params={"q": "你好世界"})
    assert detect.status_code == 200 and detect.json()[0]["language"] == "zh"
    # A form and the query string together: werkzeug's request.values is CombinedMultiDict([args, form]),
    # whose get() answers from the query string first, so LibreTranslate translates into de here.
    both = httpx.post(f"{url}/translate?target=de", data={"q": "你好", "source": "zh", "target": "fr"})
    assert both.json()["translatedText"] == "<de>你好", both.text
    # A JSON body is read alone, as LibreTranslate reads request.get_json() and nothing else.
    json_body = httpx.post(f"{url}/translate?target=de", json={"q": "你好", "source": "zh", "target": "fr"})
    assert json_body.json()["translatedText"] == "<fr>你好", json_body.text
    stream = httpx.get(f"{url}/translate/stream", params={"q": "你好", "source": "zh", "target": "en"})
    assert stream.status_code == 200 and "<en>你好" in stream.text


def test_the_libretranslatepy_client_works_unchanged(tmp_path: Path) -> None:
    secret, _ = KeyStore(tmp_path / "keys.sqlite3").add(name="lt")
    with serve(FakeEngine(), home=tmp_path, api_keys=True, require_api_key=True) as base:
        client = LibreTranslateAPI(base, api_key=secret)
        assert client.translate("你好世界", "zh", "en") == "<en>你好世界"
        assert client.detect("你好世界")[0]["language"] == "zh"
        assert {"zh", "en"} <= {language["code"] for language in client.languages()}
        with pytest.raises(Exception) as refused:
            LibreTranslateAPI(base, api_key="mts_wrong").translate("你好", "zh", "en")
    assert getattr(refused.value, "code", None) == 403
    assert json.loads(refused.value.read()) == {  # type: ignore[attr-defined]
        "error": "Invalid API key", "hint": "the key is none of this server's; check it, or ask the operator for one"}


# --- /frontend/settings, /health, /spec ---------------------------------------------------------------
def test_frontend_settings_carry_libretranslates_fields_with_its_meanings(url: str) -> None:
    settings = httpx.get(f"{url}/frontend/settings").json()
    assert settings["charLimit"] == 10000 and settings["frontendTimeout"] == 400
    assert settings["apiKeys"] is False and settings["keyRequired"] is False
    assert settings["suggestions"] is False  # no POST /suggest on this server
    assert settings["filesTranslation"] is True and ".docx" in settings["supportedFilesFormat"]
    assert settings["language"] == {"source": {"code": "zh", "name": "Chinese"},
                                    "target": {"code": "en", "name": "English"}}
    assert {"batchLimit", "alternativesLimit", "fileSizeLimitMb", "model", "engine"} <= set(settings)


def test_frontend_settings_say_when_a_key_is_required(tmp_path: Path) -> None:
    with serve(FakeEngine(), home=tmp_path, api_keys=True, require_api_key=True) as base:
        settings = httpx.get(f"{base}/frontend/settings").json()
    assert settings["apiKeys"] is True and settings["keyRequired"] is True


def test_health_is_exactly_libretranslates_ok_and_mtserves_details_are_beside_it(url: str) -> None:
    # LibreTranslate's scripts/healthcheck.py sends a JSON body with its GET; its clients compare the body
    health = httpx.request("GET", f"{url}/health", json={})
    assert health.status_code == 200 and health.content == b'{"status":"ok"}'
    details = httpx.get(f"{url}/health/details").json()
    assert details["status"] == "ok" and details["ready"] is True and details["model"] == "fake-model"
    assert details["engine"] == "fake" and details["queue"]["admitted"] == 0
    assert httpx.get(f"{url}/health/live").json() == {"live": True}
    assert httpx.get(f"{url}/health/ready").json() == {"ready": True}
    posted = httpx.post(f"{url}/health")
    assert posted.status_code == 405 and "error" in posted.json()


def test_spec_serves_the_api_document_and_refuses_a_post(url: str) -> None:
    spec = httpx.get(f"{url}/spec")
    assert spec.status_code == 200 and spec.json() == httpx.get(f"{url}/openapi.json").json()
    assert {"/translate", "/detect", "/languages", "/frontend/settings"} <= set(spec.json()["paths"])
    posted = httpx.post(f"{url}/spec")
    assert posted.status_code == 405 and posted.headers["content-type"] == "application/json"
    assert "POST" in posted.json()["error"] and posted.headers["allow"] == "GET"


# --- LibreTranslate's words, mtserve's hints --------------------------------------------------------
@pytest.mark.parametrize("path, fields, error, hint", [
    ("/translate", {"source": "en", "target": "es"}, "Invalid request: missing q parameter", "send q"),
    ("/translate", {"q": "", "target": "es"}, "Invalid request: missing q parameter", "send q"),
    ("/translate", {"q": "Hello", "source": "en"}, "Invalid request: missing target parameter", "send target"),
    ("/translate", {"q": "Hello", "source": "en", "target": "zz"}, "zz is not supported",
     "target must be one of: en, zh, ja, de, fr; see GET /languages"),
    ("/translate", {"q": "Hello", "source": "xx", "target": "en"}, "xx is not supported",
     "source must be one of"),
    ("/translate", {"q": "Hello", "source": "en", "target": "de", "format": "xml"},
     "xml format is not supported", "text or html"),
    ("/translate", {"q": "Hello", "source": "en", "target": "de", "alternatives": "two"},
     "Invalid request: alternatives parameter is not a number", "whole number"),
    ("/translate", {"q": "Hello", "source": "en", "target": "de", "alternatives": 9},
     "Invalid request: alternatives parameter must be <= 3", "MTSERVE_MAX_ALTERNATIVES"),
    ("/translate", {"q": "a" * 10001, "source": "en", "target": "de"},
     "Invalid request: request (10001) exceeds text limit (10000)", "MTSERVE_CHAR_LIMIT"),
    ("/translate", {"q": ["a"] * 65, "source": "en", "target": "de"},
     "Invalid request: request (65) exceeds text limit (64)", "MTSERVE_BATCH_LIMIT"),
    ("/translate/stream", {"source": "en", "target": "de"}, "Invalid request: missing q parameter", "send q"),
    ("/translate/stream", {"q": "Hello", "target": "zz"}, "zz is not supported", "see GET /languages"),
    ("/detect", {}, "Invalid request: missing q parameter", "send q"),
    ("/detect", {"q": "a" * 10001}, "Invalid request: request (10001) exceeds text limit (10000)",
     "MTSERVE_CHAR_LIMIT"),
])
@pytest.mark.parametrize("send", ["json", "form"])
def test_errors_are_libretranslates_strings_with_a_hint(url, path, fields, error, hint, send) -> None:
    r = httpx.post(url + path, **{send if send == "json" else "data": fields}, timeout=30)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == error and hint in r.json()["hint"], r.json()


def test_an_empty_list_of_texts_is_a_missing_q(url: str) -> None:
    r = httpx.post(f"{url}/translate", json={"q": [], "target": "es"})
    assert r.status_code == 400 and r.json() == {"error": "Invalid request: missing q parameter",
                                                 "hint": "q is an empty list; send at least one text"}


def test_a_body_of_another_type_is_not_read_and_the_hint_says_so(url: str) -> None:
    r = form_post(url, "/translate", b'{"q": "hi", "target": "en"}', "text/plain;charset=UTF-8")
    assert r.status_code == 400 and r.json()["error"] == "Invalid request: missing q parameter"
    assert "text/plain is not read" in r.json()["hint"] and "application/json" in r.json()["hint"]
    assert httpx.post(f"{url}/detect").json()["error"] == "Invalid request: missing q parameter"


def test_a_pair_without_a_direction_is_libretranslates_not_available(tmp_path: Path) -> None:
    class EnglishToGerman(FakeEngine):  # a Marian model: two languages, one direction
        def supports(self, source: str, target: str) -> bool:
            return (source, target) == ("en", "de")

    with serve(EnglishToGerman(languages=("en", "de")), home=tmp_path) as base:
        r = httpx.post(f"{base}/translate", json={"q": "Hallo", "source": "de", "target": "en"})
    assert r.status_code == 400
    assert r.json()["error"] == "English (en) is not available as a target language from German (de)"
    assert "see GET /languages" in r.json()["hint"]


def test_a_server_fault_is_libretranslates_500_with_the_request_id(url: str) -> None:
    r = httpx.post(f"{url}/translate", json={"q": "坏", "source": "zh", "target": "en"})
    assert r.status_code == 500 and r.json()["error"].startswith("Cannot translate text: ")
    assert r.headers["x-request-id"] in r.json()["error"] and "log" in r.json()["hint"]


def test_keys_and_limits_are_libretranslates_400_403_and_429(tmp_path: Path) -> None:
    secret, _ = KeyStore(tmp_path / "keys.sqlite3").add(name="client", rpm=2)
    with serve(FakeEngine(), home=tmp_path, api_keys=True, require_api_key=True) as base:
        body = {"q": "你好", "source": "zh", "target": "en"}
        missing = httpx.post(f"{base}/translate", data=body)
        wrong = httpx.post(f"{base}/translate", data={**body, "api_key": "mts_nope"})
        wrong_detect = httpx.post(f"{base}/detect", json={"q": "你好", "api_key": "mts_nope"})
        # the key is checked first, as LibreTranslate's access_check runs before the route reads q
        wrong_and_no_q = httpx.post(f"{base}/translate", json={"target": "en", "api_key": "mts_nope"})
        by_query = httpx.post(f"{base}/translate", params={"api_key": secret}, data=body)
        by_field = httpx.post(f"{base}/translate", data={**body, "api_key": secret})
        limited = httpx.post(f"{base}/translate", json={**body, "api_key": secret})
    assert missing.status_code == 400 and missing.json() == {  # as LibreTranslate's test_api_keys.py
        "error": "Please contact the server operator to get an API key",
        "hint": "an API key is required: send it as api_key or in an Authorization: Bearer header"}
    for refused in (wrong, wrong_detect, wrong_and_no_q):
        assert refused.status_code == 403 and refused.json()["error"] == "Invalid API key", refused.text
    assert by_query.status_code == 200 and by_field.status_code == 200
    assert limited.status_code == 429 and limited.json()["error"] == "Slowdown: 2 per 1 minute"
    assert "retry in" in limited.json()["hint"] and int(limited.headers["retry-after"]) >= 1


def test_deepl_and_openai_keep_their_own_words(url: str) -> None:
    deepl = httpx.post(f"{url}/v2/translate", data={"text": "你好", "source_lang": "ZH", "target_lang": "EN"},
                       headers={"Authorization": "DeepL-Auth-Key x"})
    assert deepl.status_code == 200 and deepl.json()["translations"][0]["text"] == "<en>你好"
    raw_deepl = form_post(url, "/v2/translate", "text=你好&target_lang=EN".encode())  # the same UTF-8 reading
    assert raw_deepl.json()["translations"][0]["text"] == "<en>你好", raw_deepl.text
    openai = httpx.post(f"{url}/v1/chat/completions",
                        json={"model": "mtserve-zh-zz", "messages": [{"role": "user", "content": "你好"}]})
    assert openai.status_code == 400, openai.text
    message = openai.json()["error"]["message"]
    assert "is not supported by model" in message and "see GET /v1/models" in message
    assert "hint" not in openai.json()
