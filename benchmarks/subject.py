"""Data-subject find (issue #15): per-record recall for people a store holds, and how often a person it does not
hold gets any record, with the text kept and with the text redacted (the vector made before redaction).

The store (embedded Chroma): records that name people, plus chatterbot and, when ````common.real_sentences````
works, Debian lines as records about nobody. ``--source real``: real docstring sentences of the calibration-split
packages with a name placed where real text carries one ("Tested by ...", "Credit goes to ..."; our frames, not
our sentences; calibration-split Faker locales). ``--source templates``: our template sentences with en_NZ /
en_IN names (a smoke test). Present people are named in the store; absent people come from the same source and
locales and are not. A record "relates" to a person when its PII labels hold their full name.

    OMP_NUM_THREADS=1 python benchmarks/subject.py --out bench-subject --people 60 --source real
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import real_sentences
from vdbguard.connectors import load_connector

from vdbguard.attacks.training import trained_attacks
from vdbguard.corpus import LabelledText, human_sentences, synthetic_pii
from vdbguard.corpus.real import real_corpus
from vdbguard.embedders import Embedder
from vdbguard.pii import PiiType
from vdbguard.records import VectorRecord
from vdbguard.subject import Subject, find_subject

HELDOUT_LOCALES = ("en_NZ", "en_IN")
_TITLE = re.compile(r"^(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof)\.?\s+")


def _names(values: dict[PiiType, tuple[str, ...]]) -> list[str]:
    names = (_TITLE.sub("", v) for v in values.get(PiiType.PERSON, ()))
    return [n for n in names if len(n.split()) >= 2]


def _redacted(text: str, values: dict[PiiType, tuple[str, ...]]) -> str:
    for kind, found in values.items():
        for value in sorted(found, key=len, reverse=True):
            text = text.replace(value, f"<{kind.name}>")
    return text


def _debian(out: Path, n: int) -> list[str]:
    try:
        lines = [line for line in real_sentences(out / "real-text.txt") if 20 < len(line) < 200]
    except RuntimeError:
        return []
    return random.Random(1).sample(lines, min(n, len(lines)))


def named_items(source: str, n: int, seed: int) -> list[LabelledText]:
    if source == "real":
        items = real_corpus(n, 0, seed=seed, split="calibration")
    else:
        items = synthetic_pii(n, seed=seed, locales=HELDOUT_LOCALES)
    return [item for item in items if _names(item.values)]


def build_store(
    path: Path, embedder: Embedder, n_pii: int, redact: bool, out: Path, source: str
) -> tuple[dict[str, set[str]], int]:
    """Write the store; return which record ids name each full name, and the store size."""
    pii = named_items(source, n_pii, seed=999 if source == "templates" else 12)
    others = human_sentences("holdout")[: n_pii // 2] + _debian(out, n_pii)
    texts = [item.text for item in pii] + others
    stored = [_redacted(item.text, item.values) if redact else item.text for item in pii] + others
    vectors = embedder.encode(texts)
    owners: dict[str, set[str]] = {}
    for i, item in enumerate(pii):
        for name in _names(item.values):
            owners.setdefault(name, set()).add(str(i))
    connector = load_connector("chroma")(collection="notes", path=path, create=True)
    with connector:
        connector.ensure_collection(embedder.dimension, "cosine")
        records = [
            VectorRecord(str(i), v, {"document": t}) for i, (v, t) in enumerate(zip(vectors, stored, strict=True))
        ]
        for start in range(0, len(records), 500):
            connector.upsert(records[start : start + 500])
    return owners, len(texts)


def run(condition: str, args: argparse.Namespace, embedder: Embedder, attacks: Sequence[Any]) -> dict[str, Any]:
    store = args.out / f"store-{args.source}-{condition.replace(' ', '-')}"
    owners, size = build_store(store, embedder, args.pii_records, condition == "redacted", args.out, args.source)
    rng = random.Random(0)
    present = rng.sample(sorted(owners), min(args.people, len(owners)))
    absent_pool = {n for item in named_items(args.source, 3 * args.pii_records, seed=4242) for n in _names(item.values)}
    absent = rng.sample(sorted(absent_pool - set(owners)), args.people)
    per_method: dict[str, list[int]] = {}
    relevant = hits = extra = 0
    absent_with_records = 0
    started = time.perf_counter()
    connector = load_connector("chroma")(collection="notes", path=store)
    with connector:
        for name in present + absent:
            found = find_subject(connector, Subject(name=name), embedder, "notes", attacks)
            ids = {r.id for r in found.records}
            if name in owners:
                truth = owners[name]
                relevant += len(truth)
                hits += len(ids & truth)
                extra += len(ids - truth)
                for record in found.records:
                    for method in record.methods:
                        per_method.setdefault(method, [0, 0])[record.id in truth] += 1
            else:
                absent_with_records += bool(ids)
    seconds = time.perf_counter() - started
    return {
        "condition": condition,
        "store_records": size,
        "present_people": len(present),
        "absent_people": len(absent),
        "record_recall": round(hits / max(relevant, 1), 4),
        "records_related": relevant,
        "records_found_unrelated": extra,
        "absent_people_with_any_record": round(absent_with_records / len(absent), 4),
        "by_method_unrelated_related": per_method,
        "seconds_per_query": round(seconds / (len(present) + len(absent)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--people", type=int, default=60)
    parser.add_argument("--pii-records", type=int, default=400)
    parser.add_argument("--attack", action="append", default=None, help="inversion attacks (default bag-of-words)")
    parser.add_argument("--profile", default="small")
    parser.add_argument("--source", choices=("real", "templates"), default="real")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    embedder = Embedder()
    attacks = trained_attacks(embedder, args.attack or ["bag-of-words"], profile=args.profile)
    results = [run(condition, args, embedder, attacks) for condition in ("text kept", "redacted")]
    summary = {"attacks": [a.name for a in attacks], "profile": args.profile, "source": args.source, "results": results}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
