"""No module imports from a layer above its own: the pipeline reads bottom-up, and stays that way.

Function-level (lazy) imports count too: deferring an import does not remove the dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "pii", "masking", "cache", "progress", "text", "plugins", "credentials", "records", "data"),
    ("embedders", "reports", "connectors", "config", "identifiers", "baseline"),
    ("corpus",),
    ("detectors",),
    ("transforms",),
    ("attacks",),
    ("hooks",),
    ("scan", "evaluate", "protect", "audit", "subject"),
    ("demo", "cli"),
)
LAYER_OF = {unit: height for height, units in enumerate(LAYERS) for unit in units}


def _unit(dotted: str) -> str | None:
    """``vdbguard.scan.engine`` -> ``scan``; the package root itself has no unit (it only re-exports)."""
    parts = dotted.split(".")
    return parts[1] if parts[0] == "vdbguard" and len(parts) > 1 else None


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / "vdbguard").rglob("*.py")):
        relative = path.relative_to(ROOT / "vdbguard").with_suffix("")
        found["vdbguard." + ".".join(relative.parts)] = path
    for path in sorted((ROOT / "connectors").rglob("*.py")):
        found["vdbguard.connectors." + path.stem] = path
    return found


def _imports(path: Path) -> set[str]:
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "vdbguard":
                targets.update(f"vdbguard.{alias.name}" for alias in node.names)
            else:
                targets.add(node.module)
        elif isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
    return targets


def test_every_module_belongs_to_a_layer() -> None:
    units = {_unit(name) for name in _modules()} - {None, "__init__"}
    assert units <= set(LAYER_OF), f"add these to LAYERS: {sorted(units - set(LAYER_OF))}"


def test_no_module_imports_from_a_layer_above_it() -> None:
    upward = []
    for name, path in _modules().items():
        unit = _unit(name)
        if unit in (None, "__init__"):
            continue
        for target in _imports(path):
            target_unit = _unit(target)
            if target_unit in LAYER_OF and LAYER_OF[target_unit] > LAYER_OF[unit]:
                upward.append(f"{path.relative_to(ROOT)} imports {target} ({unit} -> {target_unit})")
    assert not upward, "imports from a higher layer:\n" + "\n".join(sorted(upward))


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from vdbguard.scan import scan_collection\n")
    assert "vdbguard.scan" in _imports(module)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of two or more modules (Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _module_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        targets = set()
        for target in _imports(path):
            while target and target not in modules and f"{target}.__init__" not in modules:
                target = target.rpartition(".")[0]  # "vdbguard.detectors.tagger.PersonTagger" -> its module
            target = target if target in modules else f"{target}.__init__"
            if target in modules and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def test_no_import_circle_in_the_package() -> None:
    """Modules read bottom-up within each package too (the detector's: lexicon and validators, recognizers, then the
    engine, Presidio's layout): a circle makes import order matter and hides which module a change reaches."""
    assert _cycles(_module_graph()) == []


def test_the_circle_check_sees_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
