"""Every file vdbguard ships has a pipeline, and the data files a pipeline rebuilds are as built from today's inputs.

Hashes only (``pipelines/inputs.json``): nothing is rebuilt here."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = ROOT / "pipelines"


@pytest.fixture(scope="module")
def inputs():
    spec = importlib.util.spec_from_file_location("pipelines_inputs", PIPELINES / "inputs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_shipped_data_file_is_built_from_todays_inputs(inputs) -> None:
    stale = inputs.stale()
    assert not stale, "\n".join(stale)


def test_a_changed_input_fails_naming_the_commands_that_rebuild_the_file(inputs, tmp_path: Path) -> None:
    (tmp_path / "build.py").write_text("print('v1')\n")
    (tmp_path / "out.txt").write_text("built\n")
    manifest = {"files": {"out.txt": {"commands": ["python build.py"], "inputs": {"build.py": ""}, "sha256": ""}}}
    manifest = inputs.record(manifest, root=tmp_path)
    assert inputs.stale(manifest, root=tmp_path) == []
    (tmp_path / "build.py").write_text("print('v2')\n")
    [message] = inputs.stale(manifest, root=tmp_path)
    assert message.startswith("build.py changed since out.txt was built") and "python build.py" in message
    (tmp_path / "out.txt").write_text("edited by hand\n")
    assert any(m.startswith("out.txt is not the file") for m in inputs.stale(manifest, root=tmp_path))


def test_the_manifest_names_only_repository_files_that_exist(inputs) -> None:
    manifest = json.loads(inputs.MANIFEST.read_text())
    for output, entry in manifest["files"].items():
        assert output.startswith("vdbguard/data/"), output
        assert entry["commands"] and entry["rebuild"], output
        assert all((ROOT / name).is_file() for name in entry["inputs"]), output


def test_every_shipped_file_has_a_row_in_the_pipelines_readme() -> None:
    """A new file in ``vdbguard/data`` comes with the command that rebuilds it (or says why there is none)."""
    readme = (PIPELINES / "README.md").read_text()
    shipped = [p.name for p in (ROOT / "vdbguard" / "data").iterdir() if p.name not in {"__init__.py", "__pycache__"}]
    missing = [name for name in shipped if f"`{name}" not in readme]
    assert not missing, f"pipelines/README.md has no row for {missing}"
