"""What a corpus sentence is (``LabelledText``) and the hash that keys caches on a corpus.

Light on purpose: every attack imports ``LabelledText``, and none of them should pay for Faker, yaml or
spaCy to do so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from vdbguard.pii import PiiType

Source = Literal["synthetic-pii", "synthetic-clean", "human", "real-pii", "real-clean", "user"]
Split = Literal["train", "holdout"]

DEFAULT_LOCALES: tuple[str, ...] = ("en_US", "en_GB", "en_CA", "en_AU", "en_IE")


@dataclass(frozen=True)
class LabelledText:
    """One training/demo sentence with exact PII labels.

    ``pii`` is exactly ``set(values)``: the types whose literal values (``values[type]``) were inserted
    into ``text``. Clean, human and user texts have empty ``pii`` and ``values``.
    """

    text: str
    pii: frozenset[PiiType]
    values: dict[PiiType, tuple[str, ...]] = field(hash=False)
    source: str


def corpus_hash(items: Sequence[LabelledText]) -> str:
    """SHA-256 over texts, labels and sources, in order: a cache key for models trained on ``items``.

    Order counts because training order changes the model; the JSON encoding makes it unambiguous and
    independent of Python's hash randomisation.
    """
    payload = [[it.text, sorted(p.value for p in it.pii), it.source] for it in items]
    blob = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()
