"""Qdrant: local mode (``QdrantClient(path=...)``), a server (the REST double) and Qdrant Edge shards."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.contract.harness import Backend
from tests.doubles.qdrant_rest import QdrantRestDouble
from tests.helpers import free_port

API_KEY = "vdbguard-test-qdrant-key-7f3a9c"
READ_ONLY_API_KEY = "vdbguard-test-qdrant-read-only-key-41d2"


def sparse_tree_marker(root: Path) -> dict[str, tuple[int, int, str]]:
    """(size, mtime_ns, sha256 of the written extents) of every file under ``root``.

    Like ``tree_checksums`` but reads only the data extents of sparse files (Qdrant preallocates
    32 MiB WAL and mmap files that hold a few KiB), so a marker costs what was written, not 100+ MiB.
    A hole that is written, even with zeros, becomes a data extent and changes the marker.
    """
    marker = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        digest = hashlib.sha256()
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            position = 0
            while position < size:
                try:
                    start = os.lseek(file.fileno(), position, os.SEEK_DATA)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:
                        break
                    raise
                end = os.lseek(file.fileno(), start, os.SEEK_HOLE)
                file.seek(start)
                digest.update(start.to_bytes(8, "little"))
                digest.update(file.read(end - start))
                position = end
        marker[str(path.relative_to(root))] = (size, path.stat().st_mtime_ns, digest.hexdigest())
    return marker


class QdrantLocal(Backend):
    """qdrant-client local mode. Cosine is fine here: the connector reads the sqlite file, which keeps
    vectors as written (only a live local client's in-memory copy is normalised)."""

    id = "qdrant-local"
    connector_name = "qdrant"
    named_vectors = True
    metric = "cosine"

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "path": str(self.workdir / "store")}

    def write_marker(self) -> Any:
        return sparse_tree_marker(self.workdir / "store")


class QdrantRemote(Backend):
    """The real QdrantClient over REST against tests/doubles/qdrant_rest.py. metric l2: a Qdrant server
    normalises Cosine vectors on insert, so they cannot come back bit for bit (tests/test_qdrant_extra.py)."""

    id = "qdrant-remote"
    connector_name = "qdrant"
    named_vectors = True
    credentials = True
    transient_errors = True
    metric = "l2"

    def start(self) -> None:
        self.double = QdrantRestDouble(api_key=API_KEY, read_only_api_key=READ_ONLY_API_KEY)
        self.url = self.double.start()

    def stop(self) -> None:
        self.double.stop()

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "url": self.url, "api_key": API_KEY}

    def write_marker(self) -> Any:
        return self.double.writes

    def unreachable_kwargs(self, collection: str) -> dict[str, Any]:
        return {"url": f"http://127.0.0.1:{free_port()}"}

    def bad_credentials_kwargs(self, collection: str) -> dict[str, Any]:
        return {"api_key": "not-the-qdrant-key-e81b"}

    @contextmanager
    def failing(self, times: int) -> Iterator[None]:
        self.double.fail_next(times)
        try:
            yield
        finally:
            self.double.fail_next(0)


class QdrantEdge(Backend):
    """qdrant-edge-py shards, one folder per collection. metric l2: Edge normalises Cosine vectors too."""

    id = "qdrant-edge"
    connector_name = "qdrant-edge"
    named_vectors = True
    metric = "l2"

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "path": str(self.workdir / "shards")}

    def write_marker(self) -> Any:
        return sparse_tree_marker(self.workdir / "shards")
