"""The default verdict: one stacked model over every attack, fitted on real text the attacks never saw.

Without owner-side calibration the scan still decides each PII type once per record. The attacks score
the calibration split of :mod:`vdbguard.corpus.real` (other packages' prose, the Jargon File and IEEE
registrations, other Faker locales than training) and template sentences from another seed, by the vectors
alone, and :class:`~vdbguard.scan.verdict.StackedVerdict` is fitted on those scores with cutoffs at the
stated false-positive rate. Cached beside the trained attacks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from vdbguard.attacks import Attack
from vdbguard.attacks.training import model_folders
from vdbguard.cache import write_json_atomic
from vdbguard.corpus import LabelledText
from vdbguard.corpus.embedded import embed_corpus
from vdbguard.corpus.labelled import cached_corpus_hash
from vdbguard.detectors.base import Detector
from vdbguard.embedders import Embedder
from vdbguard.progress import ProgressSink, Silent
from vdbguard.records import VectorRecord
from vdbguard.scan.engine import Scanner
from vdbguard.scan.verdict import StackedVerdict

VERSION = 3


def verdict_corpus(records: int) -> list[LabelledText]:
    """What the packaged verdict is fitted on: ``records`` real sentences with PII and as many without, and a third as
    many of each from the templates (another seed than training and the demo)."""
    from vdbguard.corpus.generator import derive_seed, synthetic_clean, synthetic_pii  # Faker: only to fit
    from vdbguard.corpus.real import real_corpus

    templated = records // 3
    return [
        *real_corpus(records, records, seed=0, split="calibration"),
        *synthetic_pii(templated, seed=derive_seed(0, "verdict")),
        *synthetic_clean(templated, seed=derive_seed(0, "verdict")),
    ]


def verdict_corpus_hash(records: int) -> str:
    return cached_corpus_hash(f"verdict-{records}", lambda: verdict_corpus(records))


def packaged_verdict(
    attacks: Sequence[Attack],
    detector: Detector,
    embedder: Embedder,
    target_fpr: float,
    *,
    training_digest: str,
    cache_dir: Path | None = None,
    progress: ProgressSink | None = None,
    records: int,
) -> StackedVerdict:
    """The stacked verdict for these attacks on ``embedder``, from the cache or fitted now.

    ``records`` real PII and as many real clean sentences are scored, plus a third as many of each from the
    templates (another seed than training and the demo): stores hold both kinds of text.
    ``training_digest`` (the hash of the corpus the attacks learned from) keys the cache, so retrained
    attacks get a refitted verdict.
    """
    identity = {
        "version": VERSION,
        "attacks": [(a.name, a.version, a.threshold) for a in attacks],
        "detector": detector.built_in_identity(),  # a user's own types are never fitted here
        "training": training_digest,
        "calibration": verdict_corpus_hash(records),
        "target_fpr": target_fpr,
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    folders = model_folders(embedder, cache_dir)
    fitted = [folder / f"verdict-{key}.json" for folder in folders]
    for path in fitted:
        if path.exists():
            return StackedVerdict.from_json(json.loads(path.read_text()))
    path = fitted[0]
    corpus = verdict_corpus(records)
    embeddings = embed_corpus(embedder, corpus, progress, cache_dir)
    vectors = [VectorRecord(id=str(i), vector=v) for i, v in enumerate(embeddings)]
    with (progress or Silent()).task("Fitting the verdict on held-out real text", None):
        scores = Scanner(attacks, detector, embedder.dimension).evidence_scores(vectors)
        verdict = StackedVerdict.fit(scores, [item.pii for item in corpus], target_fpr)
    write_json_atomic(path, verdict.to_json())
    return verdict
