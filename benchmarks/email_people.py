"""People in real business email: how many names the detector finds, and how often it calls something else a person.

    OMP_NUM_THREADS=1 python benchmarks/email_people.py --split dev --detector presidio --detector presidio-ner

Enron threads annotated by Dakle, Desai and Moldovan (``pipelines/build_email_corpus.py``; Apache-2.0), split by
mailbox: ``test`` is scored once per candidate, ``dev`` chooses settings, ``train`` is the only part a tagger may
learn from. Each line of a thread is one text; header lines ("To: Tony Pryor/ET&S/Enron@ENRON") are counted apart
from the body. A name is found when a PERSON detection overlaps it; a named organisation or place is called a person
the same way; a line with no name and a person found in it is a clean line given one.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_parser
from detector_real import make_detector

from vdbguard.pii import PiiType

CORPORA = Path(__file__).resolve().parent.parent / "pipelines" / "corpora"
HEADER = re.compile(r"(?i)(date|from|to|subject|x-[a-z]+|cc|bcc|sent|importance) ?:")


@dataclass
class Line:
    text: str
    people: list[tuple[int, int]]
    things: list[tuple[int, int]]  # named organisations and places
    mail: list[tuple[int, int]]  # people's email addresses: a line holding one is neither named nor clean

    @property
    def header(self) -> bool:
        return HEADER.match(self.text) is not None


def read(split: str) -> list[Line]:
    def places(spans: list[dict], email: bool) -> list[tuple[int, int]]:
        return [(span["start"], span["end"]) for span in spans if (span["label"] == "email") == email]

    with gzip.open(CORPORA / f"emailcoref.{split}.jsonl.gz", "rt", encoding="utf-8") as rows:
        return [
            Line(
                row["text"], places(row["spans"], False), places(row["mentions"], False), places(row["mentions"], True)
            )
            for row in map(json.loads, rows)
        ]


def overlapped(span: tuple[int, int], found: list[tuple[int, int]]) -> bool:
    return any(start < span[1] and span[0] < end for start, end in found)


def score(lines: list[Line], found: list[list[tuple[int, int]]], misses: int) -> dict:
    counts: Counter[str] = Counter()
    missed, false = [], []
    for line, people in zip(lines, found, strict=True):
        part = "header" if line.header else "body"
        for span in line.people:
            counts[f"{part} names"] += 1
            if overlapped(span, people):
                counts[f"{part} found"] += 1
            else:
                missed.append(line.text[span[0] : span[1]] + "  |  " + line.text[:120])
        for span in line.things:
            counts[f"{part} things"] += 1
            if overlapped(span, people):
                counts[f"{part} things called people"] += 1
                false.append(line.text[span[0] : span[1]] + "  |  " + line.text[:120])
        if not line.people and not line.mail:
            counts[f"{part} clean"] += 1
            counts[f"{part} clean given one"] += bool(people)
            false += [
                line.text[s:e] + "  |  " + line.text[:120] for s, e in people if not overlapped((s, e), line.things)
            ]
    result: dict = {}
    for part in ("body", "header"):
        result[part] = {
            "names found": round(counts[f"{part} found"] / max(1, counts[f"{part} names"]), 3),
            "names": counts[f"{part} names"],
            "things called people": round(counts[f"{part} things called people"] / max(1, counts[f"{part} things"]), 3),
            "things": counts[f"{part} things"],
            "clean lines given one": round(counts[f"{part} clean given one"] / max(1, counts[f"{part} clean"]), 3),
            "clean lines": counts[f"{part} clean"],
        }
    names = counts["body names"] + counts["header names"]
    result["names found"] = round((counts["body found"] + counts["header found"]) / max(1, names), 3)
    if misses:
        result["missed"], result["false"] = missed[:misses], false[:misses]
    return result


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--split", choices=("dev", "test"), default="dev", help="test: once per candidate")
    parser.add_argument("--detector", action="append", help="an entry-point name or package.module:Class (repeat)")
    parser.add_argument("--misses", type=int, default=0, help="print this many missed names and false people")
    args = parser.parse_args()
    lines = read(args.split)
    for name in args.detector or ["presidio"]:
        detections = make_detector(name).detect_many([line.text for line in lines])
        found = [[(d.start, d.end) for d in ds if d.pii_type is PiiType.PERSON] for ds in detections]
        print(json.dumps({"detector": name, "split": args.split, **score(lines, found, args.misses)}))


if __name__ == "__main__":
    main()
