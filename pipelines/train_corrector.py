"""Train the universal corrector (``vdbguard.attacks.corrector``) and measure it on the dev split.

Training pairs: real sentences of ``real_corpus(split="train")`` (never the calibration split, never the
held-out benchmark sets), each with a hypothesis shaped like inversion output (``corrupt``), or the real output of
``GradientInversion(steps=40)`` (``--gradient-pairs``) or of ``AdversarialDecoding`` at the scan's 1.8 CPU-second
budget (``--adversarial-pairs``, other sentences); cosines and leave-one-out marks come from the real embedders
(``--embedders``, e.g. ``all-MiniLM-L6-v2,all-mpnet-base-v2=0.2``: a name with an optional share of the corrupted
pairs). Pairs are built in chunks cached under ``--out``, and training checkpoints there too, so an interrupted
run resumes where it stopped (``--no-resume`` starts over). ``--pairs-only`` stops after the pairs, for training
on an accelerator with ``pipelines/train_corrector_gpu.py``; ``--weights FILE`` measures weights trained there.

Evaluation: ``AdversarialDecoding(beam_width=3, top_k=10, max_tokens=16, refine_rounds=0)`` on ``--eval-records``
sentences (the dev split, calibration sentences of 4-22 words, or ``--eval-data``'s held-out rows), then
``refine`` with the trained corrector, and, as controls with the same loop, the untrained SmolLM2 (zero LoRA) and
no proposals at all (only the leave-one-out deletions refine scores anyway). On the dev split also
``--eval-corrupted`` sentences corrupted the training way: the hypothesis, the greedy correction and ``refine``.
Every refined record is cached under ``--out`` (the trained one keyed by the weights' hash), so an interrupted
evaluation resumes. Prints JSON and writes ``--out/results-SET.json``; ``--ship`` (dev split only) copies the
weights into ``vdbguard/data`` only when the trained corrector beats adversarial decoding and both controls.

The packaged weights (BENCHMARKS.md, "Universal corrector") were trained on an H200 from pairs built here:

    export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
    python pipelines/train_corrector.py --pairs-only --out build/corrector-gpu --gradient-pairs 0 --pairs 24000 \
        --embedders all-MiniLM-L6-v2=0.85     # stopped at 16,000 for lack of time
    python pipelines/train_corrector.py --pairs-only --out build/corrector-gpu --gradient-pairs 0 --pairs 1500 \
        --embedders all-mpnet-base-v2
    python pipelines/train_corrector.py --pairs-only --out build/corrector-gpu --gradient-pairs 0 --pairs 0 \
        --adversarial-pairs 3000 [--seed 1]   # stopped at 1,175 + 200
    python pipelines/train_corrector_gpu.py --pairs build/corrector-gpu --out build/corrector-gpu-out \
        --max-seconds 450 --batch-size 96 --lr 1e-3 --checkpoint-seconds 25
    python pipelines/train_corrector.py --weights build/corrector-gpu-out/corrector.safetensors \
        --eval-records 24 --eval-corrupted 16 [--ship]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from vdbguard.attacks.adversarial_decoding import AdversarialDecoding
from vdbguard.attacks.corrector import (
    PACKAGED,
    CorrectorConfig,
    Lexicon,
    Pair,
    Proposer,
    UniversalCorrector,
    make_pairs,
    read_pairs,
    refine,
    score_pairs,
)
from vdbguard.attacks.gradient import GradientInversion
from vdbguard.corpus.real import real_corpus
from vdbguard.embedders import Embedder
from vdbguard.text import token_f1

CHUNK = 100
DATA = Path(__file__).resolve().parent.parent / "vdbguard" / "data"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100_000, help="most training steps")
    parser.add_argument("--max-seconds", type=float, default=2100.0, help="training budget (CPU seconds)")
    parser.add_argument("--embedders", default="all-MiniLM-L6-v2", help="NAME[=SHARE],... scoring the pairs")
    parser.add_argument("--pairs", type=int, default=5000, help="corrupted training pairs")
    parser.add_argument("--gradient-pairs", type=int, default=300, help="pairs from real gradient inversion")
    parser.add_argument(
        "--adversarial-pairs", type=int, default=0, help="pairs from real adversarial decoding (scan's default budget)"
    )
    parser.add_argument("--pairs-only", action="store_true", help="build and cache the pairs, then stop")
    parser.add_argument("--weights", type=Path, help="measure these trained weights (train_corrector_gpu.py) instead")
    parser.add_argument("--out", type=Path, default=Path("build/corrector"))
    parser.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-records", type=int, default=12, help="adversarial-decoding dev records")
    parser.add_argument(
        "--eval-data", type=Path, help='held-out JSONL ({"text": ...}, e.g. benchmarks/attacks.py\'s debian-slow.jsonl)'
    )
    parser.add_argument("--eval-corrupted", type=int, default=24, help="corrupted dev records")
    parser.add_argument("--rounds", type=int, default=3, help="refine rounds")
    parser.add_argument("--candidates", type=int, default=8, help="proposals per refine round")
    parser.add_argument("--eval", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--ship", action="store_true", help="copy the weights into vdbguard/data if they help")
    return parser.parse_args()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def shares(spec: str, total: int) -> list[tuple[str, int]]:
    """``a,b=0.2`` -> [(a, 0.8 * total), (b, 0.2 * total)]: unnamed shares split what the named ones leave."""
    named = [
        (name, float(share[0]) if share else None) for name, *share in (p.split("=") for p in spec.split(",") if p)
    ]
    left = max(0.0, 1.0 - sum(share for _, share in named if share is not None))
    unnamed = sum(share is None for _, share in named)
    return [(name, round(total * (left / unnamed if share is None else share))) for name, share in named]


def train_texts(count: int, seed: int) -> list[str]:
    """Real training-split sentences of at most 30 words, deduplicated and shuffled."""
    items = real_corpus(count // 2 + 200, count // 2 + 200, seed=seed, split="train")
    texts = [t for t in dict.fromkeys(item.text for item in items) if 3 <= len(t.split()) <= 30]
    random.Random(seed).shuffle(texts)
    return texts


def load_chunk(path: Path) -> list[Pair] | None:
    return read_pairs(path) if path.exists() else None


def save_chunk(path: Path, pairs: list[Pair]) -> list[Pair]:
    staging = path.with_suffix(".tmp")
    staging.write_text("".join(json.dumps(pair.__dict__) + "\n" for pair in pairs))
    staging.replace(path)
    return pairs


def attack_pairs(attack, kind: str, texts: list[str], embedder: Embedder) -> list[Pair]:
    """A real attack's outputs as hypotheses: ``gradient`` (white-box, 40 steps: the bags adversarial decoding
    is seeded with) or ``adversarial`` (adversarial decoding at the scan's 1.8 CPU-second budget: what the
    corrector refines in a scan)."""
    attack.embedder = embedder
    found = attack.infer(embedder.encode(texts))
    kept = [(t, i.recovered_text) for t, i in zip(texts, found, strict=True) if i.recovered_text.strip()]
    return score_pairs([t for t, _ in kept], [h for _, h in kept], embedder, [kind] * len(kept))


def adversarial_texts(count: int, seed: int) -> list[str]:
    """Training-split sentences drawn apart from the corrupted ones (another seed), at most 24 words."""
    return [t for t in train_texts(count + count // 2, seed + 1000) if len(t.split()) <= 24][:count]


def pairs_dir(args: argparse.Namespace) -> Path:
    """Cached pairs depend on the seed and the number of sentences drawn (which fixes their order)."""
    path = args.out / f"pairs-{args.seed}-{args.gradient_pairs + args.pairs}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cached_lexicon(args: argparse.Namespace, embedder: Embedder) -> Lexicon:
    """The corruption lexicon of training-split words, with neighbours in ``embedder``'s space."""
    path = pairs_dir(args) / f"lexicon-{slug(embedder.name)}-{args.seed}.json"
    if path.exists():
        return Lexicon(**json.loads(path.read_text()))
    lexicon = Lexicon.build(train_texts(args.gradient_pairs + args.pairs, args.seed)[:4000], embedder)
    path.write_text(json.dumps(lexicon.__dict__))
    return lexicon


def build_pairs(args: argparse.Namespace, embedders: dict[str, Embedder]) -> list[Pair]:
    """Pairs in chunks of CHUNK sentences, each cached under --out/pairs once built (so building resumes)."""
    texts = train_texts(args.gradient_pairs + args.pairs, args.seed)
    first = next(iter(embedders.values()))
    gradient_texts, texts = texts[: args.gradient_pairs], texts[args.gradient_pairs :]
    pairs: list[Pair] = []
    for start in range(0, len(gradient_texts), CHUNK):
        part = gradient_texts[start : start + CHUNK]
        path = pairs_dir(args) / f"gradient-{slug(first.name)}-{args.seed}-{start}-{len(part)}.jsonl"
        pairs += load_chunk(path) or save_chunk(
            path, attack_pairs(GradientInversion(steps=40, threads=args.threads), "gradient", part, first)
        )
        log(f"pairs: {len(pairs)} (gradient inversion)")
    adversarial = adversarial_texts(args.adversarial_pairs, args.seed) if args.adversarial_pairs else []
    for start in range(0, len(adversarial), CHUNK // 4):
        part = adversarial[start : start + CHUNK // 4]
        path = args.out / f"adversarial-{slug(first.name)}-v{AdversarialDecoding.version}-{args.seed}-{start}.jsonl"
        pairs += load_chunk(path) or save_chunk(
            path, attack_pairs(AdversarialDecoding(max_seconds=1.8, threads=args.threads), "adversarial", part, first)
        )
        log(f"pairs: {len(pairs)} (adversarial decoding)")
    offset = 0
    for name, count in shares(args.embedders, args.pairs):
        lexicon: Lexicon | None = None
        for start in range(offset, offset + count, CHUNK):
            part = texts[start : min(offset + count, start + CHUNK)]
            path = pairs_dir(args) / f"corrupt-{slug(name)}-{args.seed}-{start}-{len(part)}.jsonl"
            chunk = load_chunk(path)
            if chunk is None and part:
                lexicon = lexicon or cached_lexicon(args, embedders[name])
                chunk = save_chunk(path, make_pairs(part, embedders[name], lexicon, seed=args.seed + start))
            pairs += chunk or []
            log(f"pairs: {len(pairs)} ({name})")
        offset += count
    return pairs


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in Path(name).name.lower())


class NoProposals:
    """Control: refine with only the leave-one-out deletions it scores anyway."""

    def correct(self, hypothesis: str, cosine: float, drops: list[float], candidates: int, seed: int = 0) -> list[str]:
        return []


def mean(values: list[float]) -> float:
    return round(float(np.mean(values)), 4) if values else float("nan")


def dev_texts(count: int, seed: int) -> list[str]:
    items = real_corpus(40, 40, seed=seed, split="calibration")
    return [item.text for item in items if 4 <= len(item.text.split()) <= 22][:count]


def summary(guesses: list[str], truths: list[str], cosines: list[float], **extra: float) -> dict[str, float]:
    """Mean token F1 and cosine of ``guesses``, plus ``extra`` figures."""
    scores = [token_f1(g, t) for g, t in zip(guesses, truths, strict=True)]
    return {"token_f1": mean(scores), "cosine": mean(cosines), **extra}


def evaluate_corrupted(args, corrector: UniversalCorrector, embedder: Embedder, lexicon: Lexicon) -> dict:
    texts = dev_texts(args.eval_corrupted, seed=6)
    pairs = make_pairs(texts, embedder, lexicon, seed=1)
    targets = embedder.encode(texts)
    greedy = [(corrector.correct(p.hypothesis, p.cosine, list(p.drops), candidates=1) or [""])[0] for p in pairs]
    greedy_cosines = np.sum(embedder.encode([g or "." for g in greedy]) * targets, axis=1)
    refined = [
        refine(pair.hypothesis, lambda t, v=target: embedder.encode(t) @ v, corrector, 2, 4)
        for pair, target in zip(pairs, targets, strict=True)
    ]
    return {
        "n": len(pairs),
        "before": summary([p.hypothesis for p in pairs], texts, [p.cosine for p in pairs]),
        "greedy": summary(greedy, texts, list(greedy_cosines)),
        "refine_2x4": summary(
            [r[0] for r in refined], texts, [r[1] for r in refined], queries_per_record=mean([r[2] for r in refined])
        ),
        "examples": [
            {"truth": p.text, "hypothesis": p.hypothesis, "greedy": g}
            for p, g in zip(pairs[:4], greedy[:4], strict=True)
        ],
    }


def eval_name(args: argparse.Namespace) -> str:
    """Which sentences the adversarial-decoding evaluation runs on: the dev split, or --eval-data's."""
    return slug(args.eval_data.stem) if args.eval_data else "dev"


# A narrower beam than the default, but the residual polish (15 rounds) still runs: ~900 encoder queries a record
AD_SETTINGS = {"beam_width": 3, "top_k": 10, "max_tokens": 16, "refine_rounds": 0}


def adversarial_hypotheses(args, embedder: Embedder) -> tuple[list[str], list[str], float]:
    """Adversarial decoding's guesses for the dev sentences, with the cheap settings (cached per attack version)."""
    path = args.out / f"ad-{eval_name(args)}-v{AdversarialDecoding.version}-{args.eval_records}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        return saved["texts"], saved["hypotheses"], saved["queries_per_record"]
    if args.eval_data:
        texts = [json.loads(line)["text"] for line in args.eval_data.open() if line.strip()][: args.eval_records]
    else:
        texts = dev_texts(args.eval_records, seed=5)
    attack = AdversarialDecoding(**AD_SETTINGS, threads=args.threads)
    attack.embedder = embedder
    found = attack.infer(embedder.encode(texts))
    hypotheses = [i.recovered_text for i in found]
    queries = attack.encoder_queries / len(texts)
    saved = {"settings": AD_SETTINGS, "texts": texts, "hypotheses": hypotheses, "queries_per_record": queries}
    path.write_text(json.dumps(saved, indent=1))
    return texts, hypotheses, queries


def refined(args, name: str, make: Callable[[], Proposer], hypotheses: list[str], targets, embedder) -> list[dict]:
    """``refine`` of every hypothesis, one line per record appended to a cache under --out as it is done, so an
    interrupted evaluation resumes (``name`` must change whenever the proposer does)."""
    path = args.out / f"refine-{eval_name(args)}-{name}-{args.rounds}x{args.candidates}-{len(hypotheses)}.jsonl"
    done = [json.loads(line) for line in path.open()] if path.exists() else []
    proposer = make() if len(done) < len(hypotheses) else None
    with path.open("a") as out:
        for hypothesis, target in list(zip(hypotheses, targets, strict=True))[len(done) :]:
            assert proposer is not None
            started = time.perf_counter()
            score = lambda texts, v=target: embedder.encode(texts) @ v  # noqa: E731
            text, cosine, queries = refine(hypothesis or ".", score, proposer, args.rounds, args.candidates)
            row = {"text": text, "cosine": cosine, "queries": queries, "seconds": time.perf_counter() - started}
            out.write(json.dumps(row) + "\n")
            out.flush()
            done.append(row)
    return done


def evaluate_adversarial(args, proposers: dict[str, Callable[[], Proposer]], embedder: Embedder) -> dict:
    """Refine adversarial decoding's hypotheses with each proposer (cached per record, see :func:`refined`)."""
    texts, hypotheses, ad_queries = adversarial_hypotheses(args, embedder)
    targets = embedder.encode(texts)
    cosines = np.sum(embedder.encode([h or "." for h in hypotheses]) * targets, axis=1)
    result: dict[str, object] = {
        "n": len(texts),
        "adversarial_decoding": summary(hypotheses, texts, list(cosines), queries_per_record=round(ad_queries, 1)),
    }
    for name, make in proposers.items():
        runs = refined(args, name, make, hypotheses, targets, embedder)
        key = name.split("-")[0]
        result[key] = summary(
            [r["text"] for r in runs],
            texts,
            [r["cosine"] for r in runs],
            queries_per_record=mean([r["queries"] for r in runs]),
            seconds_per_record=mean([r["seconds"] for r in runs]),
            improved_records=int(sum(r["cosine"] > c + 1e-6 for r, c in zip(runs, cosines, strict=True))),
        )
        if key == "trained":
            result["records"] = [
                {
                    "truth": t,
                    "adversarial_decoding": h,
                    "refined": r["text"],
                    "cosine": [round(float(c), 4), r["cosine"]],
                }
                for t, h, r, c in zip(texts, hypotheses, runs, cosines, strict=True)
            ]
        log(f"refine with {name}: {result[key]}")
    return result


def train(args: argparse.Namespace, embedders: dict[str, Embedder]) -> tuple[UniversalCorrector | None, dict]:
    """Build the pairs and train on the CPU (``None`` with ``--pairs-only``)."""
    pairs = build_pairs(args, embedders)
    kinds = {kind: sum(p.kind == kind for p in pairs) for kind in sorted({p.kind for p in pairs})}
    log(f"{len(pairs)} pairs: {kinds}")
    if args.pairs_only:
        return None, {}
    config = CorrectorConfig(lora_rank=args.rank, lora_alpha=2.0 * args.rank)
    corrector = UniversalCorrector(config, threads=args.threads)
    facts: dict[str, object] = corrector.train(
        pairs,
        max_steps=args.steps,
        max_seconds=args.max_seconds,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        checkpoint_dir=args.out,
        seed=args.seed,
        log=log,
    )
    facts |= {
        "pairs": len(pairs),
        "pair_kinds": kinds,
        "corpus": "real_corpus(split='train'), sentences of 3-30 words",
        "embedders": args.embedders,
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "threads": args.threads,
        "command": "HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python pipelines/train_corrector.py "
        + " ".join(shlex.quote(a) for a in sys.argv[1:]),
    }
    log(f"trained: {facts}")
    corrector.save(args.out / "corrector.safetensors", facts)
    return corrector, facts


def main() -> None:
    args = parse_args()
    if args.weights:  # measured where they lie; nothing is trained, so nothing is cleaned
        args.out = args.weights.parent
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.resume and not args.weights:
        for stale in [*args.out.glob("corrector-*.pt"), *args.out.glob("pairs-*/*.json*")]:
            stale.unlink()
    import torch

    torch.set_num_threads(args.threads)
    embedders = {name: Embedder(name) for name, _ in shares(args.embedders, 1)}
    if args.weights:
        corrector = UniversalCorrector.load(args.weights, threads=args.threads)
        config, facts = corrector.config, dict(corrector.facts)
    else:
        corrector, facts = train(args, embedders)
        if corrector is None:
            return
        config = corrector.config
    if not args.eval:
        return
    first = next(iter(embedders.values()))
    weights_file = args.weights or args.out / "corrector.safetensors"
    weights = hashlib.sha256(weights_file.read_bytes()).hexdigest()[:12]
    results: dict[str, object] = {"training": facts}
    proposers: dict[str, Callable[[], Proposer]] = {
        "deletions_only": NoProposals,
        "untrained_smollm2": lambda: UniversalCorrector(config, threads=args.threads),  # zero LoRA
        f"trained-{weights}": lambda: corrector,
    }
    adversarial = evaluate_adversarial(args, proposers, first)
    results["adversarial_" + eval_name(args)] = adversarial
    if args.eval_corrupted and not args.eval_data:
        cached = args.out / f"corrupted-{weights}-{args.eval_corrupted}.json"  # training-dependent: keyed by weights
        if not cached.exists():
            lexicon = cached_lexicon(args, first)
            cached.write_text(json.dumps(evaluate_corrupted(args, corrector, first, lexicon)))
        results["corrupted_dev"] = json.loads(cached.read_text())
        log(f"corrupted dev: {results['corrupted_dev']}")
    (args.out / f"results-{eval_name(args)}.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    trained = adversarial["trained"]
    baselines = [adversarial[name] for name in ("adversarial_decoding", "untrained_smollm2", "deletions_only")]
    gain = all(trained["token_f1"] > b["token_f1"] or trained["cosine"] > b["cosine"] for b in baselines)  # type: ignore[index]
    if args.ship and args.eval_data:
        log("--ship decides on the dev split only: run again without --eval-data")
    elif args.ship and gain:
        facts["dev"] = {
            "adversarial_decoding_hypotheses": {k: v for k, v in adversarial.items() if k != "records"},
            "adversarial_decoding_settings": {**AD_SETTINGS, "version": AdversarialDecoding.version},
            "corrupted": {k: v for k, v in results.get("corrupted_dev", {}).items() if k != "examples"},  # type: ignore[union-attr]
            "refine": {"rounds": args.rounds, "candidates": args.candidates},
        }
        corrector.save(DATA / PACKAGED, facts, dtype=torch.float16)
        log(f"shipped {DATA / PACKAGED}")
    elif args.ship:
        log("no gain over adversarial decoding and both controls: nothing shipped")


if __name__ == "__main__":
    main()
