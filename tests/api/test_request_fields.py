"""The one reader of request fields (mtserve/api/fields.py): JSON within bounds, and fields of the
wrong type refused by name, on every API family (a 400 naming the field, never a 500)."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from mtserve.api.fields import BadJson, decode_json
from tests.fakes import FakeEngine
from tests.servers import metric_value, serve


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    """One server for the module, with its own home (glossaries, documents)."""
    with serve(FakeEngine(), home=tmp_path_factory.mktemp("home")) as base:
        yield base


def test_decode_json_bounds_depth_digits_and_encoding() -> None:
    assert decode_json(b'{"q": ["a", {"b": [1]}]}', max_depth=4) == {"q": ["a", {"b": [1]}]}
    for text, reason in [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
        ('{"q": [[["deep"]]]}', "more than 3 levels"),
        ('{"n": ' + "1" * 5000 + "}", "number too long"),
        (b'{"q": "\xff"}', "not valid JSON \\(UTF-8\\)"),
        ('"\\ud800"', "not valid JSON"),
        ('{"t": NaN}', "not valid JSON"),
        ('{"a": 1} trailing', "not valid JSON"),
    ]:
        with pytest.raises(BadJson, match=reason):
            decode_json(text if isinstance(text, bytes) else text.encode(), max_depth=3)


def test_the_depth_walk_only_runs_when_brackets_could_cross_the_bound() -> None:
    wide = json.dumps({"q": ["x"] * 200_000})  # 1.2 MB, two levels: a bracket count skips the walk
    started = time.perf_counter()
    assert len(decode_json(wide, max_depth=32)["q"]) == 200_000
    print(f"1.2 MB wide body: {(time.perf_counter() - started) * 1000:.0f} ms")
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize("path, body", [
    ("/translate", {"q": "hi", "source": "en", "target": "de"}),
    ("/detect", {"q": "hi"}),
    ("/v2/translate", {"text": ["hi"], "target_lang": "DE"}),
    ("/v1/chat/completions", {"model": "mtserve-en-de", "messages": [{"role": "user", "content": "hi"}]}),
])
def test_the_depth_bound_is_a_setting_on_every_json_route(path: str, body: dict) -> None:
    with serve(FakeEngine(), json_max_depth=3) as url:
        fits = httpx.post(url + path, json=body)
        deeper = httpx.post(url + path, json={**body, "extra": [[["x"]]]})
    assert fits.status_code == 200, fits.text
    assert deeper.status_code == 400 and "MTSERVE_JSON_MAX_DEPTH" in deeper.text


def test_json_bodies_that_once_were_500s_are_400s_on_every_route(url: str) -> None:
    routes = ["/translate", "/detect", "/translate/stream", "/v2/translate", "/v2/glossaries",
              "/v1/chat/completions"]
    for path in routes:
        for body, reason in [(b'{"q": ' + b"1" * 5000 + b', "target": "en"}', "number too long"),
                             (b'{"q": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply")]:
            r = httpx.post(url + path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400, (path, r.text)
            assert reason in r.text, (path, r.text)


def test_a_glossary_field_nested_deep_is_a_400_in_forms_queries_and_uploads(url: str) -> None:
    deep = "[" * 5000 + "]" * 5000
    form = httpx.post(f"{url}/translate", data={"q": "hi", "target": "en", "glossary": deep})
    query = httpx.get(f"{url}/translate/stream",
                      params={"q": "hi", "target": "en", "glossary": deep[3000:7000]})
    upload = httpx.post(f"{url}/translate_file", files={"file": ("a.txt", b"hi")},
                        data={"target": "en", "glossary": deep})
    for r in (form, query, upload):
        assert r.status_code == 400, r.text
        assert "glossary" in r.json()["error"] and "nested too deeply" in r.json()["error"]


def test_deepl_glossary_entries_over_csv_limits_or_nested_are_400s(url: str) -> None:
    base = {"name": "g", "source_lang": "EN", "target_lang": "DE"}
    tsv = httpx.post(f"{url}/v2/glossaries", data={**base, "entries": "a\t" + "b" * 140_000})
    csv_quote = httpx.post(f"{url}/v2/glossaries",
                           data={**base, "entries_format": "csv", "entries": 'a,"' + "b" * 140_000})
    nested = httpx.post(f"{url}/v2/glossaries",
                        data={**base, "entries_format": "json", "entries": "[" * 100_000 + "]" * 100_000})
    listed = httpx.post(f"{url}/v2/glossaries", json={**base, "entries": ["a", "b"]})
    assert tsv.status_code == 400 and "field larger than field limit" in tsv.json()["message"]
    assert csv_quote.status_code == 400 and "at most 200 characters" in csv_quote.json()["message"]
    assert nested.status_code == 400 and "flat JSON object" in nested.json()["message"]
    assert listed.status_code == 400 and "'entries' must be a string" in listed.json()["message"]


@pytest.mark.parametrize("path, q, error, hint", [
    ("/translate", 42, "q must be a string or a list of strings", "q is a number; send the text as a JSON string"),
    ("/translate", ["你好", 1], "q must be a string or a list of strings", "q[1] is a number;"),
    ("/translate", {"text": "你好"}, "q must be a string or a list of strings", "q is an object;"),
    ("/translate/stream", True, "q must be a string or a list of strings", "q is a boolean;"),
    ("/detect", ["你好"], "q must be a string", "q is an array; send the text as a JSON string"),
])
def test_a_q_that_is_not_text_is_a_400_in_words_not_pydantics(url: str, path: str, q, error: str,
                                                                hint: str) -> None:
    r = httpx.post(f"{url}{path}", json={"q": q, "target": "en"})
    assert r.status_code == 400, r.text
    body = r.json()
    assert set(body) == {"error", "hint"} and body["error"] == error, body
    assert hint in body["hint"] and "Input should be" not in r.text


@pytest.mark.parametrize("changes, fragment", [
    ({"n": "abc"}, "'n' must be an integer, not a string"),
    ({"n": 1.5}, "'n' must be an integer"),
    ({"source_lang": 5}, "'source_lang' must be a string, not a number"),
    ({"target_lang": ["en"]}, "'target_lang' must be a string"),
    ({"model": ["x"]}, "'model' must be a string"),
    ({"stream": True, "stream_options": "yes"}, "'stream_options' must be an object"),
    ({"stream": "yes"}, "'stream' must be true or false"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
     "messages[0].content[0].text must be a string, not a number"),
    ({"messages": [{"role": "user", "content": ["hi"]}]}, "messages[0].content[0] must be an object"),
    ({"messages": [{"role": "user", "content": 7}]}, "messages[0].content must be a string or a list"),
    ({"messages": [{"role": 1, "content": "hi"}]}, "'messages[0].role' must be a string"),
])
def test_openai_fields_of_the_wrong_type_are_400s_that_name_them(url: str, changes: dict,
                                                                 fragment: str) -> None:
    body = {"model": "mtserve-zh-en", "messages": [{"role": "user", "content": "你好"}], **changes}
    r = httpx.post(f"{url}/v1/chat/completions", json=body)
    assert r.status_code == 400, r.text
    assert fragment in r.json()["error"]["message"]


@pytest.mark.parametrize("changes, fragment", [
    ({"source_lang": 5}, "'source_lang' must be a string"),
    ({"target_lang": 5}, "'target_lang' must be a string"),
    ({"formality": ["more"]}, "'formality' must be a string"),
    ({"tag_handling": {"x": 1}}, "'tag_handling' must be a string"),
    ({"source_lang": "EN", "glossary_id": ["g"]}, "'glossary_id' must be a string"),
])
def test_deepl_fields_of_the_wrong_type_are_400s_that_name_them(url: str, changes: dict,
                                                                fragment: str) -> None:
    r = httpx.post(f"{url}/v2/translate", json={"text": ["hi"], "target_lang": "DE", **changes})
    assert r.status_code == 400, r.text
    assert fragment in r.json()["message"]


def test_a_glossary_name_that_is_not_a_string_is_refused_not_stored(url: str) -> None:
    r = httpx.post(f"{url}/v2/glossaries",
                   json={"name": ["x"], "source_lang": "EN", "target_lang": "DE", "entries": "a\tb"})
    listed = httpx.get(f"{url}/v2/glossaries").json()["glossaries"]
    assert r.status_code == 400 and "'name' must be a string" in r.json()["message"]
    assert all(g["name"] != "['x']" for g in listed)


def test_form_fields_are_read_in_one_pass_and_repeats_become_lists(url: str) -> None:
    repeated = httpx.post(f"{url}/v2/translate", data={"text": ["one", "two"], "target_lang": "DE"})
    batch = httpx.post(f"{url}/v2/translate",
                       data={"text": ["x"] * 64, "target_lang": "DE", "source_lang": "EN"})
    many = httpx.post(f"{url}/translate",
                      data={**{f"f{i}": "x" for i in range(100)}, "q": "hi", "target": "de"})
    assert repeated.status_code == 200 and len(repeated.json()["translations"]) == 2
    assert batch.status_code == 200 and len(batch.json()["translations"]) == 64  # batch_limit texts fit
    assert many.status_code == 400 and "fields" in many.json()["error"]


def test_a_multipart_form_is_read_strictly_in_its_charset(url: str) -> None:
    def post(path: str, parts: list[tuple[str, bytes]], charset: str = "") -> httpx.Response:
        body = b"".join(b'--B\r\nContent-Disposition: form-data; name="' + name.encode() + b'"\r\n\r\n'
                        + value + b"\r\n" for name, value in parts) + b"--B--\r\n"
        return httpx.post(f"{url}{path}", content=body,
                          headers={"Content-Type": f"multipart/form-data; boundary=B{charset}"})

    mojibake = post("/translate", [("q", b"\xff\xfe hi"), ("target", b"de")])  # starlette: "ÿþ hi"
    assert mojibake.status_code == 400, mojibake.text
    assert "field 'q' is not valid utf-8 text" in mojibake.json()["error"]
    utf8 = post("/translate", [("q", "café 你好".encode()), ("target", b"de")])
    gbk = post("/translate", [("q", "你好".encode("gbk")), ("target", b"de")], "; charset=gbk")
    repeated = post("/v2/translate", [("text", b"one"), ("text", b"two"), ("target_lang", b"DE")])
    assert utf8.json()["translatedText"] == "<de>café 你好"
    assert gbk.json()["translatedText"] == "<de>你好"
    assert [t["text"] for t in repeated.json()["translations"]] == ["<de>one", "<de>two"]


@pytest.mark.parametrize("path, content_type", [
    ("/translate", "application/json"),
    ("/v2/translate", "application/x-www-form-urlencoded"),
    ("/jobs", "multipart/form-data; boundary=xx"),
])
def test_a_client_gone_mid_body_is_a_499_not_a_server_fault(path: str, content_type: str) -> None:
    with serve(FakeEngine()) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: {content_type}\r\n"
                         "Content-Length: 100000\r\n\r\n".encode()
                         + b'--xx\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nab')
            time.sleep(0.3)
        deadline = time.monotonic() + 5
        def requests(status: int) -> float:
            return metric_value(url, f'mtserve_requests_total{{api="{_api(path)}",route="{path}",'
                                     f'status="{status}"}}', 0)

        while time.monotonic() < deadline and not (closed := requests(499)):
            time.sleep(0.1)
        failed = requests(500)
    assert closed == 1 and failed == 0


def _api(path: str) -> str:
    return "deepl" if path.startswith("/v2/") else "libretranslate"
