"""How many digits a phone number needs when no phone word stands before it (detector version 10), chosen on dev.

    OMP_NUM_THREADS=1 python benchmarks/detector_real.py --split train --write-train T.jsonl
    python benchmarks/phone_digits.py --train T.jsonl [--split train]

Presidio's phone recognizer (python-phonenumbers over eight regions) on the silver texts of the train sources' dev
tenth (``train_person_ner.is_dev``): the placed phone numbers it finds, and the texts without one that it gives a
phone (most hold a 10-12 digit account number, PII of another type), when a match needs at least N digits.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipelines"))

from train_person_ner import is_dev

from vdbguard.detectors.recognizers.phone import DigitGatedPhoneRecognizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=Path, required=True, help="detector_real.py's silver JSONL")
    parser.add_argument("--split", choices=("dev", "train"), default="dev")
    args = parser.parse_args()
    recognizer = DigitGatedPhoneRecognizer()
    rows = [json.loads(line) for line in args.train.read_text(encoding="utf-8").splitlines()]
    rows = [row for row in rows if is_dev(row, 10) == (args.split == "dev")]
    minimums = range(4, 10)
    found, phones, given, without = dict.fromkeys(minimums, 0), 0, dict.fromkeys(minimums, 0), 0
    for row in rows:
        text = row["text"]
        matches = [(m.start, m.end, sum(c.isdigit() for c in text[m.start : m.end])) for m in
                   recognizer.analyze(text, ["PHONE_NUMBER"])]  # fmt: skip
        gold = [s for s in row["spans"] if s["label"] == "PHONE"]
        phones += len(gold)
        without += not gold
        for n in minimums:
            kept = [(s, e) for s, e, digits in matches if digits >= n]
            found[n] += sum(any(s < g["end"] and g["start"] < e for s, e in kept) for g in gold)
            given[n] += bool(kept) and not gold
    print(f"{args.split}: {phones} placed phone numbers; {without} texts without one")
    print("| digits at least | phone numbers found | texts without one given one |\n|---:|---:|---:|")
    for n in minimums:
        print(f"| {n} | {found[n] / phones:.3f} | {given[n]} ({given[n] / without:.2%}) |")


if __name__ == "__main__":
    main()
