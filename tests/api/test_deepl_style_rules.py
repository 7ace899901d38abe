"""DeepL's style rules (/v3/style_rules) through the official client's ``DeepLClient``, and ``style_id`` on
/v2/translate: the rule list's custom instructions reach the engine before the request's own. On a server
whose prompted test double records what reached it."""

from __future__ import annotations

import deepl
import httpx
import pytest

from mtserve.service.access import KeyStore
from tests.quality.helpers import ScriptedEngine
from tests.servers import serve


@pytest.fixture(scope="module")
def engine():
    return ScriptedEngine(languages=("en", "de", "fr", "zh"))


@pytest.fixture(scope="module")
def server(engine, tmp_path_factory):
    with serve(engine, home=tmp_path_factory.mktemp("home")) as url:
        yield url


@pytest.fixture(scope="module")
def client(server):
    return deepl.DeepLClient("any-key", server_url=server)


def test_a_rule_list_is_created_read_changed_and_deleted_as_deepl_s_client_expects(client, server):
    rule = client.create_style_rule("House style", "de",
                                    configured_rules={"punctuation": {"quotation_marks": "use_guillemets"}},
                                    custom_instructions=[{"label": "Tone", "prompt": "Use Sie."}])
    assert (rule.name, rule.language, rule.version) == ("House style", "de", 1)
    assert rule.configured_rules.punctuation == {"quotation_marks": "use_guillemets"}
    assert [(i.label, i.prompt) for i in rule.custom_instructions] == [("Tone", "Use Sie.")]
    assert client.get_style_rule(rule.style_id).name == "House style"
    listed = httpx.get(f"{server}/v3/style_rules").json()["style_rules"]
    assert rule.style_id in {r["style_id"] for r in listed} and "custom_instructions" not in listed[0]
    assert client.get_all_style_rules(detailed=True)[0].custom_instructions
    renamed = client.update_style_rule_name(rule, "Renamed")
    assert renamed.name == "Renamed" and renamed.version == 2
    configured = client.update_style_rule_configured_rules(rule, {"dates_and_times": {"calendar_era": "use_bc_and_ad"}})
    assert configured.configured_rules.dates_and_times == {"calendar_era": "use_bc_and_ad"}
    added = client.create_style_rule_custom_instruction(rule, label="Short", prompt="Keep it short.",
                                                        source_language="en")
    assert added.id and added.source_language == "en"
    assert client.get_style_rule_custom_instruction(rule, added.id).prompt == "Keep it short."
    updated = client.update_style_rule_custom_instruction(rule, added.id, label="Shorter", prompt="Be brief.")
    assert (updated.label, updated.prompt, updated.source_language) == ("Shorter", "Be brief.", None)
    client.delete_style_rule_custom_instruction(rule, added.id)
    with pytest.raises(deepl.DeepLException, match="not found"):
        client.get_style_rule_custom_instruction(rule, added.id)
    client.delete_style_rule(rule)
    gone = httpx.get(f"{server}/v3/style_rules/{rule.style_id}")
    assert gone.status_code == 404 and gone.json() == {"message": f"Style rule not found: {rule.style_id}"}


def test_style_id_puts_the_rule_s_instructions_before_the_request_s_own(client, engine, server):
    rule = client.create_style_rule("Formal German", "de", custom_instructions=[
        {"label": "Register", "prompt": "Address the reader as Sie."},
        {"label": "From French", "prompt": "Keep French loanwords.", "source_language": "fr"}])
    client.translate_text("Hello.", source_lang="EN", target_lang="DE", style_rule=rule,
                          custom_instructions=["Keep it short."])
    assert engine.calls[-1].guidance.instructions == ("Address the reader as Sie.", "Keep it short.")
    client.translate_text("Bonjour.", source_lang="FR", target_lang="DE", style_rule=rule.style_id)
    assert engine.calls[-1].guidance.instructions == ("Address the reader as Sie.", "Keep French loanwords.")
    unknown = httpx.post(f"{server}/v2/translate", json={"text": ["Hello."], "target_lang": "DE",
                                                         "style_id": "dca2e053-8ae5-45e6-a0d2-881156e7f4e4"})
    assert unknown.status_code == 404 and set(unknown.json()) == {"message"}
    other_target = httpx.post(f"{server}/v2/translate", json={"text": ["Hello."], "target_lang": "FR",
                                                              "style_id": rule.style_id})
    assert other_target.status_code == 400 and "is for target language 'de'" in other_target.json()["message"]


@pytest.mark.parametrize("body, words", [
    ({"name": "", "language": "de"}, "name"),
    ({"name": "x"}, "'language'"),
    ({"name": "x", "language": "xx"}, "'language'"),
    ({"name": "x", "language": "de", "configured_rules": {"numbers": "all"}}, "configured_rules"),
    ({"name": "x", "language": "de", "custom_instructions": [{"label": "l", "prompt": "p" * 301}]}, "300"),
    ({"name": "x", "language": "de", "custom_instructions": [{"label": "l", "prompt": "p"}] * 11}, "at most 10"),
])
def test_a_bad_rule_list_is_a_400_that_names_what_is_wrong(server, body, words):
    r = httpx.post(f"{server}/v3/style_rules", json=body)
    assert r.status_code == 400 and words in r.json()["message"], r.text


def test_another_key_s_rule_list_is_not_there(tmp_path):
    keys = KeyStore(tmp_path / "keys.sqlite3")
    alice, _ = keys.add(name="alice")
    bob, _ = keys.add(name="bob")
    with serve(ScriptedEngine(languages=("en", "de")), home=tmp_path, api_keys=True, anonymous_rpm=0) as url:
        rule = deepl.DeepLClient(alice, server_url=url).create_style_rule("mine", "de")
        theirs = deepl.DeepLClient(bob, server_url=url)
        assert theirs.get_all_style_rules() == []
        for call in (lambda: theirs.get_style_rule(rule.style_id),
                     lambda: theirs.update_style_rule_name(rule.style_id, "stolen"),
                     lambda: theirs.delete_style_rule(rule.style_id),
                     lambda: theirs.translate_text("Hello.", source_lang="EN", target_lang="DE",
                                                   style_rule=rule.style_id)):
            with pytest.raises(deepl.DeepLException, match="Style rule not found"):
                call()
        anonymous = httpx.post(f"{url}/v3/style_rules", json={"name": "x", "language": "de"})
        assert anonymous.status_code == 403 and "DeepL-Auth-Key" in anonymous.json()["message"]
