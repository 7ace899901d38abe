"""pyproject.toml as setuptools reads it at install: no deprecation warnings, the licence as SPDX."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_METADATA = """
import sys
from setuptools import build_meta
print(build_meta.prepare_metadata_for_build_wheel(sys.argv[1]))
"""


def test_the_metadata_builds_without_warnings_and_names_the_licence_by_spdx(tmp_path):
    project = tmp_path / "project"
    (project / "mtserve").mkdir(parents=True)
    (project / "mtserve" / "__init__.py").write_text("")  # the package's files do not change the metadata
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    out = tmp_path / "metadata"
    out.mkdir()
    built = subprocess.run([sys.executable, "-W", "always", "-c", BUILD_METADATA, str(out)], cwd=project,
                           capture_output=True, text=True, timeout=120)
    said = built.stdout + built.stderr
    assert built.returncode == 0, said
    assert "deprecat" not in said.lower() and "warning" not in said.lower(), said
    metadata = (out / built.stdout.strip().splitlines()[-1] / "METADATA").read_text(encoding="utf-8")
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
