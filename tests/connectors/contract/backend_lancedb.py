"""LanceDB: an embedded database directory (``lancedb.connect(path)``)."""

from __future__ import annotations

from tests.connectors.contract.harness import EmbeddedBackend


class LanceDBEmbedded(EmbeddedBackend):
    """Lance never rewrites a file in place: any write adds data files, a manifest and a transaction
    file, so the names and checksums of every file under the database directory catch it."""

    id = "lancedb"
    connector_name = "lancedb"
    named_vectors = True
    metric = "cosine"
    store = "db"
    make_folder = True
