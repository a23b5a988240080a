"""Chroma: the embedded PersistentClient and the real ``chroma run`` server."""

from __future__ import annotations

import sqlite3
import sys
import urllib.request
from pathlib import Path
from typing import Any

from tests.connectors.contract.harness import EmbeddedBackend, ServerProcessBackend


def _chroma_write_log(sqlite_path: Path) -> tuple[int, int]:
    """Chroma appends every add/upsert/delete to ``embeddings_queue``; collection creation to ``collections``."""
    with sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True) as db:
        seq = db.execute("SELECT coalesce(max(seq_id), 0) FROM embeddings_queue").fetchone()[0]
        collections = db.execute("SELECT count(*) FROM collections").fetchone()[0]
    return int(seq), int(collections)


class ChromaEmbedded(EmbeddedBackend):
    id = "chroma-embedded"
    connector_name = "chroma"
    metric = "l2"  # with "cosine" Chroma hands back vectors up to 1 ulp off (measured, chromadb 1.5.9)
    store = "store"
    make_folder = True


class ChromaServer(ServerProcessBackend):
    id = "chroma-server"
    connector_name = "chroma"
    metric = "l2"

    def command(self) -> list[str]:
        self.data = self.workdir / "data"
        executable = Path(sys.executable).parent / "chroma"
        return [str(executable), "run", "--path", str(self.data), "--host", "127.0.0.1", "--port", str(self.port)]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1):
                return True
        except OSError:
            return False

    def write_marker(self) -> Any:
        return _chroma_write_log(self.data / "chroma.sqlite3")
