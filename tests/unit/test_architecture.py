"""The architecture as tests: import floors, no import cycles, the size budget (README.md,
"Architecture").

Every import in the library and the tools counts, module-level or inside a function, and so
does every `import_module("libpypto....")` with a literal name: a lazy import is still an
import. A module may import its own package and the floors below its own; never a peer of its
floor or anything above.
"""
from __future__ import annotations

import ast
import pathlib

import networkx as nx
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# floor of each part of the library, from the ground up (README.md, "Architecture")
FLOORS = {
    "errors": 0,
    "ir": 1,
    "targets": 2, "analysis": 2,
    "frontend": 3, "prolang": 3, "passes": 3, "sched": 3, "codegen": 3, "runtime": 3, "sim": 3, "prof": 3,
    "driver": 4,
    "jit": 5, "pro": 5,
    "cli": 6,
    "tools": 7,
}
FACADE = "libpypto"          # libpypto/__init__.py: the lazy public API, above everything
MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 800


def modules() -> dict[str, pathlib.Path]:
    """Dotted module name -> file, for the library and the tools."""
    out = {}
    for p in sorted((ROOT / "libpypto").rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    for p in sorted((ROOT / "tools").glob("pypto-*/*.py")):
        pkg = p.parent.name.replace("-", "_")
        out[pkg if p.stem == "__init__" else f"{pkg}.{p.stem}"] = p
    return out


def part_of(module: str) -> str | None:
    """The part (a key of FLOORS) a module belongs to; None for the facade and others."""
    if module.startswith("pypto_"):
        return "tools"
    parts = module.split(".")
    if parts[0] != "libpypto" or len(parts) == 1:
        return None
    return parts[1] if parts[1] in FLOORS else None


def imports_of(module: str, path: pathlib.Path) -> set[str]:
    """Library and tool modules that `module` imports, anywhere in its file."""
    is_pkg = path.name == "__init__.py"
    package = module if is_pkg else module.rpartition(".")[0]
    known = modules()
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            subs = {f"{base}.{a.name}" for a in node.names}
            out.update(subs)
            if not subs <= set(known):      # names from the module itself, not submodules
                out.add(base)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(
                node.func, "attr", None)) == "import_module" and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            out.add(node.args[0].value)
    return {m for m in out if m in known and m != module}


def graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for m, p in modules().items():
        g.add_node(m)
        for dep in imports_of(m, p):
            g.add_edge(m, dep)
    return g


def test_every_part_has_a_floor():
    parts = {part_of(m) for m in modules()} - {None}
    assert parts <= set(FLOORS)
    top = {p.name for p in (ROOT / "libpypto").iterdir()
           if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"}
    top = {t.removesuffix(".py") for t in top} - {"__init__"}
    assert top <= set(FLOORS), f"parts of libpypto without a floor: {top - set(FLOORS)}"


def test_imports_only_go_down():
    bad = []
    for m, dep in graph().edges:
        a, b = part_of(m), part_of(dep)
        if a is None or b is None or a == b:
            continue
        if FLOORS[b] >= FLOORS[a]:
            bad.append(f"{m} ({a}, floor {FLOORS[a]}) imports {dep} ({b}, floor {FLOORS[b]})")
    assert not bad, "imports that do not go down:\n" + "\n".join(sorted(bad))


def test_nothing_imports_the_facade_or_a_tool():
    g = graph()
    bad = [f"{m} imports {d}" for m, d in g.edges
           if (d == FACADE or part_of(d) == "tools") and part_of(m) != "tools"]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    cycles = list(nx.simple_cycles(graph()))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c + c[:1]) for c in cycles)


def test_tracing_never_imports_execution():
    g = graph()
    reach = set()
    for m in g:
        if part_of(m) == "frontend":
            reach |= nx.descendants(g, m)
    bad = sorted(m for m in reach if part_of(m) in ("runtime", "codegen", "driver", "jit",
                                                    "sched", "passes"))
    assert not bad, f"the frontend reaches {bad}"


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@pytest.mark.parametrize("path", sorted((ROOT / "libpypto").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_size_budget(path):
    text = path.read_text()
    assert len(text.splitlines()) <= MAX_FILE_LINES, f"{path.name}: split it"
    long = [f"{f.name} ({f.end_lineno - f.lineno + 1} lines)" for f in _functions(ast.parse(text))
            if f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {', '.join(long)}"
