"""Held-out PII sentences the defense, calibration and frontier tests measure on."""

from __future__ import annotations

import pytest

from vdbguard.corpus import synthetic_pii
from vdbguard.evaluate.data import EvalItem
from vdbguard.pii import PiiType


@pytest.fixture(scope="module")
def named() -> list[EvalItem]:
    """Held-out PII sentences that name people from locales the training corpus never used."""
    items = synthetic_pii(80, seed=999, locales=("en_NZ", "en_IN"))
    return [EvalItem(t.text, tuple(t.values.get(PiiType.PERSON, ()))) for t in items]


@pytest.fixture(scope="module")
def sentences() -> list[EvalItem]:
    """Held-out PII sentences scored on their words (no names given), where bag-of-words is strong."""
    return [EvalItem(item.text) for item in synthetic_pii(60, seed=999, locales=("en_NZ", "en_IN"))]
