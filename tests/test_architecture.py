"""The shape docs/architecture.md draws, checked: no import cycles, one-way layers.

Imports are read from the source (every ``import``, at module level or inside a
function, since a lazy import still ties two modules together), so the checks
cost nothing to run and need no optional dependency installed.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mtserve"
API_FAMILIES = ("libretranslate", "deepl", "openai", "files", "ops", "tm")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The mtserve modules ``path`` imports (``from a.b import c`` counts a.b.c when c is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from a.b import c``: the module a.b.c if there is one, else the module a.b itself
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    graph = {}
    for name, path in found.items():
        graph[name] = imports_of(path, known) - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for dep in graph.get(node, ()):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_engines_know_nothing_of_the_service_or_http():
    graph = import_graph()
    for name, deps in graph.items():
        if name.startswith("mtserve.engines"):
            bad = {d for d in deps if d.startswith(("mtserve.service", "mtserve.api", "mtserve.cli"))}
            assert not bad, f"{name} imports {sorted(bad)}"


def test_the_service_knows_nothing_of_http_or_the_cli():
    graph = import_graph()
    for name, deps in graph.items():
        if name.startswith(("mtserve.service", "mtserve.text", "mtserve.documents")):
            bad = {d for d in deps if d.startswith(("mtserve.api", "mtserve.cli"))}
            assert not bad, f"{name} imports {sorted(bad)}"


# The API families: each maps its own shape over what api/ shares (fields, keys, uploads, calls); none
# imports another.
FAMILIES = {
    "libretranslate": ("mtserve.api.libretranslate",),
    "deepl": ("mtserve.api.deepl", "mtserve.api.deepl_documents", "mtserve.api.deepl_v3"),
    "openai": ("mtserve.api.openai",),
    "files": ("mtserve.api.files",),
    "ops": ("mtserve.api.ops",),
    "tm": ("mtserve.api.tm",),
}


def test_no_api_family_imports_another():
    graph = import_graph()
    owner = {module: family for family, modules in FAMILIES.items() for module in modules}
    assert set(owner) <= set(graph), sorted(set(owner) - set(graph))
    for module, family in owner.items():
        foreign = {dep for dep in graph[module] if owner.get(dep, family) != family}
        assert not foreign, f"{module} imports {sorted(foreign)}"


def test_the_api_and_service_never_probe_an_engine_with_getattr():
    for path in sorted((PACKAGE / "api").glob("*.py")) + sorted((PACKAGE / "service").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr"):
                target = ast.unparse(node.args[0]) if node.args else ""
                assert "engine" not in target, f"{path.name}: {ast.unparse(node)}"


# --- the service's boundary -------------------------------------------------------------------------
# What the API may import of the service: its request and results, the service itself, and the stores and
# exceptions it exposes; never the pipeline inside it.
SERVICE_FOR_THE_API = {"request", "translator", "runtime", "access", "glossary", "glossary_store", "style_rules",
                       "tm", "tm_access", "scheduler",
                       "metrics", "background"}  # background: where bulk work (a TM import) runs
# Words that belong to one API family's shape, not to the service's.
FAMILY_WORDS = {"translatedText", "detectedLanguage", "translationMemory", "alternatives", "q",
                "detected_source_language", "billed_characters", "source_lang", "target_lang", "glossary_id",
                "choices", "chat.completion", "chat.completion.chunk", "delta", "done", "segment", "detected"}
# What a family hands down instead of doing itself: it builds a TranslationRequest and runs it.
RESOLVED_BY_THE_SERVICE = {"translate", "stream", "settle", "named_glossary", "resolve_source", "guidance_for",
                           "supports_formality", "check_pair", "style_instructions"}


def test_the_api_reaches_the_service_only_through_its_boundary():
    graph = import_graph()
    for name, deps in graph.items():
        if name.startswith("mtserve.api"):
            inner = {d for d in deps if d.startswith("mtserve.service.")
                     and d.split(".")[2] not in SERVICE_FOR_THE_API}
            assert not inner, f"{name} imports the service's insides: {sorted(inner)}"


def _strings(tree: ast.AST) -> set[str]:
    """The string constants of a module, less its docstrings."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}


# The server-wide glossary file's own JSON keys: a file format (docs/memory-and-glossaries.md), not an API's.
FILE_FORMAT_WORDS = {"glossary.py": {"source_lang", "target_lang"}}


def test_the_service_speaks_no_api_familys_field_names():
    for path in sorted((PACKAGE / "service").glob("*.py")):
        spoken = _strings(ast.parse(path.read_text(encoding="utf-8"))) & FAMILY_WORDS
        spoken -= FILE_FORMAT_WORDS.get(path.name, set())
        assert not spoken, f"{path.name} uses an API family's words: {sorted(spoken)}"


def test_families_hand_everything_down_and_resolve_nothing_themselves():
    for family in API_FAMILIES + ("deepl_documents", "deepl_v3"):
        path = PACKAGE / "api" / f"{family}.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                assert node.func.attr not in RESOLVED_BY_THE_SERVICE, f"{path.name}: {ast.unparse(node)}"

