"""Which answer adversarial decoding should give, from one run: every hypothesis each record's search scored is
kept, and each ``--tolerances`` value picks the shortest one within that cosine of the closest (the attack's
``tolerance``, version 6). The search itself does not depend on the tolerance (it runs with 0), so one run
shows them all side by side. Development sets only, as in ``adversarial_sweep.py`` (never Debian text):

    OMP_NUM_THREADS=1 python benchmarks/adversarial_pool.py --source descriptions --n 40 '{}'
    OMP_NUM_THREADS=1 python benchmarks/adversarial_pool.py --n 40 '{"max_seconds": 1.8}'
"""

from __future__ import annotations

import inspect
import json
import time

import numpy as np
from adversarial_sweep import description_sentences
from common import bench_parser

from vdbguard.attacks import adversarial_decoding
from vdbguard.corpus.real import real_corpus
from vdbguard.embedders import Embedder
from vdbguard.text import token_f1


def main() -> None:
    parser = bench_parser(__doc__, n=40, seed=5)
    parser.add_argument("--source", choices=("calibration", "descriptions"), default="calibration")
    parser.add_argument("--tolerances", default="0,0.005,0.01,0.02")
    parser.add_argument("settings", help="a JSON object of constructor arguments (tolerance is set to 0)")
    args = parser.parse_args()
    if args.source == "descriptions":
        texts = description_sentences(args.n, args.seed)
    else:
        corpus = real_corpus(40, 40, seed=args.seed, split="calibration")
        texts = [item.text for item in corpus if 4 <= len(item.text.split()) <= 22][: args.n]
    embedder = Embedder("all-MiniLM-L6-v2")
    targets = embedder.encode(texts)
    pools: list[dict[str, float]] = []
    search_class = adversarial_decoding._Search
    consider, start = search_class.consider, search_class.__init__

    def recording_start(search: adversarial_decoding._Search, *a: object, **k: object) -> None:
        start(search, *a, **k)
        pools.append({})

    def recording_consider(search: adversarial_decoding._Search, texts: list[str], keep: float = 0.0) -> np.ndarray:
        scores = consider(search, texts, keep)
        for text, score in zip(texts, scores, strict=False):  # the first ones: those the budgets allowed
            text = text.replace("\ufffd", "").strip()
            if text:
                pools[-1][text] = max(float(score), pools[-1].get(text, -2.0))
        return scores

    search_class.__init__, search_class.consider = recording_start, recording_consider  # type: ignore[method-assign]
    settings = json.loads(args.settings)
    if "tolerance" in inspect.signature(adversarial_decoding.AdversarialDecoding).parameters:  # none before 6
        settings["tolerance"] = 0.0
    attack = adversarial_decoding.AdversarialDecoding(**settings)
    attack.embedder = embedder
    attack.infer(targets[:1])  # loads the language model and vocabulary table outside the timing
    pools.clear()
    started = time.process_time()
    attack.infer(targets)
    cpu_seconds = (time.process_time() - started) / len(texts)
    assert len(pools) == len(texts), (len(pools), len(texts))
    for tolerance in (float(t) for t in args.tolerances.split(",")):
        answers = []
        for pool in pools:
            closest = max(pool.values())
            near = [(text, cosine) for text, cosine in pool.items() if cosine >= closest - tolerance]
            answers.append(min(near, key=lambda item: (len(item[0].split()), -item[1])))
        row = {
            "source": args.source,
            "settings": json.loads(args.settings),
            "tolerance": tolerance,
            "n": len(texts),
            "token_f1": round(float(np.mean([token_f1(a, t) for (a, _), t in zip(answers, texts, strict=True)])), 3),
            "cosine": round(float(np.mean([cosine for _, cosine in answers])), 3),
            "cpu_seconds_per_record": round(cpu_seconds, 2),
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
