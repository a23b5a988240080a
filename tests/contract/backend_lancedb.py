"""LanceDB: an embedded database directory (``lancedb.connect(path)``)."""

from __future__ import annotations

from typing import Any

from tests.contract.harness import Backend, tree_checksums


class LanceDBEmbedded(Backend):
    id = "lancedb"
    connector_name = "lancedb"
    named_vectors = True
    metric = "cosine"

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "path": str(self.workdir / "db")}

    def connector(self, collection: str, **overrides: Any):
        (self.workdir / "db").mkdir(exist_ok=True)
        return super().connector(collection, **overrides)

    def write_marker(self) -> Any:
        """Lance never rewrites a file in place: any write adds data files, a manifest and a transaction
        file, so the names and checksums of every file under the database directory catch it."""
        return tree_checksums(self.workdir / "db")
