"""Settings of adversarial-decoding against their cost, on a development set that no benchmark reports.

The development set is real technical prose from the corpus's calibration split (packages the attacks'
training never reads; never Debian text): the first ``--n`` sentences of 4-22 words. Each setting is one
JSON object (the attack's constructor arguments); the default settings are ``{}``. With ``--names N`` it
prints, instead, what the default settings recover from N held-out-locale sentences that name someone
(names on no list the attack uses). Run from the repository root:

    OMP_NUM_THREADS=1 python benchmarks/adversarial_sweep.py --n 16 "{}" '{"top_k": 10}' '{"refine_rounds": 2}'
    OMP_NUM_THREADS=1 python benchmarks/adversarial_sweep.py --names 6
"""

from __future__ import annotations

import json
import time

import numpy as np
from common import bench_parser

from vdbguard.attacks.adversarial_decoding import AdversarialDecoding
from vdbguard.corpus import synthetic_pii
from vdbguard.corpus.real import real_corpus
from vdbguard.embedders import Embedder
from vdbguard.pii import PiiType
from vdbguard.text import token_f1


def main() -> None:
    parser = bench_parser(__doc__, n=16, seed=5, names=0)
    parser.add_argument("settings", nargs="*", help="JSON objects of constructor arguments")
    args = parser.parse_args()
    embedder = Embedder("all-MiniLM-L6-v2")
    if args.names:
        spell_names(embedder, args.names)
        return
    texts = [
        item.text
        for item in real_corpus(40, 40, seed=args.seed, split="calibration")
        if 4 <= len(item.text.split()) <= 22
    ][: args.n]
    targets = embedder.encode(texts)
    for settings in args.settings:
        attack = AdversarialDecoding(**json.loads(settings))
        attack.embedder = embedder
        started = time.perf_counter()
        found = attack.infer(targets)
        seconds = time.perf_counter() - started
        recovered = embedder.encode([inference.recovered_text or "." for inference in found])
        row = {
            "settings": json.loads(settings),
            "n": len(texts),
            "cosine": round(float(np.mean(np.sum(recovered * targets, axis=1))), 3),
            "token_f1": round(
                float(np.mean([token_f1(i.recovered_text, t) for i, t in zip(found, texts, strict=True)])), 3
            ),
            "seconds_per_record": round(seconds / len(texts), 1),
            "encoder_queries_per_record": round(attack.encoder_queries / len(texts)),
        }
        print(json.dumps(row), flush=True)


def spell_names(embedder: Embedder, count: int) -> None:
    items = [
        item
        for item in synthetic_pii(60, seed=999, locales=("en_NZ", "en_IN"))
        if PiiType.PERSON in item.pii and len(item.text.split()) <= 18
    ][:count]
    attack = AdversarialDecoding()
    attack.embedder = embedder
    for item, found in zip(items, attack.infer(embedder.encode([i.text for i in items])), strict=True):
        print(json.dumps({"names": item.values.get(PiiType.PERSON), "recovered": found.recovered_text}), flush=True)


if __name__ == "__main__":
    main()
