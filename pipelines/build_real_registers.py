"""Build ``vdbguard/data/real_registers.jsonl.gz``: real sentences of other registers than docstrings (fortune
cookies and their attribution lines, the Jargon File's prose, pci.ids product lines, IEEE registrations), as
frames whose PII slots the corpus fills with Faker values, for training and calibrating the attacks across
registers (issue #43 item 4).

Input: the silver training examples of the detector benchmark's ``train`` sources, which already leave out
every frame, value and name an evaluation source holds (Debian's fortunes, WordNet, GCIDE, FOLDOC, usb.ids,
oui.txt)::

    python benchmarks/detector_real.py --split train --write-train /tmp/registers/train.jsonl
    python pipelines/build_real_registers.py /tmp/registers/train.jsonl     # [--out FILE]: elsewhere, to compare

Each line is ``{"frame", "slots", "source", "register"}``: ``slots`` are ``[position, kind]`` pairs, where a
value of that kind (``name``, ``email``, ``phone``, ``ssn``, ``card``, ``acct``, ``addr``) goes into the frame.
Every labelled value is cut out, the name an attribution line credits included; the rest of such a line can
still mention a public figure (an occasion, a book's title). A line with no slot is a hard negative; one whose
frame still looks like it names someone is left out, so it cannot teach that a named person is clean.
Licences: ``real_registers.LICENSE``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections import defaultdict
from pathlib import Path

from vdbguard.corpus import looks_like_person_name, mid_sentence_capitals

OUT = Path(__file__).resolve().parent.parent / "vdbguard" / "data" / "real_registers.jsonl.gz"
SLOT_KINDS = {
    "PERSON": "name", "EMAIL": "email", "PHONE": "phone", "SSN": "ssn", "CREDIT_CARD": "card",
    "ACCOUNT_NUMBER": "acct", "ADDRESS": "addr",
}  # fmt: skip
PER_REGISTER = 1500


def stray_capital(example: dict) -> bool:
    """A capitalised word past a sentence's first that no labelled value or mention covers: maybe a name
    ("Others include Carol ..."), so the line is no safe negative."""
    covered = [(s["start"], s["end"]) for s in (*example["spans"], *example["mentions"])]
    return any(not any(a <= at < b for a, b in covered) for at, _ in mid_sentence_capitals(example["text"]))


def as_frame(example: dict) -> dict | None:
    text, slots = example["text"], []
    for span in sorted(example["spans"], key=lambda s: s["start"], reverse=True):
        if span["label"] not in SLOT_KINDS:
            return None
        text = text[: span["start"]] + text[span["end"] :]
        cut = span["end"] - span["start"]
        slots = [[span["start"], SLOT_KINDS[span["label"]]], *[[p - cut, k] for p, k in slots]]
    if not any(kind == "name" for _, kind in slots) and (looks_like_person_name(text) or stray_capital(example)):
        return None
    return {"frame": text, "slots": slots, "source": example["source"], "register": example["register"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train", type=Path, help="the JSONL of detector_real.py --split train --write-train")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    by_register: dict[tuple[str, str], list[dict]] = defaultdict(list)
    seen: set[str] = set()
    with open(args.train, encoding="utf-8") as fh:
        for line in fh:
            frame = as_frame(json.loads(line))
            key = json.dumps([frame["frame"], frame["slots"]]) if frame else ""
            if frame is not None and key not in seen:
                seen.add(key)
                by_register[(frame["register"], frame["source"])].append(frame)
    rows = []
    for (register, source), chosen in sorted(by_register.items()):
        random.Random(f"{register}/{source}").shuffle(chosen)
        rows += chosen[:PER_REGISTER]
        print(f"{register} / {source}: {min(len(chosen), PER_REGISTER)} of {len(chosen)}")
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    with gzip.GzipFile(args.out, "wb", compresslevel=9, mtime=0) as fh:  # the same input gives the same bytes
        fh.write(lines.encode())
    print(f"{len(rows)} frames -> {args.out}")


if __name__ == "__main__":
    main()
