"""Train the universal corrector's bigger version on an accelerator, from pairs built on the CPU.

``pipelines/train_corrector.py --pairs-only`` builds the training pairs (real training-split sentences, each with
an inversion-shaped hypothesis and the real embedder's cosine and leave-one-out marks); building them needs the
embedders, training them needs only SmolLM2 and torch. This script does the second half, so it runs on a machine
that holds nothing but torch, transformers, the ``gguf`` package and the SmolLM2 file:

    python pipelines/train_corrector_gpu.py --pairs build/corrector-gpu --device cuda --out build/corrector-gpu/out

Pairs whose sentence hashes into the validation share are held out whole (every hypothesis of that sentence), their
loss is measured at each checkpoint, and the weights with the lowest one are kept and written (float16
safetensors + JSON) as soon as they are found, so a run stopped by its time limit still leaves its best weights.
``pipelines/train_corrector.py --weights FILE`` then measures them on the development split.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

import torch

from vdbguard.attacks.corrector import CorrectorConfig, Pair, UniversalCorrector, read_pairs


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, nargs="+", required=True, help=".jsonl(.gz) files or folders of them")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--max-seconds", type=float, default=420.0, help="training budget (wall-clock seconds)")
    parser.add_argument("--checkpoint-seconds", type=float, default=30.0)
    parser.add_argument("--checkpoints", type=Path, help="resumable training state (default: OUT/checkpoints)")
    parser.add_argument("--validation-share", type=float, default=0.03, help="share of sentences held out")
    parser.add_argument("--adversarial-weight", type=int, default=3, help="copies of each adversarial-decoding pair")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def pairs_in(sources: list[Path]) -> list[Pair]:
    files = sorted(
        f for source in sources for f in ([source] if source.is_file() else source.rglob("*.jsonl*")) if f.is_file()
    )
    return [pair for path in files for pair in read_pairs(path)]


def held_out(text: str, share: float) -> bool:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share


def main() -> None:
    args = parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    pairs = pairs_in(args.pairs)
    if not pairs:
        raise SystemExit(f"no pairs under {[str(p) for p in args.pairs]}: build them with train_corrector.py first")
    validation = [p for p in pairs if held_out(p.text, args.validation_share)]
    training = [p for p in pairs if not held_out(p.text, args.validation_share)]
    training += [p for p in training if p.kind == "adversarial"] * (args.adversarial_weight - 1)
    random.Random(args.seed).shuffle(training)
    kinds = dict(Counter(p.kind for p in training))
    log(f"{len(training)} training pairs {kinds}, {len(validation)} held out, device {args.device}")
    config = CorrectorConfig(lora_rank=args.rank, lora_alpha=2.0 * args.rank)
    corrector = UniversalCorrector(config, threads=None, device=args.device)
    facts: dict[str, object] = {
        "pairs": len(training),
        "pair_kinds": kinds,
        "validation_pairs": len(validation),
        "corpus": "real_corpus(split='train'), sentences of 3-30 words",
        "embedders": sorted({p.embedder for p in pairs}),
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device,
        "command": "python pipelines/train_corrector_gpu.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
    }
    weights = args.out / "corrector.safetensors"

    def keep(model: UniversalCorrector, progress: dict[str, float]) -> None:
        model.save(weights, {**facts, "kept": progress}, dtype=torch.float16)

    result = corrector.train(
        training,
        max_steps=args.steps,
        max_seconds=args.max_seconds,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        checkpoint_dir=args.checkpoints or args.out / "checkpoints",
        checkpoint_seconds=args.checkpoint_seconds,
        seed=args.seed,
        log=log,
        validation=validation,
        on_best=keep,
    )
    facts |= result
    corrector.save(weights, facts, dtype=torch.float16)
    log(f"trained: {json.dumps(facts)}")


if __name__ == "__main__":
    main()
