"""Where mtserve's DeepL API answers as DeepL's does: error shapes, glossary entries, the values DeepL
checks, document ids and status. Over real HTTP, on a server around a prompted test double."""

from __future__ import annotations

import deepl
import httpx
import pytest

from tests.fakes import FakeEngine
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
    ("GET", "/v3/no-such-thing", 404),
    ("PATCH", "/v3/glossaries", 405),
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


# --- glossary entries ------------------------------------------------------------------------------
CSV_ENTRIES = '''"Acme ""Pro""","Acme ""Pro"" GmbH"
"a, b","c, d"
C#,C#
"""",'
'''
ENTRIES = {'Acme "Pro"': 'Acme "Pro" GmbH', "a, b": "c, d", "C#": "C#", '"': "'"}


def create_glossary(server, entries: str, entries_format: str) -> httpx.Response:
    return httpx.post(f"{server}/v2/glossaries", json={"name": "g", "source_lang": "EN", "target_lang": "DE",
                                                       "entries": entries, "entries_format": entries_format})


def test_glossary_entries_with_quotes_and_commas_export_as_deepl_s_tsv_and_round_trip(server):
    made = create_glossary(server, CSV_ENTRIES, "csv")
    assert made.status_code == 201, made.text
    glossary_id = made.json()["glossary_id"]
    exported = httpx.get(f"{server}/v2/glossaries/{glossary_id}/entries",
                         headers={"Accept": "text/tab-separated-values"})
    assert exported.status_code == 200, exported.text  # was a 500: the TSV writer could not write a '"'
    assert exported.text.splitlines() == [f"{term}\t{translation}" for term, translation in ENTRIES.items()]
    assert deepl.Translator("any-key", server_url=server).get_glossary_entries(glossary_id) == ENTRIES
    again = create_glossary(server, exported.text, "tsv")
    assert again.status_code == 201, again.text
    assert httpx.get(f"{server}/v2/glossaries/{again.json()['glossary_id']}/entries").text == exported.text


@pytest.mark.parametrize("entries, entries_format", [
    ('"a\tb",c\n', "csv"),  # CSV could quote it, but DeepL refuses a tab in any term
    ('"a\nb",c\n', "csv"),
    ("a\tb\tc\n", "tsv"),  # a second tab: DeepL's TSV has no quoting
    ('{"a": "b\\u2028c"}', "json"),
])
def test_an_entry_holding_a_tab_or_line_break_is_refused_at_creation(server, entries, entries_format):
    r = create_glossary(server, entries, entries_format)
    assert r.status_code == 400 and "tab" in r.json()["message"], r.text


# --- values DeepL checks ---------------------------------------------------------------------------
def translate(server, **fields) -> httpx.Response:
    return httpx.post(f"{server}/v2/translate", json={"text": ["你好"], "source_lang": "ZH", "target_lang": "DE",
                                                      **fields})


@pytest.mark.parametrize("value, status", [
    ("0", 200), ("1", 200), ("nonewlines", 200), (0, 200),
    ("2", 400), ("yes", 400), (True, 400), ("", 400), (["1"], 400),
])
def test_split_sentences_takes_deepl_s_values_only(server, value, status):
    r = translate(server, split_sentences=value)
    assert r.status_code == status, r.text
    if status == 400:
        assert "'split_sentences'" in r.json()["message"]


def test_model_type_takes_deepl_s_values_and_says_which_model_served(server):
    translator = deepl.Translator("any-key", server_url=server)
    for model_type in deepl.ModelType:
        result = translator.translate_text("你好", source_lang="ZH", target_lang="DE", model_type=model_type)
        assert result.model_type_used == "quality_optimized"  # an LLM: DeepL's next-gen kind of model
    assert "model_type_used" not in translate(server).json()["translations"][0]  # as DeepL: only when asked
    bad = translate(server, model_type="fastest")
    assert bad.status_code == 400 and "'model_type'" in bad.json()["message"]


def test_a_seq2seq_model_serves_as_latency_optimized(tmp_path):
    with serve(FakeEngine(), home=tmp_path) as url:
        r = translate(url, model_type="quality_optimized")
    assert r.status_code == 200, r.text
    assert r.json()["translations"][0]["model_type_used"] == "latency_optimized"


def test_supports_formality_is_true_only_where_formality_is_followed(server):
    translator = deepl.Translator("any-key", server_url=server)
    targets = {lang.code: lang.supports_formality for lang in translator.get_target_languages()}
    assert targets["DE"] is True and targets["FR"] is True
    for code in ("ZH", "ZH-HANS", "KO", "TR", "UK", "EN-US"):  # DeepL's "no" too
        assert targets[code] is False, code
    with pytest.raises(deepl.DeepLException, match="Target language.*formality"):  # deepl-python's own match
        translator.translate_text("你好", source_lang="ZH", target_lang="TR", formality="more")
    assert translator.translate_text("你好", source_lang="ZH", target_lang="TR", formality="prefer_more").text
