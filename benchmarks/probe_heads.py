"""Would a non-linear probe close the real-text gap? One "holds any PII" head per model, on MiniLM vectors.

Each head is trained on the default profile's corpus (templates + real prose, the train split), its cutoff
set at a stated false-positive rate on the calibration split (other packages, other Faker locales, plus
templates of another seed, as the fused verdict uses), then scored on the evaluation stores of
``real_text.py`` (WordNet, fortunes) and on the demo. ``ceiling`` is what no cutoff can beat: each store's
recall at 5% false positives with the cutoff set on that store's own negatives after the fact, and its AUC.
Run from the repository root:

    OMP_NUM_THREADS=1 python benchmarks/probe_heads.py --n 600
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
from common import bench_parser
from real_text import eval_fortunes, fortunes, unpack, wordnet
from scipy.special import logit
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.neural_network import MLPClassifier

from vdbguard.attacks.base import l2_normalise
from vdbguard.attacks.training import PROFILES
from vdbguard.corpus.embedded import embed_corpus
from vdbguard.corpus.generator import derive_seed, synthetic_clean, synthetic_pii
from vdbguard.corpus.real import real_corpus
from vdbguard.demo import demo_texts
from vdbguard.embedders import Embedder


def main() -> None:
    parser = bench_parser(__doc__, n=600, seed=0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/vdbguard-realtext-debs"))
    args = parser.parse_args()
    embedder = Embedder("all-MiniLM-L6-v2")
    train = PROFILES["default"].corpus()
    calibration = [
        *real_corpus(1500, 1500, seed=0, split="calibration"),
        *synthetic_pii(500, seed=derive_seed(0, "verdict")),
        *synthetic_clean(500, seed=derive_seed(0, "verdict")),
    ]
    x, y = l2_normalise(embed_corpus(embedder, train)), np.array([bool(i.pii) for i in train])
    xc, yc = l2_normalise(embed_corpus(embedder, calibration)), np.array([bool(i.pii) for i in calibration])
    rng = random.Random(args.seed)
    root = unpack(args.cache)
    stores: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for source, (people, others) in {"wordnet": wordnet(root), "fortunes": fortunes(eval_fortunes(root))}.items():
        positives, negatives = rng.sample(people, args.n), rng.sample(others, args.n)
        stores[source] = (l2_normalise(embedder.encode(positives + negatives)), np.array([1] * args.n + [0] * args.n))
    demo = demo_texts(1000)
    stores["demo"] = (l2_normalise(embedder.encode([t for t, _ in demo])), np.array([h for _, h in demo]))

    linear = LogisticRegression(C=4.0, max_iter=3000).fit(x, y)
    mlp = MLPClassifier((256,), alpha=1e-3, early_stopping=True, random_state=args.seed, max_iter=200).fit(x, y)

    def logits(model, rows: np.ndarray) -> np.ndarray:
        return logit(np.clip(model.predict_proba(rows)[:, 1], 1e-6, 1 - 1e-6))

    heads = {
        "linear": lambda rows: logits(linear, rows),
        "mlp-256": lambda rows: logits(mlp, rows),
        "mean of both": lambda rows: (logits(linear, rows) + logits(mlp, rows)) / 2,
    }
    for name, head in heads.items():
        ceiling = {}
        for source, (rows, truth) in stores.items():
            scores = head(rows)
            best = scores[truth == 1] > np.quantile(scores[truth == 0], 0.95)
            auc = round(roc_auc_score(truth, scores), 3)
            ceiling[source] = {"recall_at_5%": round(float(best.mean()), 3), "auc": auc}
        print(json.dumps({"head": name, "ceiling": ceiling}), flush=True)
        held = head(xc)
        for rate in (0.02, 0.05):
            cutoff = np.quantile(held[~yc], 1 - rate)
            row: dict = {
                "head": name,
                "calibration_fpr": rate,
                "calibration_recall": round(float((held[yc] > cutoff).mean()), 3),
            }
            for source, (rows, truth) in stores.items():
                flagged = head(rows) > cutoff
                row[source] = {
                    "recall": round(float(flagged[truth == 1].mean()), 3),
                    "fpr": round(float(flagged[truth == 0].mean()), 3),
                }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
