"""Word-level helpers shared by the attacks and their scoring: one tokeniser, so metrics agree."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

_TOKEN = re.compile(r"\w+", re.UNICODE)


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
