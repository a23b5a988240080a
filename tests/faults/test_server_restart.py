"""A store server that restarts mid-scan is retried with backoff and the scan completes; one that is gone for
good stops the scan with a clear error, exit 2 and a state that resumes once the server is back."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.faults.kill_resume import build_store, cli_env, scan_command, state_ids, store_records
from tests.helpers import ChromaServer

pytestmark = pytest.mark.slow(minutes=5)

RECORDS = 400
BATCH = 16  # the scan reads a few pages ahead of the one it attacks: enough are left to meet the stopped server
PROGRESS = BATCH  # its first batch committed: the scan is under way, with most pages still to read (a scan that
# reuses its calibration's detections reads the rest within seconds)


def _scan_under_way(
    server: ChromaServer, tmp_path: Path, seed: int
) -> tuple[list[str], Path, Path, subprocess.Popen[bytes]]:
    """A store on ``server`` and a scan of it with a state, once its first batch is committed."""
    ids = build_store(server.url, RECORDS, seed=seed)
    state, log = tmp_path / "scan.sqlite", tmp_path / "scan.log"
    scan = _start(scan_command(server.url, tmp_path / "out", state, batch_size=BATCH), log)
    _wait_for_progress(scan, state)
    return ids, state, log, scan


def _wait_for_progress(scan: subprocess.Popen[bytes], state: Path) -> None:
    deadline = time.monotonic() + 300
    while len(state_ids(state)) < PROGRESS:
        assert scan.poll() is None, "the scan ended before the server went away"
        assert time.monotonic() < deadline, "the scan made no progress"
        time.sleep(0.1)


def _start(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=cli_env())


def test_a_server_restart_mid_scan_is_retried_and_the_scan_completes(
    server: ChromaServer, small_attacks, tmp_path: Path
) -> None:
    ids, state, log, scan = _scan_under_way(server, tmp_path, seed=4)
    server.stop()
    time.sleep(6)  # long enough for the scan to ask the stopped server for its next page
    server.start()
    assert scan.wait(timeout=600) in (0, 1), log.read_text()[-3000:]
    output = log.read_text()
    assert "retry" in output, "the scan met the stopped server and retried"
    assert sorted(state_ids(state)) == sorted(ids)
    assert json.loads((tmp_path / "out" / "report.json").read_text())["summary"]["records_scanned"] == RECORDS


def test_a_server_gone_for_good_stops_the_scan_with_exit_2_and_a_state_that_resumes(
    server: ChromaServer, small_attacks, tmp_path: Path
) -> None:
    ids, state, log, scan = _scan_under_way(server, tmp_path, seed=5)
    server.stop()
    assert scan.wait(timeout=300) == 2
    output = log.read_text()
    assert "Traceback" not in output and "is the server running?" in output, output[-3000:]
    assert "run the same command again to resume" in " ".join(output.split())
    done = state_ids(state)
    assert PROGRESS <= len(done) < RECORDS

    server.start()
    resumed = _start(scan_command(server.url, tmp_path / "out", state, batch_size=BATCH), log)
    assert resumed.wait(timeout=600) in (0, 1), log.read_text()[-3000:]
    assert sorted(state_ids(state)) == sorted(ids)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["summary"]["records_scanned"] == RECORDS
    flagged = [(finding["record_id"], finding["kind"]) for finding in report["findings"]]
    assert len(flagged) == len(set(flagged))


def test_a_postgresql_restart_is_retried_and_one_gone_for_good_stops_with_exit_2_and_resumes(
    small_attacks, own_pgvector_server, tmp_path: Path
) -> None:
    from vdbguard.connectors.pgvector import PgvectorConnector

    from tests.connectors.contract.backend_pgvector import SCRIPT, USER

    server = own_pgvector_server
    credentials = {"PGVECTOR_USER": USER, "PGVECTOR_PASSWORD": server.password}

    def pg(action: str) -> None:
        """Stop or start the same server (data folder and port) with the packaged script."""
        command = ["bash", str(SCRIPT), action, str(server.dir)] + ([str(server.port)] if action == "start" else [])
        subprocess.run(command, check=True, capture_output=True, timeout=120, env={**os.environ, **credentials})

    records = store_records(RECORDS, seed=7)
    with PgvectorConnector(collection="tickets", url=server.url()) as writer:
        writer.ensure_collection(384, "cosine")
        writer.upsert(records)
    state, log = tmp_path / "scan.sqlite", tmp_path / "scan.log"
    scan = _start(scan_command(server.url(), tmp_path / "out", state, connector="pgvector", batch_size=BATCH), log)
    _wait_for_progress(scan, state)
    pg("stop")
    time.sleep(4)
    pg("start")
    assert scan.wait(timeout=600) in (0, 1), log.read_text()[-3000:]
    output = log.read_text()
    assert "retry" in output, "the scan met the stopped server and retried"
    assert server.password not in output
    assert sorted(state_ids(state)) == sorted(r.id for r in records)

    # gone for good: exit 2, a clear error without the password, and a state that resumes once it is back
    state, log = tmp_path / "gone.sqlite", tmp_path / "gone.log"
    command = scan_command(server.url(), tmp_path / "out-gone", state, connector="pgvector", batch_size=BATCH)
    scan = _start(command, log)
    _wait_for_progress(scan, state)
    pg("stop")
    assert scan.wait(timeout=300) == 2, log.read_text()[-3000:]
    output = log.read_text()
    assert "Traceback" not in output and server.password not in output, output[-3000:]
    assert "run the same command again to resume" in " ".join(output.split())
    assert PROGRESS <= len(state_ids(state)) < RECORDS
    pg("start")
    assert _start(command, log).wait(timeout=600) in (0, 1), log.read_text()[-3000:]
    assert sorted(state_ids(state)) == sorted(r.id for r in records)
