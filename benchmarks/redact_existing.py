"""Redaction of an existing collection (issue #45 item 1): the demo store, protected with `redact`, scanned again.

    OMP_NUM_THREADS=2 python benchmarks/redact_existing.py --records 2000 --profile small

Builds the demo's embedded Chroma collection (notes, half with PII; `vdbguard.demo`), copies it through
`protect_collection(..., TextRedaction(strength), embed=MiniLM)` (each note's text redacted and embedded again,
the stored text redacted), scans source and copy with the same settings (the fast tier, vectors' findings only)
and prints the records flagged per PII type before and after. Retrieval, two ways, on the PII-free notes:
known-item recall@10 (half of a note's words as the query must find the note, `evaluate-defense`'s measure), and
the overlap of each note's 10 nearest notes before and after (its text as the query, redacted for the copy, as a
guarded pipeline redacts queries). The issue's targets: ≥ 90% fewer PERSON records flagged, neighbour recall@10
on PII-free queries ≥ 0.98. With ``--real-cache``, the same on real sentences, also without the PII-free ones that two
readers found a person named in all the same (``gold_review.json``).
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from common import bench_parser
from vdbguard.connectors.chroma import ChromaConnector

from vdbguard.demo import DEMO_COLLECTION, build_demo_store
from vdbguard.embedders import Embedder
from vdbguard.evaluate.defense import half_query, known_item_retrieval, neighbour_recall
from vdbguard.protect import protect_collection
from vdbguard.scan import ScanSettings, ScanTarget, scan_collection
from vdbguard.scan.owner import OFF
from vdbguard.transforms.redaction import TextRedaction

PROTECTED = "demo_notes_redacted"


def flagged_by_type(store: Path, collection: str, embedder: Embedder, profile: str) -> Counter[str]:
    with ChromaConnector(collection=collection, path=store) as connector:
        report = scan_collection(
            connector,
            ScanTarget("chroma", str(store)),
            ScanSettings(profile=profile, calibration=OFF, finding_kinds=("vector",)),
            embedder=embedder,
        )
    return Counter(t for finding in report.iter_findings() for t in finding.pii_types)


def vectors_of(store: Path, collection: str) -> dict[str, tuple[np.ndarray, str | None]]:
    with ChromaConnector(collection=collection, path=store) as connector:
        return {r.id: (np.asarray(r.vector), r.text) for b in connector.iter_batches() for r in b.records}


def retrieval(before: np.ndarray, after: np.ndarray, queries_after: np.ndarray, clean: list[int]) -> dict[str, float]:
    """Overlap of each PII-free record's 10 nearest records before and after redaction: among every record (the
    records that held PII moved, as they must), and among the PII-free records only (what redaction did to text
    that needed none: the detector's false positives)."""
    mask = np.zeros(len(before), dtype=bool)
    mask[clean] = True
    scores = before[clean] @ before.T
    scores[np.arange(len(clean)), clean] = -np.inf
    ranked = -np.sort(-scores, axis=1)
    return {
        "every_record": neighbour_recall(before, after, queries_after, rows=mask),
        "pii_free_records": neighbour_recall(before[clean], after[clean], queries_after[clean]),
        # why the first can hardly stay put: how far redaction moves a record with PII, how close the ranks sit
        "pii_moved_median": float(np.median(1 - np.sum(before[~mask] * after[~mask], axis=1))),
        "gap_10th_11th_median": float(np.median(ranked[:, 9] - ranked[:, 10])),
    }


def real_text(cache: Path, records: int, seed: int) -> tuple[list[str], list[bool]]:
    """Real sentences nobody on the project wrote (``detector_real.py``'s eval sources), one per frame: half
    with a name or number value in them, half without."""
    import detector_real

    items = detector_real.build_items(detector_real.unpack(cache), "eval", seed)
    rng = random.Random(seed)
    rng.shuffle(items)
    frames: set[str] = set()
    with_pii, without = [], []
    for item in items:
        frame = detector_real.norm(item.text)
        for span in (*item.gold, *item.mentions):
            frame = frame.replace(detector_real.norm(item.text[span.start : span.end]), " ")
        if frame in frames or item.register.startswith("gloss") or item.register in ("product-line", "contact-block"):
            continue
        frames.add(frame)
        (with_pii if item.gold else without).append(item.text)
    half = records // 2
    return with_pii[:half] + without[:half], [True] * half + [False] * half


def names_a_person() -> set[str]:
    """The PII-free real sentences two readers both found a person named in (``gold_review.json``)."""
    review = json.loads(Path(__file__).with_name("gold_review.json").read_text(encoding="utf-8"))
    return {row["text"] for row in review["names_a_person"]["sentences"]}


def fmt(result: dict[str, float]) -> str:
    return (
        f"{result['every_record']:.3f} / {result['pii_free_records']:.3f} (a record with PII moved by a median cosine "
        f"distance of {result['pii_moved_median']:.3f}; 10th and 11th neighbours a median "
        f"{result['gap_10th_11th_median']:.4f} apart)"
    )


def main() -> None:
    parser = bench_parser(__doc__, records=2000)
    parser.add_argument("--profile", default="small", choices=["default", "small"])
    parser.add_argument("--strength", type=float, default=0.4)
    parser.add_argument("--real-cache", type=Path, help="detector_real.py's --cache: also measure on real text")
    args = parser.parse_args()
    embedder = Embedder()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "store"
        truth = build_demo_store(store, args.records, embedder)
        started = time.monotonic()
        redaction = TextRedaction(strength=args.strength)
        with (
            ChromaConnector(collection=DEMO_COLLECTION, path=store) as source,
            ChromaConnector(collection=PROTECTED, path=store, create=True) as target,
        ):
            result = protect_collection(source, target, redaction, embed=embedder.encode, embedder_name=embedder.name)
        protect_seconds = time.monotonic() - started
        before = flagged_by_type(store, DEMO_COLLECTION, embedder, args.profile)
        after = flagged_by_type(store, PROTECTED, embedder, args.profile)
        original, copy = vectors_of(store, DEMO_COLLECTION), vectors_of(store, PROTECTED)
    clean = sorted(rid for rid, pii in truth.items() if not pii)
    ids = sorted(original)
    rows = [ids.index(rid) for rid in clean]
    docs_before = np.stack([original[rid][0] for rid in ids])
    docs_after = np.stack([copy[rid][0] for rid in ids])
    texts = [original[rid][1] or "" for rid in ids]
    redacted = redaction.transform_texts(texts)
    queries_after = embedder.encode(redacted)
    recall = neighbour_recall(docs_before, docs_after, queries_after)
    clean_recall = retrieval(docs_before, docs_after, queries_after, rows)
    clean_recall["pii_free_changed"] = sum(texts[i] != redacted[i] for i in rows) / len(rows)
    rng = random.Random(0)
    halves = [half_query(original[rid][1] or "", rng) for rid in ids]
    mask = np.zeros(len(ids), dtype=bool)
    mask[rows] = True
    known_before, _ = known_item_retrieval(embedder.encode(halves), docs_before, rows=mask)
    known_after, _ = known_item_retrieval(embedder.encode(redaction.transform_texts(halves)), docs_after, rows=mask)
    types = sorted(set(before) | set(after))
    print(f"copied {result.copied} of {args.records} notes in {protect_seconds:.0f} s ({result.skipped} skipped)")
    print("| PII type | records flagged before | after | cut |")
    print("|---|---:|---:|---:|")
    for pii_type in types:
        cut = 1 - after[pii_type] / before[pii_type] if before[pii_type] else float("nan")
        print(f"| {pii_type} | {before[pii_type]} | {after[pii_type]} | {cut:.1%} |")
    print(f"known-item recall@10 of PII-free half-queries: {known_before:.3f} before, {known_after:.3f} after")
    print(f"overlap of the 10 nearest notes, every note as the query: {recall:.3f}")
    print(f"PII-free notes as queries, among every note / among PII-free notes: {fmt(clean_recall)}")
    print(f"PII-free notes redaction changed: {clean_recall['pii_free_changed']:.3f}")
    out = {
        "command": " ".join(["python", "benchmarks/redact_existing.py", *map(str, vars(args).values())]),
        "before": before,
        "after": after,
        "known_item_recall_at_10_pii_free": [known_before, known_after],
        "neighbour_recall_at_10": recall,
        "neighbour_recall_at_10_pii_free": clean_recall,
        "protect_seconds": protect_seconds,
    }
    if args.real_cache:
        texts, pii = real_text(args.real_cache, args.records, seed=0)
        redacted = redaction.transform_texts(texts)
        clean = [i for i, has in enumerate(pii) if not has]
        vectors, redacted_vectors = embedder.encode(texts), embedder.encode(redacted)
        real = retrieval(vectors, redacted_vectors, redacted_vectors, clean)
        real["pii_free_changed"] = sum(texts[i] != redacted[i] for i in clean) / len(clean)
        print(f"real text, PII-free sentences as queries, among every / PII-free sentence: {fmt(real)}")
        print(f"real text, PII-free sentences redaction changed: {real['pii_free_changed']:.3f}")
        out["real_text"] = real
        named = names_a_person()
        reviewed = [i for i in clean if texts[i] not in named]
        real = retrieval(vectors, redacted_vectors, redacted_vectors, reviewed)
        real["pii_free_changed"] = sum(texts[i] != redacted[i] for i in reviewed) / len(reviewed)
        print(f"the same, {len(clean) - len(reviewed)} sentences that name a person left out: {fmt(real)}")
        out["real_text_reviewed"] = real
    print(json.dumps(out, default=dict))


if __name__ == "__main__":
    main()
