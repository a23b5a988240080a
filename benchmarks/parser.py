"""The PII detector with and without spaCy's dependency parser (issue #14): what changes, and the time.

    OMP_NUM_THREADS=1 python benchmarks/parser.py

Runs ``PresidioDetector.detect_many`` over 3,000 templated PII lines, 500 clean ones, the human hold-out lines
and 2,000 real sentences (``common.real_sentences``), once as shipped (parser off) and once with the parser turned
back on, in one process. Prints the seconds each way, the number of texts whose detections differ, and each
difference (types and spans; the texts are synthetic or public sentences).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from rescan import real_lines

from vdbguard.corpus import human_sentences, synthetic_clean, synthetic_pii
from vdbguard.detectors.presidio import PresidioDetector


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        real = real_lines(12_000, Path(folder))[10_000:]
    texts = [item.text for item in synthetic_pii(3000, seed=11)] + [item.text for item in synthetic_clean(500, seed=2)]
    texts += [*human_sentences("holdout"), *real]
    detector = PresidioDetector()
    nlp = detector.analyzer.nlp_engine.nlp["en"]
    detector.detect_many(texts[:100])
    seconds = {}
    found = {}
    for parser in (False, True):
        if parser:
            nlp.enable_pipe("parser")
        started = time.perf_counter()
        found[parser] = detector.detect_many(texts)
        seconds[parser] = time.perf_counter() - started
        real_started = time.perf_counter()
        detector.detect_many(real)
        seconds[parser, "real"] = time.perf_counter() - real_started
    nlp.disable_pipe("parser")
    differ = [(a, b) for a, b in zip(found[False], found[True], strict=True) if a != b]
    print(f"{len(texts):,} texts: without the parser {seconds[False]:.1f} s, with it {seconds[True]:.1f} s")
    alone = f"{seconds[False, 'real']:.1f} s without, {seconds[True, 'real']:.1f} s with"
    print(f"the {len(real):,} real sentences alone: {alone}")
    print(f"{len(differ)} texts get other detections")
    for without, with_parser in differ:
        spans = [(d.pii_type.value, d.value) for d in without if d not in with_parser]
        other = [(d.pii_type.value, d.value) for d in with_parser if d not in without]
        same = {d.pii_type for d in without} == {d.pii_type for d in with_parser}
        print(f"- same types: {same}; without the parser {spans}; with it {other}")


if __name__ == "__main__":
    main()
