"""The demo: an embedded Chroma store where we know which records hold PII, scanned like any other.

Demo texts are held out from attack training: other Faker seed, other half of the human corpus.
The ground truth stays outside the store; the scan sees vectors and payloads only.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from vdbguard.corpus import human_sentences, synthetic_clean, synthetic_pii
from vdbguard.embedders import Embedder
from vdbguard.progress import ProgressSink, Silent
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import STORED_TEXT, VECTOR, Report

DEMO_COLLECTION = "demo_notes"
DEMO_SEED = 1_000_003
# The held-out human lines that name a person, real or fictional, found by reading all 346 of them: spaCy's NER, which
# filters the human corpus, missed them, and the demo counts its human lines clean, so a scan that found these names
# was scored as wrong. HAL 9000 and ELIZA are programs, not people, and stay.
NAMES_A_PERSON = frozenset(
    {
        "Gregory said I respond to the current line, not with respect to the entire conversation. Does that count as "
        "gossip?",
        "In which of Britney’s video does she appear as a stewardess?",
        "What book starts with the line “Call me Ishmael.”?",
        "What is the name of the prehistoric town in which The Flinstones live?",
        "who is piers anthony",
    }
)


@dataclass(frozen=True)
class DemoMetrics:
    """Records flagged by one kind of finding (``VECTOR`` or ``STORED_TEXT``), scored against the ground truth."""

    kind: str
    pii_records: int
    flagged_pii: int
    clean_records: int
    flagged_clean: int

    @property
    def recall(self) -> float:
        return self.flagged_pii / max(self.pii_records, 1)

    @property
    def false_positive_rate(self) -> float:
        return self.flagged_clean / max(self.clean_records, 1)

    @property
    def precision(self) -> float:
        return self.flagged_pii / max(self.flagged_pii + self.flagged_clean, 1)


def demo_texts(n_records: int, seed: int = DEMO_SEED) -> list[tuple[str, bool]]:
    """Half PII sentences, a quarter clean look-alikes, a quarter human-written lines that name nobody; shuffled."""
    humans = [text for text in human_sentences("holdout") if text not in NAMES_A_PERSON]
    n_pii = n_records // 2
    n_human = min((n_records - n_pii) // 2, len(humans))
    rng = random.Random(seed)
    texts = [(item.text, True) for item in synthetic_pii(n_pii, seed=seed)]
    texts += [(item.text, False) for item in synthetic_clean(n_records - n_pii - n_human, seed=seed)]
    texts += [(text, False) for text in rng.sample(humans, n_human)]
    rng.shuffle(texts)
    return texts


def build_demo_store(
    store: Path, n_records: int, embedder: Embedder, progress: ProgressSink | None = None
) -> dict[str, bool]:
    """Write the demo collection to an embedded Chroma store; returns record id -> holds PII."""
    from vdbguard.connectors.chroma import ChromaConnector

    progress = progress or Silent()
    texts = demo_texts(n_records)
    with progress.task("Embedding demo records", len(texts)) as advance:
        vectors = embedder.encode([text for text, _ in texts], progress=advance)
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir(parents=True)
    records = [
        VectorRecord(id=f"note-{i:05d}", vector=vector, payload={"kind": "note"}, text=text)
        for i, ((text, _), vector) in enumerate(zip(texts, vectors, strict=True))
    ]
    with ChromaConnector(collection=DEMO_COLLECTION, path=store, create=True) as connector:
        for start in range(0, len(records), 500):
            connector.upsert(records[start : start + 500])
    return {record.id: has_pii for record, (_, has_pii) in zip(records, texts, strict=True)}


def demo_metrics(report: Report, truth: dict[str, bool], kind: str) -> DemoMetrics:
    """How well one kind of finding told the records with PII: ``VECTOR``, what the vectors alone gave away;
    ``STORED_TEXT``, what the PII detector read in the stored text."""
    flagged = {finding.record_id for finding in report.iter_findings() if finding.kind == kind}
    return DemoMetrics(
        kind=kind,
        pii_records=sum(truth.values()),
        flagged_pii=sum(1 for rid, pii in truth.items() if pii and rid in flagged),
        clean_records=sum(1 for pii in truth.values() if not pii),
        flagged_clean=sum(1 for rid, pii in truth.items() if not pii and rid in flagged),
    )


def run_demo(
    out: Path, n_records: int, profile: str, formats: Sequence[str], progress: ProgressSink | None = None
) -> tuple[Report, list[DemoMetrics]]:
    """Build the demo store under ``out/store`` and scan it as a user would (no owner-side calibration); the reports,
    the ground truth and the scan's score against it, by the vectors and by the stored text, go into ``out``."""
    from vdbguard.connectors.chroma import ChromaConnector
    from vdbguard.reports import write_reports
    from vdbguard.scan import ScanSettings, ScanTarget, scan_collection
    from vdbguard.scan.owner import OFF

    embedder = Embedder()
    store = out / "store"
    truth = build_demo_store(store, n_records, embedder, progress=progress)
    with ChromaConnector(collection=DEMO_COLLECTION, path=store) as connector:
        report = scan_collection(
            connector,
            ScanTarget("chroma", str(store)),
            ScanSettings(profile=profile, calibration=OFF),
            embedder=embedder,
            progress=progress,
        )
    write_reports(report, out, formats)
    (out / "ground-truth.json").write_text(json.dumps(truth, indent=0))
    metrics = [demo_metrics(report, truth, kind) for kind in (VECTOR, STORED_TEXT)]
    (out / "demo-metrics.json").write_text(json.dumps({m.kind: asdict(m) for m in metrics}, indent=2))
    return report, metrics
