"""The PII detector before and after a change of what it reads (issue #45 item 3; issue #43: no slower per text).

    git show HEAD~1:vdbguard/detectors/presidio.py > /tmp/presidio_before.py
    python benchmarks/detector_types.py --before /tmp/presidio_before.py
    OMP_NUM_THREADS=1 python benchmarks/detector_types.py --before presidio --after presidio-tagger
    OMP_NUM_THREADS=1 python benchmarks/detector_types.py --before presidio-ner --jsonl T.jsonl   # real text

Runs ``detect_many`` over 1,500 templated PII lines and the human hold-out lines (or ``--jsonl``'s texts) with the
detector of ``--before`` (an older ``vdbguard/detectors/presidio.py``, loaded beside this one, or a detector's name),
``--after`` (a name; the default detector unless given), and the latter with two identifiers of your own (a regex with
context, and a deny list of 2,003 phrases), in one process, alternating ``--rounds`` times. Prints CPU seconds
(``time.process_time``) per configuration, the best per text against ``--before``, each round's ratio of
``--after`` to ``--before`` and its median (one fast round of either moves the ratio of bests), and each text whose
built-in detections changed (types and spans).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path
from statistics import median

from vdbguard.corpus import human_sentences, synthetic_pii
from vdbguard.detectors import DEFAULT_DETECTOR, Detector, load_detector
from vdbguard.identifiers import DetectorSettings

IDENTIFIERS = {
    "identifiers": [
        {
            "supported_entity": "EMPLOYEE_ID",
            "patterns": [{"name": "employee id", "regex": r"\bEMP-\d{6}\b", "score": 0.1}],
            "context": ["employee"],
        },
        {
            "supported_entity": "CUSTOMER",
            "deny_list": ["Project Nightingale", "Bluebird", "Titan"] + [f"customer{i} ltd" for i in range(2000)],
        },
    ]
}


def _named(name: str, settings: DetectorSettings | None = None) -> Detector:
    """A detector plugin by name, or ``package.module:Class`` for one not registered."""
    if ":" not in name:
        return load_detector(name, settings=settings)
    module, _, attribute = name.partition(":")
    kind = getattr(importlib.import_module(module), attribute)
    return kind() if settings is None else kind(settings=settings)


def _before(path: Path) -> Detector:
    if path.suffix != ".py":
        return _named(str(path))
    spec = importlib.util.spec_from_file_location("presidio_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PresidioDetector()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="an older vdbguard/detectors/presidio.py or a name")
    parser.add_argument("--after", default=DEFAULT_DETECTOR, help="a detector's name")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jsonl", type=Path, help='time these texts (a JSONL\'s "text", 2,000 spread over it)')
    args = parser.parse_args()
    if args.jsonl is None:
        texts = [item.text for item in synthetic_pii(1500, seed=3)] + list(human_sentences("holdout")[:1500])
    else:
        rows = [json.loads(line)["text"] for line in args.jsonl.read_text(encoding="utf-8").splitlines()]
        texts = rows[:: max(1, len(rows) // 2000)][:2000]
    detectors: dict[str, Detector] = {
        "before": _before(args.before),
        "after": _named(args.after),
        "after + 2 identifiers": _named(args.after, DetectorSettings.model_validate(IDENTIFIERS)),
    }
    for detector in detectors.values():
        detector.detect_many(texts[:200])  # loaded and warm
    seconds: dict[str, list[float]] = {name: [] for name in detectors}
    for _ in range(args.rounds):
        for name, detector in detectors.items():
            started = time.process_time()
            detector.detect_many(texts)
            seconds[name].append(time.process_time() - started)
    base = min(seconds["before"])
    print(f"{len(texts)} texts, {args.rounds} alternating rounds, CPU seconds")
    for name, runs in seconds.items():
        best = min(runs)
        print(
            f"{name:24s} {' '.join(f'{s:.2f}' for s in runs)}  best {best / len(texts) * 1000:.3f} ms/text "
            f"({(best / base - 1) * 100:+.1f}%)"
        )
    paired = sorted(a / b for a, b in zip(seconds["after"], seconds["before"], strict=True))
    print(f"after / before, each round's pair: {' '.join(f'{r:.2f}' for r in paired)}; median {median(paired):.2f}")
    before, after = detectors["before"].detect_many(texts), detectors["after"].detect_many(texts)
    changed = 0
    for text, old, new in zip(texts, before, after, strict=True):
        spans = [{(d.pii_type.value, d.start, d.end) for d in found} for found in (old, new)]
        if spans[0] != spans[1]:
            changed += 1
            print(f"changed: {text[:90]!r} lost {spans[0] - spans[1]} gained {spans[1] - spans[0]}")
    print(f"texts whose detections changed: {changed} of {len(texts)}")


if __name__ == "__main__":
    main()
