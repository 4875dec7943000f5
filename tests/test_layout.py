"""The package's layout is a picture of its architecture: imports flow one way.

Every ``import`` and ``from ... import`` of every module under ``src/markovgames`` (at module
level, inside functions, and under ``TYPE_CHECKING`` alike: a cycle through any of them is a
cycle in the design) is read with `ast`, without importing anything, and resolved to the module
it names. The graph of modules must have no cycle; collapsed to the top-level packages, and to
the rooms of ``experiments``, it must have none either (a package imports another, never back);
the modules of ``games`` import down its layers (`GAMES_LAYERS`); and no module imports the
package root ``markovgames``, whose names are only a facade. No module is longer than
`MAX_MODULE_LINES` lines: a longer one is split along a seam of its design.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "markovgames"
#: The most lines a module may have (CONTRIBUTING.md: no file past about 800 lines).
MAX_MODULE_LINES = 800


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted((SRC / ROOT).rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(importer: str, node: ast.ImportFrom) -> str:
    """The absolute module that ``from ... import`` names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not _is_package(importer):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str) -> set[str]:
    """The markovgames modules that module ``name`` imports (a name imported from a package is the
    module of that name when there is one, else the package itself)."""
    tree = ast.parse(MODULES[name].read_text(), filename=str(MODULES[name]))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(name, node)
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names]
        else:
            continue
        for target in targets:
            if target == ROOT or target.startswith(ROOT + "."):
                while target not in MODULES:  # ``import markovgames.x.y`` of a name, not a module
                    target = target.rpartition(".")[0]
                found.add(target)
    found.discard(name)
    return found


GRAPH = {name: _imports(name) for name in MODULES}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (its nodes in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def _collapsed(prefix: str) -> dict[str, set[str]]:
    """The graph of the packages directly under ``prefix`` (``prefix.x.*`` -> ``prefix.x``), with
    the modules directly in ``prefix`` as nodes of their own and the package ``prefix`` left out."""
    depth = prefix.count(".") + 2

    def group(name: str) -> str | None:
        if not name.startswith(prefix + "."):
            return None
        return ".".join(name.split(".")[:depth])

    collapsed: dict[str, set[str]] = {}
    for name, targets in GRAPH.items():
        source = group(name)
        if source is None:
            continue
        edges = collapsed.setdefault(source, set())
        edges.update(t for t in map(group, targets) if t is not None and t != source)
    return collapsed


def test_the_graph_is_read():
    """The reader finds what it must (so that an empty graph cannot pass the tests below)."""
    assert len(MODULES) > 100
    assert "markovgames.experiments.sweeps._config" in GRAPH["markovgames.experiments.sweeps._plan"]
    assert "markovgames.games" in GRAPH["markovgames.dynamics._run"]
    # a cycle is found when there is one
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_import_cycle():
    assert _cycle(GRAPH) is None


@pytest.mark.parametrize("prefix", ["markovgames", "markovgames.experiments"])
def test_packages_import_one_way(prefix):
    """The top-level packages (cli, experiments, bridges, dynamics, ... games) and the rooms of
    experiments (rundirs, sweeps, figures) form no cycle when each is taken as a whole."""
    assert _cycle(_collapsed(prefix)) is None


def test_nothing_imports_the_package_root():
    importers = sorted(name for name, targets in GRAPH.items() if ROOT in targets)
    assert importers == []


#: The layers of ``markovgames.games``, bottom first: the models, the game files (what both formats
#: share, the two formats, the entry points that dispatch on the kind of game, their facade), the
#: built-in games, resolving a name or a path, the package's facade. A module imports only modules
#: of lower layers (so the two formats never import each other, nor reading and writing).
GAMES_LAYERS = [
    ["_units"],
    ["_model"],
    ["_discounted"],
    ["_io._base"],
    ["_io._finite", "_io._discounted"],
    ["_io._read", "_io._write"],
    ["_io"],
    ["_builtin"],
    ["_discounted_builtin"],
    ["_resolve"],
    [""],
]


def test_games_is_layered():
    prefix = ROOT + ".games"
    layer = {f"{prefix}.{m}".rstrip("."): k for k, names in enumerate(GAMES_LAYERS) for m in names}
    modules = {name for name in MODULES if name == prefix or name.startswith(prefix + ".")}
    assert modules == set(layer)  # a new module takes its place in a layer
    upward = sorted(f"{name} -> {target}" for name in modules for target in GRAPH[name] & modules if layer[target] >= layer[name])
    assert upward == []


def test_no_module_is_too_long():
    lengths = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    # The reader counts what ``wc -l`` counts (a module this long exists, so a count of 0 cannot pass).
    assert max(lengths.values()) > MAX_MODULE_LINES // 2
    too_long = sorted(f"{name}: {n} lines" for name, n in lengths.items() if n > MAX_MODULE_LINES)
    assert too_long == []
