"""Cache files are replaced whole: a writer that fails half-way leaves the previous file and no debris."""

from __future__ import annotations

from pathlib import Path

import pytest

from vdbguard.cache import atomic_write, write_json_atomic


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state.json"
    write_json_atomic(path, {"done": 3})
    with pytest.raises(RuntimeError), atomic_write(path, "w") as handle:
        handle.write('{"done": ')
        raise RuntimeError("killed half-way")
    assert path.read_text() == '{"done": 3}'
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.json"]
