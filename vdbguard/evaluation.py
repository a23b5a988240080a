"""Score an inversion attack the way the papers do (Vec2Text Tables 1 and 3) on held-out text.

The attack only ever sees embeddings of the evaluation texts; it is trained on the project corpus.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vdbguard.attacks import Attack
from vdbguard.embedders import Embedder
from vdbguard.errors import VdbguardError

_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class EvalItem:
    text: str
    names: tuple[str, ...] = ()


def load_jsonl(path: Path) -> list[EvalItem]:
    """``{"text": "...", "names": ["Jane Doe"]}`` per line; errors name the line and the field."""
    if not path.is_file():
        raise VdbguardError(f"evaluation data {path} does not exist", "pass --data FILE.jsonl")
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise VdbguardError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
        text = row.get("text") if isinstance(row, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise VdbguardError(f"{path}:{number}: field 'text' must be a non-empty string")
        names = row.get("names") or []
        if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
            raise VdbguardError(f"{path}:{number}: field 'names' must be a list of non-empty strings")
        items.append(EvalItem(text=text, names=tuple(names)))
    if not items:
        raise VdbguardError(f"{path} holds no records")
    return items


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def token_f1(prediction: str, reference: str) -> float:
    """Multiset token F1, per sentence (as in Vec2Text)."""
    predicted, truth = Counter(tokens(prediction)), Counter(tokens(reference))
    overlap = sum((predicted & truth).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(predicted.values()), overlap / sum(truth.values())
    return 2 * precision * recall / (precision + recall)


def name_recovery(prediction: str, names: Sequence[str]) -> tuple[list[bool], list[bool], list[bool]]:
    """Per name: first name recovered, last name recovered, both recovered."""
    predicted = set(tokens(prediction))
    first, last, full = [], [], []
    for name in names:
        parts = tokens(name)
        first.append(parts[0] in predicted)
        last.append(parts[-1] in predicted)
        full.append(all(part in predicted for part in parts))
    return first, last, full


def _rate(flags: list[bool]) -> float | None:
    return round(float(np.mean(flags)), 4) if flags else None


def evaluate_inversion(attack: Attack, embedder: Embedder, items: Sequence[EvalItem]) -> dict[str, float | int | None]:
    import sacrebleu

    started = time.perf_counter()
    references = [item.text for item in items]
    targets = embedder.encode(references)
    predictions = [inference.recovered_text for inference in attack.infer(targets)]
    recovered = embedder.encode([p if p.strip() else "." for p in predictions])
    cosine = float(np.mean(np.sum(targets * recovered, axis=1)))
    first: list[bool] = []
    last: list[bool] = []
    full: list[bool] = []
    for prediction, item in zip(predictions, items, strict=True):
        f, la, fu = name_recovery(prediction, item.names)
        first, last, full = first + f, last + la, full + fu
    return {
        "attack": attack.name,
        "n": len(items),
        "bleu": round(sacrebleu.corpus_bleu(predictions, [references]).score, 2),
        "token_f1": round(float(np.mean([token_f1(p, r) for p, r in zip(predictions, references, strict=True)])), 4),
        "exact": round(
            float(np.mean([p.strip() == r.strip() for p, r in zip(predictions, references, strict=True)])), 4
        ),
        "cosine": round(cosine, 4),
        "first_name": _rate(first),
        "last_name": _rate(last),
        "full_name": _rate(full),
        "seconds": round(time.perf_counter() - started, 2),
    }
