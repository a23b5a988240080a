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
