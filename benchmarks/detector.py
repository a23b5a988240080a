"""The PII detector on what the fast tier recovers (issue #14): text by text against one batch call.

    OMP_NUM_THREADS=1 python benchmarks/detector.py --records 4000

Embeds ``--records`` distinct Debian lines (``common.real_sentences``) with MiniLM, inverts them with the
bag-of-words attack (small profile, as the scan's fast tier does), and runs Presidio over the distinct
recovered texts three ways in one process: as before this change (the name gazetteer as Presidio's deny-list
regex, ``detect`` per text), with the gazetteer by set lookup, and with ``detect_many`` over pages of 256 (what
the scanner does per page). Prints texts per second for each, and checks that all three find the same.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from common import bench_parser, real_sentences
from presidio_analyzer import PatternRecognizer

from vdbguard.attacks.training import trained_attacks
from vdbguard.detectors.lexicon import name_gazetteer
from vdbguard.detectors.presidio import PresidioDetector, build_analyzer
from vdbguard.detectors.recognizers.registry import GAZETTEER_SCORE
from vdbguard.embedders import Embedder


def main() -> None:
    args = bench_parser(__doc__, records=4000).parse_args()
    with tempfile.TemporaryDirectory() as folder:
        lines = list(dict.fromkeys(real_sentences(Path(folder) / "real.txt")))
    lines = lines[: args.records]
    embedder = Embedder()
    (attack,) = trained_attacks(embedder, ["bag-of-words"], profile="small")
    texts = sorted({i.recovered_text for i in attack.infer(embedder.encode(lines)) if i.recovered_text})
    detector = PresidioDetector()
    before = PresidioDetector()
    before.analyzer = build_analyzer.__wrapped__()  # its own engine, with Presidio's deny list for the names
    before.analyzer.registry.remove_recognizer("NameGazetteerRecognizer")
    deny_list = PatternRecognizer(
        supported_entity="NAME_GAZETTEER",
        name="NameGazetteerRecognizer",
        deny_list=sorted(name_gazetteer()),
        deny_list_score=GAZETTEER_SCORE,
    )
    before.analyzer.registry.add_recognizer(deny_list)
    for warm in (before, detector):
        warm.detect_many(texts[:32])
    timings, results = {}, {}
    runs = {
        "deny-list regex, text by text (before)": lambda: [before.detect(text) for text in texts],
        "set lookup, text by text": lambda: [detector.detect(text) for text in texts],
        "set lookup, detect_many over pages of 256": lambda: [
            d for start in range(0, len(texts), 256) for d in detector.detect_many(texts[start : start + 256])
        ],
    }
    for label, run in runs.items():
        started = time.perf_counter()
        results[label] = run()
        timings[label] = time.perf_counter() - started
    first = next(iter(results.values()))
    assert all(found == first for found in results.values()), "every way must find the same"
    print(f"{len(texts)} distinct recovered texts from {len(lines)} Debian lines")
    baseline = next(iter(timings.values()))
    for label, seconds in timings.items():
        print(f"{label}: {len(texts) / seconds:,.0f} texts/s ({seconds:.1f} s, {baseline / seconds:.1f}x)")


if __name__ == "__main__":
    main()
