"""The defense frontier (issue #12): every transform and chain, recall lost vs leakage left against the
strongest attacker, adapted. The same sweep as ``vdbguard frontier``, on the benchmark's data sets:

    python benchmarks/defenses.py --data real-pii --n 400 --attack-limit 60 --profile small \
        --attacks gradient,slot-search,bag-of-words --out bench-out/frontier-real-pii
    python benchmarks/defenses.py ... --transforms redact,gaussian,redact+gaussian   # a subset, same --out resumes

Data (none of it trained on): ``real-pii``: real sentences from the calibration-split packages
(:func:`vdbguard.corpus.real.real_corpus`) with PII placed where real text carries it, names from
Faker locales the attack corpus never used; leakage is the share of name parts recovered, and of all
placed PII value tokens. ``pii-names``: vdbguard's template sentences (a smoke test, not a result) with
names from locales the attack corpus never used (en_NZ, en_IN), scored the same way. ``human-words``:
human-written holdout lines (chatterbot); leakage is the share of content words recovered. Keyed
transforms use a fixed public benchmark key.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from common import bench_parser

BENCH_KEY = bytes(range(32)).hex()  # a fixed, public benchmark key for the keyed transforms: never use it for real


def _caching_embedder():
    """The real embedder, remembering what it embedded: each adaptive slot-search retraining re-embeds the
    ~31k-name gazetteer, and every setting re-embeds the same guesses."""
    from vdbguard.embedders import Embedder

    class CachingEmbedder(Embedder):
        def __init__(self) -> None:
            super().__init__()
            self.memory: dict[str, np.ndarray] = {}

        def encode(self, texts: Sequence[str], progress=None) -> np.ndarray:
            texts = list(texts)
            missing = list(dict.fromkeys(t for t in texts if t not in self.memory))
            if missing:
                self.memory.update(zip(missing, super().encode(missing, progress=progress), strict=True))
            elif progress:
                progress(len(texts))
            if not texts:
                return np.zeros((0, self.dimension), dtype=np.float32)
            return np.stack([self.memory[t] for t in texts])

    return CachingEmbedder()


def dataset(name: str, n: int) -> list:
    from vdbguard.corpus import human_sentences, synthetic_pii
    from vdbguard.corpus.real import real_corpus
    from vdbguard.evaluate.data import EvalItem
    from vdbguard.pii import PiiType

    if name == "human-words":
        return [EvalItem(text) for text in human_sentences("holdout")[:n]]
    if name == "pii-names":
        source = synthetic_pii(n, seed=999, locales=("en_NZ", "en_IN"))
    elif name == "real-pii":
        source = real_corpus(n, 0, seed=12, split="calibration")
    else:
        sys.exit(f"unknown data set {name!r}: real-pii, pii-names or human-words")
    items = []
    for item in source:
        names = tuple(item.values.get(PiiType.PERSON, ()))
        other = tuple(v for t, values in item.values.items() if t != PiiType.PERSON for v in values)
        items.append(EvalItem(item.text, names, other))
    return items


def main() -> None:
    parser = bench_parser(__doc__, n=400, attack_limit=30)
    parser.add_argument("--data", default="real-pii")
    parser.add_argument("--profile", choices=("small", "default"), default="small")
    parser.add_argument("--attacks", default="", help="comma-separated (default: the strongest suite)")
    parser.add_argument("--cheap", action="store_true")
    parser.add_argument("--transforms", default="", help="comma-separated (default: every transform and the chains)")
    parser.add_argument("--seconds-per-record", type=float, default=5.0)
    parser.add_argument("--max-recall-loss", type=float, default=0.02)
    parser.add_argument("--target-cut", type=float, default=0.9)
    parser.add_argument("--out", type=Path, default=Path("bench-out/frontier"))
    parser.add_argument(
        "--merge", default="", help="comma-separated --out folders of parallel runs (same options) to report with"
    )
    args = parser.parse_args()

    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    os.environ.setdefault("VDBGUARD_TRANSFORM_KEY", BENCH_KEY)
    from vdbguard.evaluate.calibration import default_transforms
    from vdbguard.evaluate.defense import DefenseBench
    from vdbguard.evaluate.frontier import COMBINATIONS, dominance, load_points, plot, run_frontier, table

    names = [t for t in args.transforms.split(",") if t] or [*default_transforms(), *COMBINATIONS]
    started = time.perf_counter()
    bench = DefenseBench(
        _caching_embedder(),
        dataset(args.data, args.n),
        attacks=[a for a in args.attacks.split(",") if a],
        cheap=args.cheap,
        profile=args.profile,
        attack_limit=args.attack_limit,
        seconds_per_record=args.seconds_per_record,
    )

    def say(row: dict) -> None:
        cut = row["worst_cut"]
        print(
            f"{row['transform']} {row['strength']:g}: loss {row['recall_loss']:.3f} "
            f"cut {'over budget' if cut is None else f'{cut:.1%}'} ({row['seconds']:.0f}s)",
            file=sys.stderr,
            flush=True,
        )

    rows = run_frontier(
        bench,
        names,
        args.out / "points.json",
        max_recall_loss=args.max_recall_loss,
        on_point=say,
        on_skip=lambda name, exc: print(f"skipped {name}: {exc}", file=sys.stderr),
    )
    for folder in [Path(f) for f in args.merge.split(",") if f]:
        config, extra = load_points(folder / "points.json")
        if config != load_points(args.out / "points.json")[0]:
            sys.exit(f"{folder} was measured with other options")
        rows += [
            r for r in extra if (r["transform"], r["strength"]) not in {(x["transform"], x["strength"]) for x in rows}
        ]
    report = [
        f"`{shlex.join(['python', 'benchmarks/defenses.py', *sys.argv[1:]])}`\n",
        f"data {args.data} ({len(bench.items)} records, {len(bench.chosen)} attacked, {bench.pii_query.sum()} "
        f"queries carry PII); attacks {', '.join(bench.attack_names)}; profile {args.profile}; "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the end; Python {platform.python_version()}; "
        f"this invocation {time.perf_counter() - started:.0f} s\n",
        table(rows),
        "",
        *dominance(rows),
    ]
    text = "\n".join(report)
    (args.out / "table.md").write_text(text + "\n")
    plot(rows, args.out / "frontier.png", args.max_recall_loss, args.target_cut)
    print(text)
    print(json.dumps({"plot": str(args.out / "frontier.png")}))


if __name__ == "__main__":
    main()
