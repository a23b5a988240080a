"""Qdrant: local mode (``QdrantClient(path=...)``), a server (the REST double) and Qdrant Edge shards."""

from __future__ import annotations

from typing import Any

from tests.connectors.contract.harness import DoubleBackend, EmbeddedBackend
from tests.connectors.doubles.qdrant_rest import QdrantRestDouble

API_KEY = "vdbguard-test-qdrant-key-7f3a9c"
READ_ONLY_API_KEY = "vdbguard-test-qdrant-read-only-key-41d2"


class QdrantLocal(EmbeddedBackend):
    """qdrant-client local mode. Cosine is fine here: the connector reads the sqlite file, which keeps
    vectors as written (only a live local client's in-memory copy is normalised)."""

    id = "qdrant-local"
    connector_name = "qdrant"
    named_vectors = True
    metric = "cosine"
    store = "store"
    sparse = True


class QdrantRemote(DoubleBackend):
    """The real QdrantClient over REST against tests/connectors/doubles/qdrant_rest.py. metric l2: a Qdrant server
    normalises Cosine vectors on insert, so they cannot come back bit for bit (tests/test_qdrant_extra.py)."""

    id = "qdrant-remote"
    connector_name = "qdrant"
    named_vectors = True
    metric = "l2"
    api_key = API_KEY
    bad_api_key = "not-the-qdrant-key-e81b"

    def make_double(self) -> Any:
        return QdrantRestDouble(api_key=API_KEY, read_only_api_key=READ_ONLY_API_KEY)


class QdrantEdge(EmbeddedBackend):
    """qdrant-edge-py shards, one folder per collection. metric l2: Edge normalises Cosine vectors too."""

    id = "qdrant-edge"
    connector_name = "qdrant-edge"
    named_vectors = True
    metric = "l2"
    store = "shards"
    sparse = True
