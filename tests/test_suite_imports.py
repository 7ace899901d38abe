"""The test suite's own shape: test modules share code through helper modules, never through each other.

A test module that imports another (or a conftest) runs that module's fixtures and module-level code
in a second place, and a rename there breaks an unrelated file. Servers come from tests/servers.py,
fixtures from conftest.py files, data and doubles from tests/fakes.py and per-package helpers.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
VENDORED = TESTS / "deepl_client_suite" / "deepl_tests"  # DeepL's own suite, kept as it ships (its README)


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def is_test_module(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def test_no_test_module_or_conftest_is_imported():
    offenders = {}
    for path in sorted(TESTS.parent.glob("tests/**/*.py")) + sorted(TESTS.parent.glob("benchmarks/**/*.py")):
        if VENDORED in path.parents:
            continue
        bad = sorted(name for name in imported_modules(path)
                     if (name.startswith(("tests.", ".")) or name == "tests") and is_test_module(name))
        if bad:
            offenders[str(path.relative_to(TESTS.parent))] = bad
    assert offenders == {}, "import these from tests/servers.py or a helpers module instead"


def test_the_check_sees_such_an_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from tests.api.test_api_behaviour import serve\nfrom .conftest import FakeTarget\n")
    assert {"tests.api.test_api_behaviour.serve", ".conftest"} <= imported_modules(module)
    assert is_test_module("tests.api.test_api_behaviour") and is_test_module(".conftest")
    assert not is_test_module("tests.servers") and not is_test_module("tests.engines.helpers")
