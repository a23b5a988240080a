"""Records added, changed and deleted while a scan runs.

The semantics (docs/guarantees.md): a scan of an embedded store reads a private snapshot taken when it opens,
so it reports the collection exactly as it was then, whatever is written meanwhile; the next scan with the
same state attacks what was added or changed and resolves what was deleted. A server store is paged live:
the connector documents which of its paging schemes can skip or repeat rows under concurrent writes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import chromadb
from vdbguard.connectors.chroma import ChromaConnector

from tests.faults.kill_resume import state_ids
from vdbguard.detectors.presidio import PresidioDetector
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


def test_a_scan_reports_its_snapshot_and_the_next_scan_takes_the_changes(
    pii_store, small_attacks, embedder, tmp_path: Path
) -> None:
    source, collection, truth = pii_store
    path = tmp_path / "store"
    shutil.copytree(source, path)
    before = sorted(truth)
    added_text = "Please call Dr. Hannah Okafor on +1 415 555 0142 about the biopsy results."
    changed, deleted = before[0], before[1]

    def change() -> None:
        stored = chromadb.PersistentClient(path=str(path)).get_collection(collection)
        vector = embedder.encode([added_text])[0].tolist()
        stored.add(ids=["added-mid-scan"], embeddings=[vector], documents=[added_text])
        stored.update(ids=[changed], embeddings=[vector], documents=[added_text])
        stored.delete(ids=[deleted])

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
