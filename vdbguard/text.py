"""Word-level helpers shared by the attacks and their scoring: one tokeniser, so metrics agree."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

_TOKEN = re.compile(r"\w+", re.UNICODE)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(text: str) -> str:
    """``text`` with each lone surrogate (half of a character a JSON payload cut in two) replaced by U+FFFD, one for
    one so offsets hold: spaCy and the embedders' tokenizers cannot encode one, and it stopped the whole scan."""
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


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


TITLES = frozenset({"mr", "mrs", "ms", "miss", "dr", "mx", "prof", "sir", "madam"})


def name_parts(name: str) -> list[str]:
    """A name's tokens without titles and initials: "Mr J. Jenkins" is recovered by "jenkins", not by "mr"."""
    parts = [part for part in tokens(name) if len(part) > 1 and part not in TITLES]
    return parts or tokens(name)


def name_recovery(prediction: str, names: Sequence[str]) -> tuple[list[bool], list[bool], list[bool]]:
    """Per name: first name recovered, last name recovered, both recovered (titles and initials left out)."""
    predicted = set(tokens(prediction))
    first, last, full = [], [], []
    for name in names:
        parts = name_parts(name)
        first.append(parts[0] in predicted)
        last.append(parts[-1] in predicted)
        full.append(all(part in predicted for part in parts))
    return first, last, full
