"""Settings of adversarial-decoding against their cost, on a development set that no benchmark reports.

The development set is real technical prose from the corpus's calibration split (packages the attacks'
training never reads; never Debian text): the first ``--n`` sentences of 4-22 words. Each setting is one
JSON object (the attack's constructor arguments); the default settings are ``{}``. With ``--names N`` the
development set is, instead, N template sentences that name someone (Finnish and Irish names; the attack
uses no name list, and the benchmark's held-out locales are others), and each row adds the share of
first, last and full names recovered. With ``--source descriptions`` it is, instead, sentences from the long
descriptions (PyPI READMEs) of the installed distributions: prose about software in another register than
docstrings, which neither the attacks' training nor the packaged generative model read (never Debian's own
package documentation). Run from the repository root:

    OMP_NUM_THREADS=1 python benchmarks/adversarial_sweep.py --n 16 "{}" '{"top_k": 10}' '{"refine_rounds": 2}'
    OMP_NUM_THREADS=1 python benchmarks/adversarial_sweep.py --names 14 '{"polish_rounds": 0}' "{}"
    OMP_NUM_THREADS=1 python benchmarks/adversarial_sweep.py --source descriptions --n 24 '{"max_seconds": 1.8}'
    OMP_NUM_THREADS=1 python benchmarks/adversarial_sweep.py --source descriptions --n 24 --one-at-a-time \
        '{"max_seconds": 1.8}'
"""

from __future__ import annotations

import importlib.metadata
import json
import random
import re
import time

from attacks import full_names
from common import bench_parser

from vdbguard.attacks.adversarial_decoding import AdversarialDecoding
from vdbguard.corpus import synthetic_pii
from vdbguard.corpus.real import real_corpus
from vdbguard.embedders import Embedder
from vdbguard.evaluate.inversion import inversion_scores


def main() -> None:
    parser = bench_parser(__doc__, n=16, seed=5, names=0)
    parser.add_argument("--source", choices=("calibration", "descriptions"), default="calibration")
    parser.add_argument("--one-at-a-time", action="store_true", help="one record per call, as a scan once did")
    parser.add_argument("settings", nargs="*", help="JSON objects of constructor arguments")
    args = parser.parse_args()
    embedder = Embedder("all-MiniLM-L6-v2")
    if args.names:
        rows = naming_sentences(args.names)
    elif args.source == "descriptions":
        rows = [(text, []) for text in description_sentences(args.n, args.seed)]
    else:
        rows = [
            (item.text, [])
            for item in real_corpus(40, 40, seed=args.seed, split="calibration")
            if 4 <= len(item.text.split()) <= 22
        ][: args.n]
    texts = [text for text, _ in rows]
    targets = embedder.encode(texts)
    for settings in args.settings:
        attack = AdversarialDecoding(**json.loads(settings))
        attack.embedder = embedder
        attack.infer(targets[:1])  # loads the language model and vocabulary table outside the timing
        attack.encoder_queries = 0
        started, cpu_started = time.perf_counter(), time.process_time()
        if args.one_at_a_time:
            found = [inference for i in range(len(targets)) for inference in attack.infer(targets[i : i + 1])]
        else:
            found = attack.infer(targets)
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
        predictions = [inference.recovered_text for inference in found]
        row = {
            "settings": json.loads(settings),
            "one_at_a_time": args.one_at_a_time,
            **inversion_scores(embedder, targets, predictions, texts, [names for _, names in rows]),
            "seconds_per_record": round(seconds / len(texts), 1),
            "cpu_seconds_per_record": round(cpu_seconds / len(texts), 3),
            "encoder_queries_per_record": round(attack.encoder_queries / len(texts)),
        }
        print(json.dumps(row), flush=True)


def naming_sentences(count: int) -> list[tuple[str, list[str]]]:
    """Template sentences naming someone, from locales neither the benchmark's held-out set (en_NZ, en_IN)
    nor any list of the attack uses: a development set for name spelling, never a result."""
    rows = []
    for item in synthetic_pii(400, seed=2024, locales=("fi_FI", "en_IE")):
        names = full_names(item)
        if names and len(item.text.split()) <= 18:
            rows.append((item.text, names))
    return rows[:count]


_UNPROSE = re.compile(r"[`<>\[\]{}|=_/\\*#]|https?:|::|\.\.")


def description_sentences(count: int, seed: int) -> list[str]:
    """``count`` sentences of 6-22 words from the installed distributions' long descriptions, at most two per
    distribution, markup and code left out: a development set in a register the training never read."""
    by_distribution: dict[str, list[str]] = {}
    for distribution in importlib.metadata.distributions():
        name = (distribution.metadata.get("Name") or "").lower()
        if not name or name == "vdbguard" or name in by_distribution:
            continue
        body = distribution.metadata.get_payload() or distribution.metadata.get("Description") or ""
        found = [
            sentence
            for paragraph in re.split(r"\n\s*\n", str(body))
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join(paragraph.split()))
            if 6 <= len(sentence.split()) <= 22
            and sentence[:1].isupper()
            and sentence.endswith(".")
            and sentence.count("(") == sentence.count(")")
            and not _UNPROSE.search(sentence)
        ]
        by_distribution[name] = found[:2]
    sentences = [sentence for name in sorted(by_distribution) for sentence in by_distribution[name]]
    return random.Random(seed).sample(sentences, min(count, len(sentences)))


if __name__ == "__main__":
    main()
