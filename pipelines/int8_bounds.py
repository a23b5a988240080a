"""Measure the largest input of each input channel of each encoder linear, which the int8 tagger divides by
(``vdbguard.detectors.int8``), and write it beside the tagger's folder, keyed to the tagger's weights. Run again
whenever the tagger is retrained.

Input: the silver training examples of the detector benchmark's ``train`` sources (never an evaluation source)::

    python benchmarks/detector_real.py --split train --old-registers --write-train /tmp/train.jsonl
    OMP_NUM_THREADS=1 python pipelines/int8_bounds.py /tmp/train.jsonl     # each channel's largest input in 3,000 texts

``--compare N`` then reports, on N other texts of the same file, how often the int8 tagger finds the same names and
addresses as the float32 one, and the CPU each takes a text (alternated, one thread).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from vdbguard.detectors import int8
from vdbguard.detectors.tagger import ADDRESS_DIR, TAGGER_DIR, PersonTagger, tagger_digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train", type=Path, help="the JSONL of detector_real.py --split train --write-train")
    parser.add_argument("--texts", type=int, default=3000)
    parser.add_argument("--compare", type=int, default=0)
    parser.add_argument("--folder", type=Path, default=TAGGER_DIR)
    args = parser.parse_args()
    with open(args.train, encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for line in fh]
    random.Random(0).shuffle(texts)
    measured, compared = texts[: args.texts], texts[args.texts : args.texts + args.compare]
    exact = PersonTagger(args.folder, bf16=False, int8=False, addresses=ADDRESS_DIR)
    bounds = int8.measure_bounds(exact.model, lambda: exact.tag(measured))
    payload = {"tagger": tagger_digest(args.folder), "texts": len(measured), "source": args.train.name}
    layers = ",\n".join(f"  {json.dumps(name)}: {json.dumps(channels)}" for name, channels in bounds.items())
    int8.bounds_file(args.folder).write_text(json.dumps(payload)[:-1] + ', "bounds": {\n' + layers + "\n}}\n")
    print(f"{len(bounds)} bounds from {len(measured)} texts -> {int8.bounds_file(args.folder)}")
    if not compared:
        return
    quick = PersonTagger(args.folder, bf16=False, int8=True, addresses=ADDRESS_DIR)
    pairs = list(zip(exact.tag(compared), quick.tag(compared), strict=True))

    def same(kind: str) -> float:
        agree = [[s[:2] for s in getattr(a, kind)] == [s[:2] for s in getattr(b, kind)] for a, b in pairs]
        return sum(agree) / len(agree)

    print(f"same names {same('names'):.4f}, addresses {same('addresses'):.4f} of {len(compared)} texts")
    seconds: dict[str, list[float]] = {"float32": [], "int8": []}
    for _ in range(3):
        for name, tagger in (("float32", exact), ("int8", quick)):
            started = time.process_time()
            tagger.tag(compared)
            seconds[name].append(round((time.process_time() - started) / len(compared) * 1000, 2))
    print(f"ms of CPU a text: {seconds}")


if __name__ == "__main__":
    main()
