"""Chroma: the embedded PersistentClient and the real ``chroma run`` server."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.contract.harness import Backend, tree_checksums
from tests.helpers import free_port


def _chroma_write_log(sqlite_path: Path) -> tuple[int, int]:
    """Chroma appends every add/upsert/delete to ``embeddings_queue``; collection creation to ``collections``."""
    with sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True) as db:
        seq = db.execute("SELECT coalesce(max(seq_id), 0) FROM embeddings_queue").fetchone()[0]
        collections = db.execute("SELECT count(*) FROM collections").fetchone()[0]
    return int(seq), int(collections)


class ChromaEmbedded(Backend):
    id = "chroma-embedded"
    connector_name = "chroma"
    metric = "l2"  # with "cosine" Chroma hands back vectors up to 1 ulp off (measured, chromadb 1.5.9)

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "path": str(self.workdir / "store"), "create": False}

    def connector(self, collection: str, **overrides: Any):
        (self.workdir / "store").mkdir(exist_ok=True)
        return super().connector(collection, **overrides)

    def write_marker(self) -> Any:
        return tree_checksums(self.workdir / "store")


class ChromaServer(Backend):
    id = "chroma-server"
    connector_name = "chroma"
    metric = "l2"

    def start(self) -> None:
        self.port = free_port()
        self.data = self.workdir / "data"
        executable = Path(sys.executable).parent / "chroma"
        self.log = open(self.workdir / "server.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [str(executable), "run", "--path", str(self.data), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError((self.workdir / "server.log").read_text()[-2000:])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        self.log.close()

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "url": f"http://127.0.0.1:{self.port}"}

    def write_marker(self) -> Any:
        return _chroma_write_log(self.data / "chroma.sqlite3")

    def unreachable_kwargs(self, collection: str) -> dict[str, Any]:
        return {"url": f"http://127.0.0.1:{free_port()}"}
