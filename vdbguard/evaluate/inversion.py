"""Score an inversion attack the way the papers do (Vec2Text Tables 1 and 3) on held-out text.

The attack only ever sees embeddings of the evaluation texts; it is trained on the project corpus.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vdbguard.attacks import Attack
from vdbguard.embedders import Embedder
from vdbguard.errors import VdbguardError
from vdbguard.evaluate.data import EvalItem
from vdbguard.text import name_recovery, token_f1


def _rate(flags: list[bool]) -> float | None:
    return round(float(np.mean(flags)), 4) if flags else None


def inversion_scores(
    embedder: Embedder,
    targets: np.ndarray,
    predictions: Sequence[str],
    references: Sequence[str],
    names: Sequence[Sequence[str]],
) -> dict[str, float | int | None]:
    """What every inversion benchmark reports about recovered texts, computed one way: BLEU, token F1, exact
    matches, cosine to the target under ``embedder``, and the shares of first, last and full names (of each
    reference's ``names``) that came back."""
    import sacrebleu

    recovered = embedder.encode([p if p.strip() else "." for p in predictions])
    pairs = list(zip(predictions, references, strict=True))
    first: list[bool] = []
    last: list[bool] = []
    full: list[bool] = []
    for prediction, named in zip(predictions, names, strict=True):
        f, la, fu = name_recovery(prediction, named)
        first, last, full = first + f, last + la, full + fu
    return {
        "n": len(pairs),
        "bleu": round(sacrebleu.corpus_bleu(list(predictions), [list(references)]).score, 2),
        "token_f1": round(float(np.mean([token_f1(p, r) for p, r in pairs])), 4),
        "exact": round(float(np.mean([p.strip() == r.strip() for p, r in pairs])), 4),
        "cosine": round(float(np.mean(np.sum(targets * recovered, axis=1))), 4),
        "first_name": _rate(first),
        "last_name": _rate(last),
        "full_name": _rate(full),
    }


def evaluate_inversion(attack: Attack, embedder: Embedder, items: Sequence[EvalItem]) -> dict[str, float | int | None]:
    started, cpu_started = time.perf_counter(), time.process_time()
    queries_before = attack.encoder_queries
    references = [item.text for item in items]
    targets = embedder.encode(references)
    predictions = [inference.recovered_text for inference in attack.infer(targets)]
    return {
        "attack": attack.name,
        **inversion_scores(embedder, targets, predictions, references, [item.names for item in items]),
        "seconds": round(time.perf_counter() - started, 2),
        "seconds_per_record": round((time.perf_counter() - started) / max(len(items), 1), 3),
        "cpu_seconds_per_record": round((time.process_time() - cpu_started) / max(len(items), 1), 3),
        "encoder_queries_per_record": round((attack.encoder_queries - queries_before) / max(len(items), 1), 1),
    }


def measure_attack(
    data: Path, embedder_name: str, attack_name: str, profile: str, seconds_per_record: float, progress: Any = None
) -> dict[str, Any]:
    """`vdbguard evaluate-attacks`: the attack named (``strongest``: the best measured for the embedder) trained,
    then scored on held-out texts it sees only as embeddings. An unbudgeted run is kept for ``strongest``; a
    budgeted one measures the budget, not the attack, and is not."""
    from vdbguard.attacks import load_attack_class
    from vdbguard.attacks.base import with_record_budget
    from vdbguard.attacks.quality import record_quality
    from vdbguard.attacks.training import trained_attacks
    from vdbguard.evaluate.data import load_jsonl

    items = load_jsonl(data)
    attack_cls = load_attack_class(attack_name, embedder_name)
    if attack_cls.kind != "inversion":
        raise VdbguardError(
            f"{attack_cls.name} does not recover text", "pick an inversion attack: vdbguard attacks list"
        )
    model = Embedder(embedder_name)
    started = time.perf_counter()
    (attack,) = trained_attacks(model, [attack_cls.name], profile=profile, progress=progress)
    training_seconds = round(time.perf_counter() - started, 2)
    metrics: dict[str, Any] = evaluate_inversion(with_record_budget(attack, seconds_per_record), model, items)
    metrics["training_seconds"] = training_seconds
    if seconds_per_record and "max_seconds" in attack.settings():
        metrics["seconds_per_record_budget"] = seconds_per_record
    else:
        record_quality(embedder_name, attack_cls.name, metrics)
    return metrics
