"""A disk that refuses writes (simulated with RLIMIT_FSIZE: writes past the limit fail with EFBIG, as on a full
disk, and root's permission bypass does not apply) while copying the store, writing the state or a report: a
clear error and exit 2, and what was there before is intact."""

from __future__ import annotations

import contextlib
import json
import resource
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.kill_resume import build_store, cli_env, scan_command, state_ids, tree_digest
from tests.helpers import ChromaServer
from tests.reports.test_writers import make_report
from vdbguard.errors import VdbguardError
from vdbguard.reports import write_reports

LIMIT = 4096  # bytes a process may write into one file


def _small_disk() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, resource.RLIM_INFINITY))


def _scan(command: list[str], limited: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, env=cli_env(), capture_output=True, text=True, preexec_fn=_small_disk if limited else None
    )


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    return " ".join((result.stdout + result.stderr).split())


def test_no_room_for_the_snapshot_is_a_clear_error_and_the_store_is_untouched(small_attacks, tmp_path: Path) -> None:
    store = tmp_path / "store"
    build_store(store, 60)
    before = tree_digest(store)
    result = _scan(scan_command(store, tmp_path / "out", tmp_path / "scan.sqlite"), limited=True)
    output = _one_line(result)
    assert result.returncode == 2, output
    assert "cannot copy" in output and "private snapshot" in output and "TMPDIR" in output, output
    assert "Traceback" not in output
    assert tree_digest(store) == before


def test_a_state_the_disk_cannot_grow_is_a_clear_error_and_keeps_its_batches(
    server: ChromaServer, small_attacks, tmp_path: Path
) -> None:
    ids = build_store(server.url, 300, seed=6)
    state, first, second = tmp_path / "scan.sqlite", tmp_path / "first", tmp_path / "second"
    assert _scan(scan_command(server.url, first, state), limited=False).returncode in (0, 1)
    report_before = (first / "report.json").read_bytes()

    result = _scan(scan_command(server.url, second, state), limited=True)
    output = _one_line(result)
    assert result.returncode == 2, output
    assert "cannot write the state file" in output and "free disk space" in output, output
    assert "not a vdbguard state" not in output and "Traceback" not in output
    assert sorted(state_ids(state)) == sorted(ids), "the state keeps what the first scan committed"
    assert (first / "report.json").read_bytes() == report_before

    assert _scan(scan_command(server.url, second, state), limited=False).returncode in (0, 1)
    assert json.loads((second / "report.json").read_text())["summary"]["records_scanned"] == len(ids)


@contextlib.contextmanager
def _small_disk_here() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def test_a_report_the_disk_cannot_take_is_a_clear_error_and_the_previous_one_stays(tmp_path: Path) -> None:
    report = make_report()
    report = report.model_copy(update={"findings": report.findings * 40})  # past the limit
    write_reports(report, tmp_path, ["json"])
    before = (tmp_path / "report.json").read_bytes()
    assert len(before) > LIMIT
    with _small_disk_here(), pytest.raises(VdbguardError, match="cannot write the report") as error:
        write_reports(report.model_copy(update={"tool_version": "next"}), tmp_path, ["json"])
    assert "free disk space" in str(error.value)
    assert (tmp_path / "report.json").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"], "no temporary file left behind"
