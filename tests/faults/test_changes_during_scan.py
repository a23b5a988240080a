"""Records added, changed and deleted while a scan runs.

The semantics (docs/guarantees.md): a scan of an embedded store reads a private snapshot taken when it opens,
so it reports the collection exactly as it was then, whatever is written meanwhile; the next scan with the
same state attacks what was added or changed and resolves what was deleted. A server store is paged live:
the connector documents which of its paging schemes can skip or repeat rows under concurrent writes, and
Chroma's server (offset paging, the one that can skip) is tested live here.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import chromadb
from vdbguard.connectors.chroma import ChromaConnector

from tests.faults.kill_resume import state_ids
from vdbguard.detectors.presidio import PresidioDetector
from vdbguard.embedders import Embedder
from vdbguard.records import Batch
from vdbguard.scan import Scanner


class ChangingConnector(ChromaConnector):
    """A real Chroma connector that lets ``change`` write to the store once its first batch is out."""

    def __init__(self, *, change: Callable[[], None], **kwargs) -> None:
        super().__init__(**kwargs)
        self.change = change

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        for served, batch in enumerate(super().iter_batches(batch_size, resume_from)):
            yield batch
            if served == 0:
                self.change()


def add_change_delete(stored: chromadb.Collection, embedder: Embedder, changed: str, deleted: str) -> None:
    """The writes the tests make once a scan's first batch is out: a record added, ``changed`` overwritten with
    its text and vector, and ``deleted`` removed."""
    added_text = "Please call Dr. Hannah Okafor on +1 415 555 0142 about the biopsy results."
    vector = embedder.encode([added_text])[0].tolist()
    stored.add(ids=["added-mid-scan"], embeddings=[vector], documents=[added_text])
    stored.update(ids=[changed], embeddings=[vector], documents=[added_text])
    stored.delete(ids=[deleted])


def test_a_scan_reports_its_snapshot_and_the_next_scan_takes_the_changes(
    pii_store, small_attacks, embedder, tmp_path: Path
) -> None:
    source, collection, truth = pii_store
    path = tmp_path / "store"
    shutil.copytree(source, path)
    before = sorted(truth)
    changed, deleted = before[0], before[1]

    def change() -> None:
        stored = chromadb.PersistentClient(path=str(path)).get_collection(collection)
        add_change_delete(stored, embedder, changed, deleted)

    scanner = Scanner(small_attacks, PresidioDetector(), dimension=384)
    state = tmp_path / "scan.sqlite"
    with ChangingConnector(collection=collection, path=path, change=change) as connector:
        during = scanner.scan(connector, batch_size=16, state_path=state, target="t")
    assert during.records_scanned == len(before), "the snapshot taken at the start, nothing more, nothing less"
    assert sorted(state_ids(state)) == before

    with ChromaConnector(collection=collection, path=path) as connector:
        after = scanner.scan(connector, batch_size=16, state_path=state, target="t")
    assert after.coverage.records_attacked == 2, "the added record and the changed one"
    assert after.records_scanned == len(before)  # one added, one deleted
    assert sorted(state_ids(state)) == sorted({*before, "added-mid-scan"} - {deleted})
    assert "added-mid-scan" in {finding.record_id for finding in after.findings}


def test_a_live_server_scan_counts_nothing_twice_and_the_next_scan_holds_exactly_the_collection(
    pii_store, small_attacks, embedder, tmp_path: Path
) -> None:
    """A real ``chroma run``, paged live by offset: writes after the first page (one record added, one changed,
    one deleted among the pages already read, which shifts every later offset by one) may make the scan skip a
    row; nothing is counted twice, and the next scan with the same state holds exactly the collection."""
    import pytest

    from tests.helpers import ChromaServer, chroma_executable

    executable = chroma_executable()
    if executable is None:
        pytest.skip("the `chroma` executable is not installed (pip install 'vdbguard[chroma]')")
    source, collection, _ = pii_store
    stored = chromadb.PersistentClient(path=str(source)).get_collection(collection)
    rows = stored.get(include=["embeddings", "documents"])
    server = ChromaServer(executable, tmp_path / "server")
    (tmp_path / "server").mkdir()
    server.start()
    try:
        live = chromadb.HttpClient(host="127.0.0.1", port=server.port).create_collection(
            collection, embedding_function=None
        )
        live.add(ids=rows["ids"], embeddings=rows["embeddings"], documents=rows["documents"])
        order = rows["ids"]
        read_first, changed = order[0], order[40]

        def change() -> None:
            add_change_delete(live, embedder, changed, read_first)

        scanner = Scanner(small_attacks, PresidioDetector(), dimension=384)
        state = tmp_path / "scan.sqlite"
        with ChangingConnector(collection=collection, url=server.url, change=change) as connector:
            during = scanner.scan(connector, batch_size=16, state_path=state, target="t")
        ids = state_ids(state)
        assert len(ids) == len(set(ids)) == during.records_scanned, "nothing counted twice"
        assert set(ids) <= {*order, "added-mid-scan"}
        final = sorted({*order, "added-mid-scan"} - {read_first})
        with ChromaConnector(collection=collection, url=server.url) as connector:
            after = scanner.scan(connector, batch_size=16, state_path=state, target="t")
        skipped = set(final) - set(ids)
        assert len(skipped) <= 1, "one deletion behind the cursor shifts the offsets by one row"
        assert sorted(state_ids(state)) == final and after.records_scanned == len(final)
        assert after.coverage.records_attacked == len(skipped), "the next scan attacks what the live one skipped"
    finally:
        server.stop()
