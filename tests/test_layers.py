"""No module imports from a layer above its own: the pipeline reads bottom-up, and stays that way.

Function-level (lazy) imports count too: deferring an import does not remove the dependency. Calls are followed
too: in a real `vdbguard scan`, work handed from a lower layer's file up to a higher one's (a callback) stays rare.
"""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "pii", "masking", "cache", "memory", "progress", "text", "plugins", "credentials", "records", "data"),
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


def _layer_of_file(filename: str) -> tuple[int, str] | None:
    """(layer, path in the checkout) of a vdbguard source file; None for anything else (libraries, tests)."""
    path = Path(filename)
    if not path.is_relative_to(ROOT):
        return None
    relative = path.relative_to(ROOT)
    if relative.parts[0] == "connectors":
        return LAYER_OF["connectors"], str(relative)
    if relative.parts[0] != "vdbguard" or len(relative.parts) < 2:
        return None
    unit = relative.parts[1].removesuffix(".py")
    return (LAYER_OF[unit], str(relative)) if unit in LAYER_OF else None


def _hand_offs(run: Callable[[], Any]) -> tuple[Any, dict[tuple[str, str], bool]]:
    """What ``run`` returns, and each (caller file, callee file) pair of vdbguard's files it called across, in any
    thread: True where the callee's layer is above the caller's."""
    seen: dict[tuple[str, str], bool] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee, caller = _layer_of_file(frame.f_code.co_filename), _layer_of_file(frame.f_back.f_code.co_filename)
        if callee is not None and caller is not None and callee[1] != caller[1]:
            seen.setdefault((caller[1], callee[1]), callee[0] > caller[0])

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        result = run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return result, seen


def test_a_scan_rarely_hands_work_up_a_layer(pii_store, model_cache: Path, tmp_path: Path) -> None:
    """Followed from `scan`'s flags to its report, a call from a lower layer's file into a higher one's is a place
    where the pipeline stops reading bottom-up; generators a lower layer iterates count too. At most 15."""
    from click.testing import CliRunner

    from vdbguard.cli import main

    path, collection, _ = pii_store
    args = ["scan", "--connector", "chroma", "--path", str(path), "--collection", collection, "--out", str(tmp_path)]
    result, seen = _hand_offs(lambda: CliRunner().invoke(main, args))
    assert result.exit_code == 1, result.output
    assert (tmp_path / "report.json").exists()
    upward = sorted(f"{caller} -> {callee}" for (caller, callee), up in seen.items() if up)
    assert len(seen) > 50, "the trace missed the scan"
    assert len(upward) <= 15, "calls up a layer:\n" + "\n".join(upward)


def test_the_call_trace_sees_a_call_up_a_layer() -> None:
    low, high = ROOT / "vdbguard" / "errors.py", ROOT / "vdbguard" / "cli" / "common.py"
    names: dict[str, Any] = {}
    exec(compile("def callback():\n    return 1\n", str(high), "exec"), names)
    exec(compile("def call(f):\n    return f()\n", str(low), "exec"), names)
    result, seen = _hand_offs(lambda: names["call"](names["callback"]))
    assert result == 1
    assert seen == {("vdbguard/errors.py", "vdbguard/cli/common.py"): True}
