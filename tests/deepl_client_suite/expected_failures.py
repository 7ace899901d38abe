"""What of DeepL's client suite mtserve is not expected to pass, test by test, and why.

``EXPECTED_FAILURES`` maps a test (``file::name``) to (the reason, whether the failure is certain).
Certain ones run as strict expected failures, so a change that makes one pass shows up. The rest
assert the words of DeepL's own translation of an example text (mostly "proton beam", "Protonenstrahl"):
the small model's translation differs from DeepL's, and between runs too, since llama.cpp's batches
of concurrent requests do not decode bit for bit alike. Those run as expected failures that may pass.
"""

from __future__ import annotations

# Languages of DeepL's example texts that the small model (Qwen's set, mtserve.text.languages) does not serve.
UNSERVED = ("BG", "CS", "DA", "EL", "ET", "FI", "HU", "LT", "LV", "NB", "RO", "SK", "SL", "SV")
# Those it serves, from which its translation of "proton beam" into English may not say "proton".
SERVED = ("AR", "DE", "ES", "FR", "ID", "IT", "JA", "KO", "NL", "PL", "PT", "PT-BR", "PT-PT", "RU", "TR", "UK",
          "ZH")
DEEPL_S_WORDS = "asserts DeepL's own translation of an example text; the small model's words differ, run to run"

_EXPECTED: dict[str, tuple[str, bool]] = {
    **{f"test_general.py::test_example_translation[{lang}]":
       (f"{lang}: a language the small model does not serve (400, as DeepL answers an unknown source_lang)", True)
       for lang in UNSERVED},
    **{f"test_general.py::test_example_translation[{lang}]":
       ("needs 'proton' in the small model's English for DeepL's example text; it often says something else "
        "(\"a bright light\", \"Sunbeam\")", False) for lang in SERVED},
    "test_general.py::test_translate_with_enums": (DEEPL_S_WORDS, False),
    **{f"{module}::test_glossary_translate_text_sentence": (
        "needs both glossary terms in the small model's German sentence; when it leaves one out (\"Der Artist "
        "wurde ...\"), the guardrails retry with the terms put into the source, but keep the first answer if "
        "the retried one fails another check", False)
       for module in ("test_glossary.py", "test_multilingual_glossary.py")},
    "test_translate_text.py::test_single_text": (DEEPL_S_WORDS, False),
    "test_translate_text.py::test_string_list": (DEEPL_S_WORDS, False),
    "test_translate_text.py::test_string_generator": (DEEPL_S_WORDS, False),
    "test_translate_text.py::test_source_lang": (DEEPL_S_WORDS, False),
    "test_translate_text.py::test_target_lang": (DEEPL_S_WORDS, False),
    "test_translate_text.py::test_mixed_case_languages": (DEEPL_S_WORDS, False),
    "test_translate_text.py::test_extra_body_params": (DEEPL_S_WORDS, False),
    "test_translate_text.py::test_tag_handling_xml": (DEEPL_S_WORDS + " (\"Der Titel\" for the document's title)",
                                                      False),
    "test_translate_text.py::test_tag_handling_html": (DEEPL_S_WORDS + " (\"Meine erste Überschrift\")", False),
    "test_translate_text.py::test_formality": ("needs Ihnen or dir in the small model's German for \"How are you?\"; "
                                               "it often answers \"Wie geht es?\", which has neither", False),
    "test_translate_text.py::test_custom_instructions": ("needs the small model to word a sentence differently "
                                                         "when told to be informal and concise", False),
    "test_cli.py::test_text": (DEEPL_S_WORDS, False),
    "test_cli.py::test_text_stdin": (DEEPL_S_WORDS, False),
    "test_cli.py::test_text_preserve_formatting": (DEEPL_S_WORDS, False),
    "test_cli.py::test_document": (DEEPL_S_WORDS, False),
    "test_translate_document.py::test_translate_document_from_filepath": (DEEPL_S_WORDS, False),
    "test_translate_document.py::test_translate_document_string": (DEEPL_S_WORDS, False),
    "test_translate_document.py::test_translate_document_formality": (
        "needs Ihnen or dir in the small model's German document; it often writes \"Wie geht es?\"", False),
    "test_translate_document.py::test_document_failure_during_translation": (
        "a document whose detected language is its target: DeepL fails it (\"Source and target language are "
        "equal\"), mtserve's document jobs pass it through as they do on /jobs (an explicit equal source_lang "
        "is refused at upload, as DeepL does)", True),
    "test_rephrase_text.py::test_single_text": ("DeepL Write (/v2/write/rephrase): not a translation API, and "
                                                "mtserve does not serve it (404)", True),
    "test_rephrase_text.py::test_business_style": ("DeepL Write (/v2/write/rephrase): not a translation API, and "
                                                   "mtserve does not serve it (404)", True),
}
EXPECTED_FAILURES: dict[str, str] = {name: reason for name, (reason, _) in _EXPECTED.items()}
CERTAIN: frozenset[str] = frozenset(name for name, (_, certain) in _EXPECTED.items() if certain)
