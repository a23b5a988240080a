"""How much of each address the detector finds, where redaction needs all of it (a smoke test: the demo's templates).

    OMP_NUM_THREADS=1 python benchmarks/address_coverage.py [--detector presidio]

detector_real.py counts an address found when any span touches it; ``protect --transform redact`` replaces only what
was found, so "9" of "9 Pamela Row, Lake Adam, S5 3WH" leaves the street and the postcode in the embedded text. This
scores, on the templates' addresses (``synthetic_pii``, Faker's demo locales, another seed than the demo's), the mean
share of an address's characters (spaces and commas aside) inside ADDRESS detections and the share found whole, and,
on template texts without an address (``synthetic_clean`` and the PII templates of other types), the share given one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipelines"))

from detector_real import make_detector
from train_address_tagger import coverage

from vdbguard.corpus import synthetic_clean, synthetic_pii


def is_address(kind: object) -> bool:
    return str(kind).endswith("ADDRESS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--detector", default="presidio", help="an entry-point name or package.module:Class")
    parser.add_argument("--texts", type=int, default=1500, help="PII templates drawn (about a fifth hold an address)")
    args = parser.parse_args()
    detector = make_detector(args.detector)
    drawn = synthetic_pii(args.texts, seed=31)
    with_address = [item for item in drawn if any(is_address(kind) for kind in item.pii)]
    without = [item.text for item in synthetic_clean(args.texts // 2, seed=5)]
    without += [item.text for item in drawn if not any(is_address(kind) for kind in item.pii)]
    shares = []
    for item, found in zip(with_address, detector.detect_many([i.text for i in with_address]), strict=True):
        spans = [(d.start, d.end, d.score) for d in found if is_address(d.pii_type)]
        for kind, values in item.values.items():
            if is_address(kind):
                shares += [coverage(item.text, (s, s + len(v)), spans) for v in values for s in [item.text.index(v)]]
    given = sum(any(is_address(d.pii_type) for d in found) for found in detector.detect_many(without))
    print(json.dumps({
        "detector": args.detector, "addresses": len(shares), "characters_found": round(sum(shares) / len(shares), 3),
        "found_whole": round(sum(s == 1.0 for s in shares) / len(shares), 3), "texts_without_one": len(without),
        "given_one": round(given / len(without), 4),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
