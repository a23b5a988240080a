"""What vdbguard writes about a store is readable by its owner only: the state (0600, with SQLite's -wal and
-shm files), the cache of trained models (a 0700 folder), reports (0600); the Prometheus
metrics file stays 0644 because node_exporter reads it as another user."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from click.testing import CliRunner

from vdbguard.cache import cache_root
from vdbguard.cli import main
from vdbguard.scan import ScanStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_state_and_its_sqlite_files_are_owner_only(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        state = tmp_path / "scan.sqlite"
        with ScanStore(state) as store:
            store.db.execute("INSERT INTO meta VALUES ('probe', 'x')")
            files = [p for p in tmp_path.iterdir() if p.name.startswith("scan.sqlite")]
            assert {p.name for p in files} >= {"scan.sqlite", "scan.sqlite-wal"}
            assert {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}
        loose = tmp_path / "old.sqlite"
        ScanStore(loose).close()
        loose.chmod(0o644)  # a state written by an older vdbguard
        ScanStore(loose).close()
        assert _mode(loose) == 0o600
    finally:
        os.umask(old_umask)


def test_the_cache_folder_is_owner_only(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VDBGUARD_CACHE_DIR", str(tmp_path / "cache"))
    assert _mode(cache_root()) == 0o700
    (tmp_path / "cache").chmod(0o755)
    assert _mode(cache_root()) == 0o700


def test_a_scan_writes_owner_only_files_but_the_metrics(pii_store, small_attacks, tmp_path: Path) -> None:
    path, collection, _ = pii_store
    out, state, metrics = tmp_path / "out", tmp_path / "scan.sqlite", tmp_path / "vdbguard.prom"
    args = ["scan", "--connector", "chroma", "--path", str(path), "--collection", collection, "--profile", "small"]
    args += ["--out", str(out), "--state", str(state), "--metrics-file", str(metrics), "--format", "json,md,csv"]
    result = CliRunner().invoke(main, [*args, "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "report.json").read_text())["summary"]["records_scanned"] > 0
    for written in [*out.iterdir(), *tmp_path.glob("scan.sqlite*")]:
        if written.is_file():
            assert _mode(written) == 0o600, written
    assert _mode(metrics) == 0o644
