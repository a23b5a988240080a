"""Stores the scan tests share."""

from __future__ import annotations

from pathlib import Path

import lancedb
import numpy as np
import pytest
from vdbguard.connectors.chroma import ChromaConnector
from vdbguard.connectors.lancedb import LanceDBConnector


@pytest.fixture(scope="module")
def lance_store(pii_store, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 120 demo notes (half with PII, a third without their text) and two bad rows, in LanceDB."""
    chroma_path, collection, _ = pii_store
    with ChromaConnector(collection=collection, path=chroma_path) as source:
        records = [record for batch in source.iter_batches() for record in batch.records]
    for record in records[::3]:
        record.text = None
    path = tmp_path_factory.mktemp("lance") / "store"
    with LanceDBConnector(collection="notes", path=path) as target:
        target.ensure_collection(384)
        target.upsert(records)
    bad = [("bad-nan", np.full(384, np.nan)), ("bad-zero", np.zeros(384))]  # the connector refuses to write these
    rows = [{"id": i, "vector": v.tolist(), "payload": "{}"} for i, v in bad]
    lancedb.connect(path).open_table("notes").add(rows, on_bad_vectors="null")  # NaN: stored as a missing vector
    return path
