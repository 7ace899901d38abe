"""``mtserve eval --markup``: do inline tags and placeholders survive, and what do they cost?

The markup set is built, deterministically, from the sentences of the built-in
sets: real words of each sentence are wrapped in inline HTML tags (``<b>``,
``<a href>``, ``<em>``, ``<span class>``, some nested), DeepL-style placeholders
``<x id="N"></x>`` are put between words (sent with ``tag_handling=xml`` and
``ignore_tags=x``), and printf, brace and ICU placeholders replace a name or a
number or open the sentence. An item's split is its sentence's split, so the
prompt's examples (HSK dev) never meet the test split. Four figures:

- **integrity**: outputs whose tags (the same ones, validly nested) and placeholders
  (byte-identical; ICU skeletons unchanged) all came back;
- **markup cost**: 100 minus the chrF of the tag-stripped output against the same
  sentence translated without tags (tag items only: a placeholder item has no
  tag-free twin); the chrF of both against the reference is reported too;
- **edge errors**: a letter glued to a tag (in a language written with spaces), a
  space at a tag between two Chinese or Japanese characters, or a capital right
  after an opening tag in mid-sentence that the tag-free translation does not have;
- **fallbacks**: outputs whose tags the fallback placed (in-process targets only).

And, on the placement sets (``--dataset placement``, the hand-checked one, and
``placement-catalog``, from the software catalogs; ``mtserve/eval/placement.py``): **placement**,
the share of tags whose content in the output is one of the English renderings the set gives for
it, and **overlap**, the share whose content shares a content word with one (a near miss counts).

With ``--as-document FORMAT`` (``mtserve/eval/documents_markup.py``) each item goes as a .docx,
.pptx, .odt, .md or .html file through the file path and the translated file is read back as
markup: the same figures for documents, with the items a format cannot hold counted apart, and a
space before a punctuation mark at a tag (where runs meet) counted among the edge errors.
"""

from __future__ import annotations

import asyncio
import html as html_lib
import json
import random
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Callable

from mtserve.eval.datasets import DATA_DIR, EVERYDAY_LANGS, DatasetError, _read_tsv_rows, hsk_usable, split_of
from mtserve.eval.placement import TagExpectation, TagResult, load_catalog, load_hand, score_tags
from mtserve.text import markup
from mtserve.text.segment import is_cjk

TAGS = (("<b>", "</b>"), ("<i>", "</i>"), ('<a href="/help">', "</a>"), ("<em>", "</em>"),
        ('<span class="hl">', "</span>"), ("<strong>", "</strong>"))
ZH_FUNCTION_WORDS = set("的 了 是 在 和 我 你 他 她 它 们 我们 你们 他们 这 那 这个 那个 吗 呢 吧 啊 也 都 就 很 不 "
                        "没 没有 有 把 被 给 对 从 到 会 要 想 能 可以".split())
EN_FUNCTION_WORDS = {"the", "and", "with", "from", "that", "this", "have", "there", "what", "when", "where",
                     "will", "would", "could", "should", "about", "into", "your", "they", "them", "very"}
ZH_NUMERAL = re.compile(r"[一二三四五六七八九十两百千万0-9]+")
ZH_PEOPLE = {"他", "她", "我", "你", "老师", "妈妈", "爸爸", "朋友", "同学", "医生", "经理", "哥哥", "姐姐", "弟弟",
             "妹妹", "孩子", "儿子", "女儿", "丈夫", "妻子", "客人", "司机"}
EN_NUMBERS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}
_SPACED = re.compile(r"\s+")


@dataclass(frozen=True)
class MarkupItem:
    id: str
    group: str  # "tags" (html), "xml" (DeepL x placeholders), "placeholders" or "icu" (plain text);
    # "hand" or "catalog" (html) on the placement sets
    fmt: str  # what the service is asked for: html, xml or text
    source: str
    plain: str  # the sentence without markup, for the markup cost; "" where it has no such twin
    reference: str
    # each tag of the reference with the renderings of its content that put it on the right words
    expected: tuple[TagExpectation, ...] = ()


@dataclass
class MarkupSet:
    name: str
    source_lang: str
    target_lang: str
    split: str
    items: list[MarkupItem]
    notes: list[str] = field(default_factory=list)
    as_document: str = ""  # each item sent as a file of this format (``documents_markup``); "" for requests
    skipped: dict[str, int] = field(default_factory=dict)  # items the format cannot hold, by reason


# --- building the set ---------------------------------------------------------------------------
def _wrap(words: list[tuple[int, int]], text: str, rng: random.Random, closed: bool) -> str:
    """``text`` with one or two of its words in inline tags, sometimes nested."""
    chosen = sorted(rng.sample(words, min(len(words), 2 if rng.random() < 0.4 else 1)))
    if len(chosen) == 2 and chosen[1][0] <= chosen[0][1] + (0 if closed else 1):
        chosen = chosen[:1]  # adjacent words: one tag
    inserts: list[tuple[int, int, str]] = []
    for k, (start, end) in enumerate(chosen):
        opening, closing = rng.choice(TAGS)
        inserts += [(start, 1, opening), (end, -2, closing)]
    if len(chosen) == 1 and rng.random() < 0.2:  # a nested tag: an outer one around the word and its neighbour
        start, end = chosen[0]
        later = [w for w in words if w[0] >= end]
        if later:
            inserts += [(start, 0, "<b>"), (later[0][1], -1, "</b>")]
    inserts.sort(key=lambda item: (item[0], item[1]))
    out, position = [], 0
    for at, _, tag in inserts:
        out += [text[position:at], tag]
        position = at
    return "".join(out) + text[position:]


def _xml(words: list[tuple[int, int]], text: str, rng: random.Random) -> str:
    candidates = [w[0] for w in words if w[0] > 0] or [0]
    spots = sorted(rng.sample(candidates, min(len(candidates), 1 + (rng.random() < 0.3))))
    out, position = [], 0
    for n, at in enumerate(dict.fromkeys(spots)):
        out += [text[position:at], f'<x id="{n}"></x>']
        position = at
    return "".join(out) + text[position:]


def _zh_words(record: dict) -> list[tuple[int, int, str, str]]:
    """(start, end, word, its English gloss) for each token of the sentence."""
    text = record["chinese"]
    found, cursor = [], 0
    for token in record.get("tokens", []):
        word = token["word"]
        at = text.find(word, cursor)
        if at < 0:
            continue
        found.append((at, at + len(word), word, token.get("gloss_en", "")))
        cursor = at + len(word)
    return found


def _zh_placeholders(text: str, words: list[tuple[int, int, str, str]], rng: random.Random) -> tuple[str, str]:
    numbers = [w for w in words if ZH_NUMERAL.fullmatch(w[2])]
    people = [w for w in words if w[2] in ZH_PEOPLE]
    if numbers and rng.random() < 0.5:
        start, end = rng.choice(numbers)[:2]
        return text[:start] + rng.choice(("%d", "{0}", "{count}")) + text[end:], "placeholders"
    if people:
        start, end = rng.choice(people)[:2]
        return text[:start] + rng.choice(("%s", "%1$s", "{name}", "%(name)s")) + text[end:], "placeholders"
    return rng.choice(("%s，", "{name}，", "{{ user }}，")) + text, "placeholders"


def _zh_icu(text: str, words: list[tuple[int, int, str, str]], rng: random.Random) -> str | None:
    for k, (start, end, word, _) in enumerate(words):
        if ZH_NUMERAL.fullmatch(word) and k + 1 < len(words) and words[k + 1][0] == end:
            unit_end = words[k + 2][1] if k + 2 < len(words) and words[k + 2][0] == words[k + 1][1] \
                and not ZH_NUMERAL.fullmatch(words[k + 2][2]) else words[k + 1][1]
            unit = text[end:unit_end]
            if not re.fullmatch(r"[\u4e00-\u9fff]+", unit):
                return None
            return (text[:start] + f"{{count, plural, one {{# {unit}}} other {{# {unit}}}}}"
                    + text[unit_end:])
    return None


def build_hsk(split: str) -> list[MarkupItem]:
    try:
        from hsk_sentences_audio import load_sentences
    except ImportError:
        raise DatasetError("the markup set needs the hsk-sentences-audio package") from None
    items = []
    for record in load_sentences():
        if record["hsk_level"] < 2 or not hsk_usable(record):
            continue
        if split != "all" and split_of(record["id"]) != split:
            continue
        text, reference = record["chinese"].strip(), record["translation"]["en"].strip()
        rng = random.Random(f"markup:{record['id']}")
        words = [w for w in _zh_words(record) if re.fullmatch(r"[\u4e00-\u9fff]+", w[2])]
        content = [(s, e) for s, e, w, _ in words if w not in ZH_FUNCTION_WORDS]
        roll = rng.random()
        if roll < 0.55 and content:
            items.append(MarkupItem(f"{record['id']}:tags", "tags", "html", _wrap(content, text, rng, True), text,
                                    reference))
        elif roll < 0.7 and content:
            items.append(MarkupItem(f"{record['id']}:xml", "xml", "xml", _xml(content, text, rng), text,
                                    reference))
        elif roll < 0.8 and (icu := _zh_icu(text, words, rng)):
            items.append(MarkupItem(f"{record['id']}:icu", "icu", "text", icu, "", reference))
        else:
            source, group = _zh_placeholders(text, words, rng)
            items.append(MarkupItem(f"{record['id']}:ph", group, "text", source, "", reference))
    return items


def build_everyday(target: str, split: str) -> list[MarkupItem]:
    rows = _read_tsv_rows(DATA_DIR / "everyday.tsv", comments=True)
    header, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    items = []
    for row in body:
        pair_id = row[col["id"]]
        if split != "all" and split_of(pair_id) != split:
            continue
        text, reference = row[col["en"]], row[col[target]]
        rng = random.Random(f"markup:{pair_id}")
        words = [(m.start(), m.end()) for m in re.finditer(r"[A-Za-z']+", text)]
        content = [(s, e) for s, e in words if len(text[s:e]) >= 4 and text[s:e].lower() not in EN_FUNCTION_WORDS]
        numbers = [(s, e) for s, e in words if text[s:e].lower() in EN_NUMBERS]
        roll = rng.random()
        if roll < 0.6 and content:
            items.append(MarkupItem(f"{pair_id}:tags", "tags", "html", _wrap(content, text, rng, False), text,
                                    reference))
        elif roll < 0.75 and content:
            items.append(MarkupItem(f"{pair_id}:xml", "xml", "xml", _xml(content, text, rng), text, reference))
        elif numbers:
            start, end = rng.choice(numbers)
            items.append(MarkupItem(f"{pair_id}:ph", "placeholders", "text",
                                    text[:start] + rng.choice(("%d", "{count}")) + text[end:], "", reference))
        else:
            first = text if text.startswith("I ") else text[:1].lower() + text[1:]
            items.append(MarkupItem(f"{pair_id}:ph", "placeholders", "text",
                                    rng.choice(("%s, ", "{name}, ")) + first, "", reference))
    return items


def build_placement(dataset: str, split: str) -> list[MarkupItem]:
    """The hand-checked placement set, or the one from the software catalogs, as markup items."""
    found = load_hand(split) if dataset == "placement" else load_catalog(split)
    group = "hand" if dataset == "placement" else "catalog"
    return [MarkupItem(item.id, group, "html", item.source, strip_html(item.source), item.reference,
                       item.expected) for item in found]


def load_markup_set(dataset: str, source: str, target: str, split: str) -> MarkupSet:
    if dataset in ("placement", "placement-catalog"):
        if (source, target) != ("zh", "en"):
            raise DatasetError(f"the {dataset} set is zh->en")
        notes = (["hand-checked sentences, each tag with the renderings that count (data/markup-placement.tsv)"]
                 if dataset == "placement" else
                 ["software catalog pairs with the same tags on both sides; the msgid's content of each tag "
                  "counts (software.tsv keeps its split, software-tm.tsv is split by a hash of the source)"])
        return MarkupSet(f"markup-{dataset}", source, target, split, build_placement(dataset, split), notes)
    if dataset == "hsk":
        if (source, target) != ("zh", "en"):
            raise DatasetError("the hsk markup set is zh->en; for other pairs use --dataset everyday (en->ja, en->de)")
        return MarkupSet("markup-hsk", source, target, split, build_hsk(split),
                         ["HSK levels 2-6 sentences with inline tags and placeholders added"])
    if dataset == "everyday":
        if source != "en" or target not in EVERYDAY_LANGS or target == "en":
            raise DatasetError("the everyday markup set is en->ja or en->de")
        return MarkupSet("markup-everyday", source, target, split, build_everyday(target, split),
                         ["everyday sentences with inline tags and placeholders added"])
    raise DatasetError(f"no markup set for dataset {dataset!r}; use hsk, everyday, placement or placement-catalog")


# --- scoring ----------------------------------------------------------------------------------
_HTML_TAG = re.compile(r"<(/?)([A-Za-z][\w:-]*)[^<>]*?(/?)>")
_VOID = {"br", "img", "wbr", "input", "hr"}


def tags_intact(source: str, output: str) -> bool:
    """The same tags, byte for byte, and validly nested."""
    if Counter(m.group() for m in _HTML_TAG.finditer(source)) != Counter(m.group() for m in _HTML_TAG.finditer(output)):
        return False
    stack: list[str] = []
    for match in _HTML_TAG.finditer(output):
        closing, name, self_closing = match.group(1), match.group(2).lower(), match.group(3)
        if self_closing or name in _VOID:
            continue
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def icu_skeleton(text: str) -> list:
    return [(a.name, a.kind, [re.sub(r"\s+", "", head.split("{")[-2] if head.count("{") > 1 else head)
                               for head, _ in a.branches]) for a in markup.icu_arguments(text)]


def intact(item: MarkupItem, output: str) -> bool:
    if item.fmt in ("html", "xml") and not tags_intact(item.source, output):
        return False
    visible = strip_html(output) if item.fmt in ("html", "xml") else output
    source = strip_html(item.source) if item.fmt in ("html", "xml") else item.source
    if markup.placeholders(source) != markup.placeholders(visible):
        return False
    return icu_skeleton(item.source) == icu_skeleton(output)


def strip_html(text: str) -> str:
    return html_lib.unescape(_HTML_TAG.sub("", text))


def edge_errors(item: MarkupItem, output: str, plain_output: str, target: str) -> list[str]:
    """Letters glued to a tag, spaces at a tag between CJK characters, capitals after a tag."""
    if item.fmt not in ("html", "xml"):
        return []
    errors = []
    unspaced = target in markup.UNSPACED
    for match in _HTML_TAG.finditer(output):
        before = strip_html(output[:match.start()])
        after = strip_html(output[match.end():])
        if unspaced:
            left, right = before.rstrip(), after.lstrip()
            if (left != before or right != after) and left and right and is_cjk(left[-1]) \
                    and is_cjk(right[0]):
                errors.append(f"space at {match.group()}")
        elif before[-1:].isalnum() and after[:1].isalnum() and not is_cjk(before[-1]):
            # glued only where the source had a space (or a CJK boundary) at this tag
            if _source_spaced_at(item.source, match.group()):
                errors.append(f"glued at {match.group()}")
        elif _empty_element(output, match) and before and after and (
                (before[-1].isspace() and after[0].isalnum()) or (before[-1].isalnum() and after[0].isspace())):
            errors.append(f"glued at {match.group()}")  # an image or placeholder touching a word
        if not unspaced and not match.group(1) and not match.group(3):
            word = re.match(r"[^\W\d_]+", after)
            stem = before.rstrip()
            if word and stem and stem[-1] not in ".!?:;\"“(" and len(word.group()) > 1 \
                    and word.group()[0].isupper() and word.group()[1:].islower() \
                    and not re.search(rf"(?<![.!?]\s)(?<!^)\b{re.escape(word.group())}\b", plain_output.strip()):
                errors.append(f"capital after {match.group()}: {word.group()}")
    return errors


_PUNCTUATION_AFTER_SPACE = ".,;:!?)…"


def space_before_punctuation(output: str, target: str) -> list[str]:
    """A space at a tag right before a punctuation mark ("<b>15%</b> ."), in a language written with
    spaces: where a format's runs meet, a space the translation put between a word and its punctuation."""
    if target in markup.UNSPACED:
        return []
    errors: list[str] = []
    seen: set[int] = set()
    for match in _HTML_TAG.finditer(output):
        before, after = strip_html(output[:match.start()]), strip_html(output[match.end():])
        spaced = before[-1:].isspace() or after[:1].isspace()
        mark = after.lstrip()[:1]
        if spaced and mark and mark in _PUNCTUATION_AFTER_SPACE and before.strip():
            junction = len(before.rstrip())  # one error a junction, however many tags meet there
            if junction not in seen:
                seen.add(junction)
                errors.append(f"space before {mark} at {match.group()}")
    return errors


def _empty_element(output: str, match: re.Match[str]) -> bool:
    """A void element, or an element with nothing inside (``<x id="0"></x>``), seen at its last tag."""
    if match.group(3) or match.group(2).lower() in _VOID:
        return not match.group(1)
    if match.group(1):  # an end tag right after its own start tag
        return bool(re.search(rf"<{re.escape(match.group(2))}\b[^<>]*>\Z", output[:match.start()]))
    return False


def _source_spaced_at(source: str, tag: str) -> bool:
    at = source.find(tag)
    if at < 0:
        return True
    before, after = strip_html(source[:at]), strip_html(source[at + len(tag):])
    return not (before[-1:].isalnum() and after[:1].isalnum() and not is_cjk(before[-1]))


@dataclass
class ItemResult:
    id: str
    group: str
    source: str
    output: str
    plain_output: str
    intact: bool
    edge_errors: list[str]
    retries: int | None
    fallbacks: int | None
    tags: list[TagResult] = field(default_factory=list)  # placement sets: each tag, expected and got


@dataclass
class MarkupReport:
    dataset: str
    source: str
    target: str
    split: str
    system: dict
    n: int
    groups: dict[str, int]
    integrity: float  # percent of outputs with every tag and placeholder intact
    fallbacks: int | None
    fallback_percent: float | None
    retries: int | None
    edge_errors: int
    placement: float | None  # placement sets: percent of tags on the right words
    placement_overlap: float | None  # ... and of tags whose content shares a content word with them
    placement_tags: int  # the tags scored
    placement_by_category: dict[str, dict]  # category -> {"tags", "right", "overlap"} (percent)
    markup_cost: float | None  # 100 - chrF(stripped output, tag-free translation), tag items
    chrf_tagged: float | None  # chrF against the references: tagged outputs, stripped
    chrf_plain: float | None  # ... and the tag-free translations
    elapsed_s: float
    notes: list[str]
    items: list[ItemResult] = field(default_factory=list)
    as_document: str = ""  # the items went as files of this format; "" for requests
    skipped: dict[str, int] = field(default_factory=dict)  # items that format cannot hold, by reason

    def summary(self) -> str:
        fallbacks = "n/a" if self.fallbacks is None else f"{self.fallbacks} ({self.fallback_percent:.1f}%)"
        cost = "n/a" if self.markup_cost is None else f"{self.markup_cost:.2f}"
        lines = [
            f"markup eval {self.dataset} {self.source}->{self.target} ({self.split}, n={self.n}, "
            + ", ".join(f"{k} {v}" for k, v in sorted(self.groups.items())) + f"), {self.system.get('model')}",
            f"  tag and placeholder integrity {self.integrity:.1f}%   fallbacks {fallbacks}   "
            f"retries {self.retries if self.retries is not None else 'n/a'}",
            f"  markup cost {cost} chrF (chrF vs reference: tagged {self.chrf_tagged}, plain {self.chrf_plain})"
            f"   edge errors {self.edge_errors}   {self.elapsed_s:.0f} s",
        ]
        if self.as_document:
            spaced = sum(e.startswith("space before ") for i in self.items for e in i.edge_errors)
            skipped = sum(self.skipped.values())
            lines.append(f"  as .{self.as_document} files: edge errors include {spaced} spaces before punctuation; "
                         f"skipped: {skipped}" + (" (" + "; ".join(f"{n} {why}" for why, n in sorted(
                             self.skipped.items(), key=lambda kv: (-kv[1], kv[0]))) + ")" if skipped else ""))
        if self.placement is not None:
            lines.append(f"  placement {self.placement:.1f}% of {self.placement_tags} tags on the right words "
                         f"(overlap {self.placement_overlap:.1f}%)")
            lines += [f"    {name:<16} {c['right']:5.1f}%  overlap {c['overlap']:5.1f}%  ({c['tags']} tags)"
                      for name, c in sorted(self.placement_by_category.items())]
        broken = [i for i in self.items if not i.intact or i.edge_errors]
        for item in broken[:12]:
            lines.append(f"  - {item.id}: {'BROKEN ' if not item.intact else ''}{'; '.join(item.edge_errors)}\n"
                         f"      {item.source}\n      {item.output}")
        misplaced = [(i, t) for i in self.items for t in i.tags if not t.right]
        for item, tag in misplaced[:12]:
            lines.append(f"  - {item.id} {tag.tag}: got {'(missing)' if tag.got is None else repr(tag.got)}, "
                         f"expected {' | '.join(tag.expected[:4])}{' | ...' if len(tag.expected) > 4 else ''}"
                         f"\n      {item.output}")
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, indent=2) + "\n"


async def evaluate_markup(mset: MarkupSet, target, progress: Callable[[int, int], None] | None = None,
                          concurrency: int = 2) -> MarkupReport:
    """Translate every item (and its tag-free twin), then score."""
    import time

    from mtserve.eval.scoring import Scorer

    await target.start()
    gate = asyncio.Semaphore(max(1, concurrency))
    done = 0
    started = time.perf_counter()

    failures: list[str] = []

    async def one(item: MarkupItem) -> ItemResult:
        nonlocal done
        async with gate:
            for attempt in range(2):  # a busy machine, a restart: one more try, then count it
                try:
                    output, usage = await target.translate_markup(item.source, mset.source_lang,
                                                                  mset.target_lang, item.fmt)
                    plain_output = await target.translate(item.plain, mset.source_lang, mset.target_lang) \
                        if item.plain else ""
                    break
                except Exception as exc:  # noqa: BLE001 - reported, and too many fail the run
                    if attempt:
                        failures.append(f"{item.id}: {type(exc).__name__}: {exc}")
                        output, usage, plain_output = "", None, ""
        done += 1
        if progress is not None:
            progress(done, len(mset.items))
        errors = edge_errors(item, output, plain_output, mset.target_lang)
        if mset.as_document:
            errors += space_before_punctuation(output, mset.target_lang)
        return ItemResult(item.id, item.group, item.source, output, plain_output, intact(item, output), errors,
                          None if usage is None else usage.markup_retries,
                          None if usage is None else usage.markup_fallbacks,
                          score_tags(item.expected, output) if item.expected else [])

    try:
        results = list(await asyncio.gather(*(one(item) for item in mset.items)))
        system = target.describe()
    finally:
        await target.stop()
    elapsed = time.perf_counter() - started
    if len(failures) > max(1, len(results) // 20):
        raise RuntimeError(f"{len(failures)} of {len(results)} items failed; the first: {failures[0]}")
    notes = mset.notes + [f"{len(failures)} items failed twice and count as broken" for _ in failures[:1]]
    scorer = Scorer(mset.target_lang)
    tagged = [(r, item) for r, item in zip(results, mset.items) if item.plain]
    cost = chrf_tagged = chrf_plain = None
    if tagged:
        stripped = [strip_html(r.output) for r, _ in tagged]
        plains = [r.plain_output for r, _ in tagged]
        refs = [item.reference for _, item in tagged]
        cost = round(100 - scorer.corpus(stripped, plains).chrf, 2)
        chrf_tagged, chrf_plain = scorer.corpus(stripped, refs).chrf, scorer.corpus(plains, refs).chrf
    known = [r for r in results if r.fallbacks is not None]
    scored = [t for r in results for t in r.tags]
    fallbacks = sum(bool(r.fallbacks) for r in known) if known else None
    return MarkupReport(
        dataset=mset.name, source=mset.source_lang, target=mset.target_lang, split=mset.split, system=system,
        n=len(results), groups=dict(Counter(r.group for r in results)),
        integrity=round(100 * sum(r.intact for r in results) / max(1, len(results)), 1),
        fallbacks=fallbacks,
        fallback_percent=None if fallbacks is None else round(100 * fallbacks / max(1, len(known)), 1),
        retries=sum(bool(r.retries) for r in known) if known else None,
        edge_errors=sum(len(r.edge_errors) for r in results), markup_cost=cost,
        placement=_percent([t.right for t in scored]) if scored else None,
        placement_overlap=_percent([t.overlap for t in scored]) if scored else None,
        placement_tags=len(scored), placement_by_category=by_category(scored),
        chrf_tagged=chrf_tagged, chrf_plain=chrf_plain, elapsed_s=round(elapsed, 1), notes=notes,
        items=results, as_document=mset.as_document, skipped=dict(mset.skipped),
    )


def _percent(flags: list[bool]) -> float:
    return round(100 * sum(flags) / max(1, len(flags)), 1)


def by_category(scored: list[TagResult]) -> dict[str, dict]:
    """Placement per category of tag (the hand set's cases; the catalog's words, verbatim, placeholder)."""
    found: dict[str, list[TagResult]] = {}
    for tag in scored:
        for category in tag.categories:
            found.setdefault(category, []).append(tag)
    return {name: {"tags": len(tags), "right": _percent([t.right for t in tags]),
                   "overlap": _percent([t.overlap for t in tags])} for name, tags in found.items()}
