"""Test helpers shared across test modules (plain functions; fixtures live in conftest.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
from vdbguard.connectors.base import CollectionInfo, Connector

from vdbguard.masking import mask_if
from vdbguard.records import Batch, VectorRecord
from vdbguard.reports.schema import Evidence, ExpectedQuality, Finding, Severity, Summary
from vdbguard.transforms.base import Transform


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chroma_executable() -> str | None:
    """The ``chroma`` command beside this interpreter, else on PATH."""
    candidate = Path(sys.executable).parent / ("chroma.exe" if os.name == "nt" else "chroma")
    return str(candidate) if candidate.exists() else shutil.which("chroma")


class ChromaServer:
    """A real ``chroma run`` process on a local port over a data folder, that a test can stop and start again."""

    def __init__(self, executable: str, workdir: Path, port: int | None = None) -> None:
        self.executable, self.workdir = executable, workdir
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> None:
        """Start the server and wait until it answers its heartbeat; RuntimeError with its log if it does not."""
        log = self.workdir / "server.log"
        command = [self.executable, "run", "--path", str(self.workdir / "data"), "--host", "127.0.0.1"]
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [*command, "--port", str(self.port)], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"chroma server exited with {self.process.returncode}:\n{log.read_text()[-2000:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1) as r:
                if r.status == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"chroma server did not answer within {timeout:.0f} s:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


@contextlib.contextmanager
def http_recorder(status: int = 200) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A real HTTP server on a free local port, in a thread, that keeps every POST (path, headers, body) and
    answers ``status``; yields its base URL and the list of requests."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            received.append({"path": self.path, "headers": dict(self.headers), "body": body})
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def make_records(n: int, dim: int, seed: int, *, collection: str = "") -> list[VectorRecord]:
    """``n`` records with random float32 vectors, a document and a small metadata dict each."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    groups = ("alpha", "beta", "gamma")
    return [
        VectorRecord(
            id=f"rec-{seed}-{i:05d}",
            vector=vectors[i],
            payload={"idx": i, "group": groups[i % len(groups)], "score": round(float(rng.random()), 6)},
            text=f"document {i} of seed {seed}: {groups[i % len(groups)]} notes",
            collection=collection,
        )
        for i in range(n)
    ]


def chroma_store_table(store: str | Path, collection: str, name: str = "demo") -> str:
    """A job file's [[stores]] table for ``collection`` of the embedded Chroma store at ``store``: the path as a
    literal string, so that a Windows path's backslashes are read as written."""
    return f'[[stores]]\nname = "{name}"\nconnector = "chroma"\npath = \'{store}\'\ncollections = ["{collection}"]\n'


def _toml_table(header: str, **values: object) -> str:
    """``header`` and a ``key = value`` line a value: strings and lists as JSON writes them, which TOML reads
    alike, anything else (a number, a date) as Python prints it."""
    lines = [f"{key} = {json.dumps(v) if isinstance(v, str | list) else v}" for key, v in values.items()]
    return "\n".join([header, *lines, ""])


def chroma_job(store: str | Path, collection: str, **job: str) -> str:
    """A job file with these ``[job]`` settings that scans ``collection`` of the embedded Chroma store at
    ``store`` (store "demo") and writes its json and sarif reports under reports/."""
    output = _toml_table("[output]", dir="reports", formats=["json", "sarif"])
    return f"{_toml_table('[job]', **job)}\n{chroma_store_table(store, collection)}\n{output}"


def suppression(record_id: str, reason: str, expires: date, owner: str = "qa", **scope: str) -> str:
    """One ``[[suppressions]]`` table, as a job file or a suppression list holds it."""
    return _toml_table("[[suppressions]]", record_id=record_id, **scope, reason=reason, owner=owner, expires=expires)


def make_evidence(
    attack: str, pii_type: str, score: float, threshold: float, recovered: str | None = None, *, masked: bool = False
) -> Evidence:
    """One attack's evidence with no detail; ``recovered`` masked when ``masked``, as a scan without --show-pii."""
    shown = None if recovered is None else mask_if(recovered, masked)
    return Evidence(attack=attack, pii_type=pii_type, score=score, threshold=threshold, detail="", recovered=shown)


def make_finding(record_id: str, severity: Severity, *evidence: Evidence, **fields: Any) -> Finding:
    """A finding in collection "notes" for the types its evidence names, in that order; ``fields`` set the rest."""
    fields = {"collection": "notes", "pii_types": [e.pii_type for e in evidence], **fields}
    return Finding(record_id=record_id, severity=severity, evidence=[*evidence], **fields)


def benchmark_quality(source: str, recall: float, false_positive_rate: float) -> ExpectedQuality:
    """The real-text benchmark's default-mode result on ``source``, as a report quotes it."""
    return ExpectedQuality(
        mode="default",
        source=source,
        recall=recall,
        false_positive_rate=false_positive_rate,
        measured_on="2025-02-01",
        command="python benchmarks/real_text.py",
    )


def bare_summary(scanned: int, flagged: int = 0) -> Summary:
    """A report summary of ``scanned`` records, ``flagged`` of them flagged, and nothing else counted."""
    return Summary(
        records_scanned=scanned,
        records_flagged=flagged,
        records_skipped=0,
        by_severity={},
        by_pii_type={},
        records_with_source_text=0,
        source_pii_records=0,
        source_pii_flagged=0,
    )


def make_chroma_store(
    path: str | Path, collection: str, n: int, dim: int, seed: int, *, metric: str = "l2"
) -> list[VectorRecord]:
    """Write ``n`` random records into an embedded Chroma store at ``path`` (created if missing)
    through the connector's upsert, and return the records written."""
    from vdbguard.connectors.chroma import ChromaConnector

    records = make_records(n, dim, seed, collection=collection)
    with ChromaConnector(collection=collection, path=path, create=True, metric=metric) as connector:
        connector.upsert(records)
    return records


class ListConnector(Connector):
    """Feeds hand-made records through the scanner in one batch, as a store holding broken rows would."""

    name = "list"
    extra = ""

    def __init__(self, records: list[VectorRecord]) -> None:
        self.records = records

    def describe(self) -> CollectionInfo:
        return CollectionInfo(name="list", count=len(self.records), dimension=None, metric="cosine")

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        yield Batch(self.records, cursor=None)

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        raise AssertionError("a scan must never write")


class Offset(Transform):
    """Adds ``strength`` to every coordinate: easy to check exactly in what the engine stored."""

    name = "offset"
    description = "adds a constant"
    strength_meaning = "offset"

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors, dtype=np.float32) + np.float32(self.strength)


class Rotation(Transform):
    """A seeded orthogonal rotation: it changes the stored space, so queries must be rotated too."""

    name = "test-rotation"
    description = "random orthogonal rotation"
    strength_meaning = "unused"

    def __init__(self, strength: float = 1.0, seed: int | None = 0, dim: int = 8) -> None:
        super().__init__(strength, seed)
        q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))
        self.matrix = q.astype(np.float32)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors, dtype=np.float32) @ self.matrix

    def apply_query(self, vectors: np.ndarray) -> np.ndarray:
        return self.apply(vectors)
