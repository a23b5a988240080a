"""Names placed in real sentences: how many the detector finds, and clean sentences given a person.

    OMP_NUM_THREADS=1 python benchmarks/placed_names.py [--split calibration] [--detector presidio] [--records 1500]

``real_corpus`` (``vdbguard/corpus/real.py``): real docstring and register sentences of a split's sources with Faker
names of its locales in our credit, sign-off and record frames ("... (Ms Calbo, account 4716 ...)"), beside as many
sentences with no PII. The frames are ours, so this is a smoke test of the frames redaction and owner-side labels meet
most, not an evaluation: ``detector_real.py`` is that. The train split is a dev set; of the calibration split's nine
locales the tagger never trained on five (en_NZ, da_DK, fi_FI and ro_RO fill its frames).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_parser
from detector_real import make_detector

from vdbguard.corpus.real import real_corpus
from vdbguard.pii import PiiType


def main() -> None:
    parser = bench_parser(__doc__, records=1500)
    parser.add_argument("--split", choices=("train", "calibration"), default="calibration")
    parser.add_argument("--detector", default="presidio", help="an entry-point name or package.module:Class")
    args = parser.parse_args()
    items = real_corpus(args.records, args.records, seed=0, split=args.split)
    found = make_detector(args.detector).detect_many([item.text for item in items])
    named = hits = clean = clean_with_person = 0
    for item, detections in zip(items, found, strict=True):
        spans = [(d.start, d.end) for d in detections if d.pii_type is PiiType.PERSON]
        if PiiType.PERSON in item.pii:
            named += 1
            places = [(at := item.text.find(value), at + len(value)) for value in item.values[PiiType.PERSON]]
            hits += all(any(s < end and start < e for s, e in spans) for start, end in places)
        elif not item.pii:
            clean += 1
            clean_with_person += bool(spans)
    result = {
        "detector": args.detector, "split": args.split, "names_found": round(hits / named, 3), "named": named,
        "clean_with_a_person": clean_with_person, "clean": clean,
    }  # fmt: skip
    print(json.dumps(result))


if __name__ == "__main__":
    main()
