"""Style rules: named lists of custom instructions for one target language, stored per API key.

A rule list (DeepL's style rule) has a name, the target language it is for, DeepL's *configured
rules* (its predefined options, by category: ``{"dates_and_times": {"calendar_era": "use_bc_and_ad"}}``)
and *custom instructions* (a label and a prompt of at most 300 characters, optionally only for one
source language). A translation that names a rule list (``TranslationRequest.style_id``) gets its
custom instructions before the request's own: the same instructions a request can send itself, so
they reach a prompted engine's prompt and key the cache as those do. The configured rules are kept
and given back as they were sent, and applied to nothing: mtserve has no rule set behind DeepL's
option names.

Ownership is the glossaries' (``GlossaryScope``): with API keys on, a key creates, sees, changes
and deletes its own rule lists, another key's are not there for it, and one made while keys were off
(the operator's) is used by all and changed by none. Every method is blocking (SQLite): the API
calls them in a worker thread.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from mtserve.service.glossary import OPERATOR, GlossaryScope
from mtserve.service.glossary_store import SqliteFile

MAX_NAME_CHARS = 200
MAX_INSTRUCTIONS = 10  # per rule list, as many as a request may send itself
MAX_PROMPT_CHARS = 300  # DeepL's bound on one custom instruction
MAX_LABEL_CHARS = 200
MAX_RULES_JSON_CHARS = 20_000  # the configured rules, as JSON


class StyleRuleError(ValueError):
    """Invalid style rule data; the message says what to fix (a 400 over HTTP)."""


class UnknownStyleRule(StyleRuleError):
    """No rule list (or custom instruction) the caller may see has that id (404)."""

    def __init__(self, message: str, style_id: str = ""):
        super().__init__(message)
        self.style_id = style_id


class StyleRuleForbidden(StyleRuleError):
    """The caller may not do that: create one without a key, change the operator's, pass its cap (403)."""


class StyleRuleMismatch(StyleRuleError):
    """A translation names a rule list for another target language (400)."""


@dataclass(frozen=True)
class CustomInstruction:
    id: str
    label: str
    prompt: str
    source_language: str | None = None  # only for texts from this language; None: any


@dataclass(frozen=True)
class StyleRule:
    id: str
    name: str
    language: str  # the target language it is for
    created: str  # ISO 8601, UTC
    updated: str
    version: int  # raised by every change
    owner: str | None
    configured_rules: dict[str, Any]
    custom_instructions: tuple[CustomInstruction, ...] = ()

    def instructions_for(self, source: str) -> tuple[str, ...]:
        """The prompts that apply to a text from ``source`` ("auto": those for any source only)."""
        return tuple(i.prompt for i in self.custom_instructions
                     if i.source_language is None or i.source_language == source)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS style_rules (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, language TEXT NOT NULL, created TEXT NOT NULL,
    updated TEXT NOT NULL, version INTEGER NOT NULL, owner TEXT, configured_rules TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS style_rules_by_owner ON style_rules (owner);
CREATE TABLE IF NOT EXISTS custom_instructions (
    id TEXT PRIMARY KEY, style_id TEXT NOT NULL REFERENCES style_rules(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, label TEXT NOT NULL, prompt TEXT NOT NULL, source_language TEXT
);
CREATE INDEX IF NOT EXISTS custom_instructions_by_rule ON custom_instructions (style_id, position);
"""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _text(value: object, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise StyleRuleError(f"{what} must be a non-empty string")
    if len(value.strip()) > limit:
        raise StyleRuleError(f"{what} has {len(value.strip()):,} characters; the most allowed is {limit}")
    return value.strip()


def check_configured_rules(rules: object) -> dict[str, dict[str, str]]:
    """DeepL's configured rules: an object of categories, each an object of rule -> option (strings)."""
    if rules is None:
        return {}
    if not isinstance(rules, Mapping) or not all(
            isinstance(category, str) and isinstance(options, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in options.items())
            for category, options in rules.items()):
        raise StyleRuleError('configured_rules must be an object of categories, each an object of rule -> '
                             'option, e.g. {"dates_and_times": {"calendar_era": "use_bc_and_ad"}}')
    clean = {category: dict(options) for category, options in rules.items()}
    if len(json.dumps(clean, ensure_ascii=False)) > MAX_RULES_JSON_CHARS:
        raise StyleRuleError(f"configured_rules is over {MAX_RULES_JSON_CHARS:,} characters of JSON")
    return clean


@dataclass(frozen=True)
class NewInstruction:
    """A custom instruction as a caller sends it (its source language as mtserve's code, or None)."""

    label: str
    prompt: str
    source_language: str | None = None

    def checked(self) -> "NewInstruction":
        return NewInstruction(_text(self.label, "a custom instruction's label", MAX_LABEL_CHARS),
                              _text(self.prompt, "a custom instruction's prompt", MAX_PROMPT_CHARS),
                              self.source_language)


class StyleRuleStore(SqliteFile):
    """Rule lists in one SQLite file, for every caller; each method takes the caller's scope."""

    @staticmethod
    def _migrate(db: sqlite3.Connection) -> None:
        db.executescript(_SCHEMA)

    # --- reading ----------------------------------------------------------------------------------
    @staticmethod
    def _read(db: sqlite3.Connection, style_id: str, scope: GlossaryScope) -> StyleRule:
        where, args = scope.where()
        row = db.execute("SELECT id, name, language, created, updated, version, owner, configured_rules "
                         f"FROM style_rules WHERE id = ? AND {where}", (style_id, *args)).fetchone()
        if row is None:
            raise UnknownStyleRule(f"Style rule not found: {style_id}", style_id)
        instructions = db.execute("SELECT id, label, prompt, source_language FROM custom_instructions "
                                  "WHERE style_id = ? ORDER BY position", (style_id,)).fetchall()
        return StyleRule(*row[:7], json.loads(row[7]), tuple(CustomInstruction(*i) for i in instructions))

    def get(self, style_id: str, scope: GlossaryScope = OPERATOR) -> StyleRule:
        with self._db() as db:
            return self._read(db, style_id, scope)

    def list(self, scope: GlossaryScope = OPERATOR) -> list[StyleRule]:
        where, args = scope.where()
        with self._db() as db:
            ids = [row[0] for row in db.execute(f"SELECT id FROM style_rules WHERE {where} ORDER BY created, id",
                                                args)]
            return [self._read(db, style_id, OPERATOR) for style_id in ids]

    def for_translation(self, style_id: str, target: str, scope: GlossaryScope = OPERATOR) -> StyleRule:
        """The rule list a translation into ``target`` names: UnknownStyleRule, or StyleRuleMismatch for
        one made for another target language."""
        rule = self.get(style_id, scope)
        if rule.language != target:
            raise StyleRuleMismatch(f"style rule {style_id!r} ({rule.name!r}) is for target language "
                                    f"{rule.language!r}, but the request translates into {target!r}")
        return rule

    # --- changing ---------------------------------------------------------------------------------
    def create(self, name: str, language: str, configured_rules: object = None,
               instructions: list[NewInstruction] | tuple[NewInstruction, ...] = (), *,
               scope: GlossaryScope = OPERATOR, max_owned: int = 0) -> StyleRule:
        """A new rule list owned by the scope's key; ``max_owned`` (0: none) caps the lists an owner holds."""
        if not scope.everything and scope.key_id is None:
            raise StyleRuleForbidden("creating a style rule needs an API key: send it as "
                                     "Authorization: DeepL-Auth-Key <key> (keys: `mtserve keys add`)")
        owner = None if scope.everything else scope.key_id
        name = _text(name, "a style rule's name", MAX_NAME_CHARS)
        rules = check_configured_rules(configured_rules)
        checked = [i.checked() for i in instructions]
        if len(checked) > MAX_INSTRUCTIONS:
            raise StyleRuleError(f"a style rule holds at most {MAX_INSTRUCTIONS} custom instructions")
        style_id, now = str(uuid.uuid4()), _now()
        with self._db(write=True) as db:
            if max_owned > 0:
                held = db.execute("SELECT COUNT(*) FROM style_rules WHERE owner IS ?", (owner,)).fetchone()[0]
                if held >= max_owned:
                    who = f"API key {owner}" if owner else "the server (API keys are off)"
                    raise StyleRuleForbidden(f"{who} already has {held:,} style rules, the limit "
                                             "(MTSERVE_STYLE_RULES_PER_KEY); delete one before creating another")
            db.execute("INSERT INTO style_rules VALUES (?, ?, ?, ?, ?, 1, ?, ?)",
                       (style_id, name, language, now, now, owner, json.dumps(rules, ensure_ascii=False)))
            for instruction in checked:
                self._add_instruction(db, style_id, instruction)
            return self._read(db, style_id, OPERATOR)

    @staticmethod
    def _add_instruction(db: sqlite3.Connection, style_id: str, instruction: NewInstruction) -> str:
        position = db.execute("SELECT coalesce(max(position), -1) + 1 FROM custom_instructions WHERE style_id = ?",
                              (style_id,)).fetchone()[0]
        instruction_id = str(uuid.uuid4())
        db.execute("INSERT INTO custom_instructions VALUES (?, ?, ?, ?, ?, ?)",
                   (instruction_id, style_id, position, instruction.label, instruction.prompt,
                    instruction.source_language))
        return instruction_id

    @contextlib.contextmanager
    def _changing(self, style_id: str, scope: GlossaryScope) -> Iterator[sqlite3.Connection]:
        """A write transaction on a rule list the scope may change; its version and time move on after."""
        with self._db(write=True) as db:
            rule = self._read(db, style_id, scope)
            if not scope.may_delete(rule.owner):
                raise StyleRuleForbidden(f"style rule {style_id!r} belongs to the server's operator; it can be "
                                         "used but not changed through the API")
            yield db
            db.execute("UPDATE style_rules SET version = version + 1, updated = ? WHERE id = ?", (_now(), style_id))

    def rename(self, style_id: str, name: str, scope: GlossaryScope = OPERATOR) -> StyleRule:
        name = _text(name, "a style rule's name", MAX_NAME_CHARS)
        with self._changing(style_id, scope) as db:
            db.execute("UPDATE style_rules SET name = ? WHERE id = ?", (name, style_id))
        return self.get(style_id, scope)

    def set_configured_rules(self, style_id: str, rules: object, scope: GlossaryScope = OPERATOR) -> StyleRule:
        clean = check_configured_rules(rules)
        with self._changing(style_id, scope) as db:
            db.execute("UPDATE style_rules SET configured_rules = ? WHERE id = ?",
                       (json.dumps(clean, ensure_ascii=False), style_id))
        return self.get(style_id, scope)

    def delete(self, style_id: str, scope: GlossaryScope = OPERATOR) -> None:
        with self._changing(style_id, scope) as db:
            db.execute("DELETE FROM style_rules WHERE id = ?", (style_id,))

    # --- custom instructions ----------------------------------------------------------------------
    def add_instruction(self, style_id: str, instruction: NewInstruction,
                        scope: GlossaryScope = OPERATOR) -> CustomInstruction:
        checked = instruction.checked()
        with self._changing(style_id, scope) as db:
            held = db.execute("SELECT COUNT(*) FROM custom_instructions WHERE style_id = ?", (style_id,)).fetchone()[0]
            if held >= MAX_INSTRUCTIONS:
                raise StyleRuleError(f"style rule {style_id!r} already holds {held} custom instructions, the most "
                                     "a request may carry; delete one first")
            instruction_id = self._add_instruction(db, style_id, checked)
        return self.instruction(style_id, instruction_id, scope)

    def instruction(self, style_id: str, instruction_id: str, scope: GlossaryScope = OPERATOR) -> CustomInstruction:
        found = next((i for i in self.get(style_id, scope).custom_instructions if i.id == instruction_id), None)
        if found is None:
            raise UnknownStyleRule(f"Custom instruction not found: {instruction_id}", style_id)
        return found

    def update_instruction(self, style_id: str, instruction_id: str, instruction: NewInstruction,
                           scope: GlossaryScope = OPERATOR) -> CustomInstruction:
        checked = instruction.checked()
        with self._changing(style_id, scope) as db:
            changed = db.execute("UPDATE custom_instructions SET label = ?, prompt = ?, source_language = ? "
                                 "WHERE id = ? AND style_id = ?", (checked.label, checked.prompt,
                                                                   checked.source_language, instruction_id, style_id))
            if changed.rowcount == 0:
                raise UnknownStyleRule(f"Custom instruction not found: {instruction_id}", style_id)
        return self.instruction(style_id, instruction_id, scope)

    def delete_instruction(self, style_id: str, instruction_id: str, scope: GlossaryScope = OPERATOR) -> None:
        with self._changing(style_id, scope) as db:
            gone = db.execute("DELETE FROM custom_instructions WHERE id = ? AND style_id = ?",
                              (instruction_id, style_id))
            if gone.rowcount == 0:
                raise UnknownStyleRule(f"Custom instruction not found: {instruction_id}", style_id)
