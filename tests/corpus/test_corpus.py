"""The training corpus: exact labels, hard negatives, diversity, determinism and leak-free splits."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from vdbguard.corpus import (
    TEMPLATES,
    LabelledText,
    build_corpus,
    corpus_hash,
    human_sentences,
    looks_like_person_name,
    synthetic_clean,
    synthetic_pii,
)
from vdbguard.data.medical import CONDITIONS, DRUGS
from vdbguard.pii import PROBED_TYPES, PiiType

N = 2000
EMAIL_RE = re.compile(r"\S+@\S+")
LONG_DIGITS_RE = re.compile(r"\d(?:[\s().+-]*\d){6,}")  # 7+ digits, allowing phone-style separators
MEDICAL_RE = re.compile(
    r"\b(?:" + "|".join(re.escape(t) for t in sorted({*CONDITIONS, *DRUGS}, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def pii_items() -> list[LabelledText]:
    return synthetic_pii(N, seed=11)


@pytest.fixture(scope="module")
def clean_items() -> list[LabelledText]:
    return synthetic_clean(N, seed=11)


def _assert_clean_text(text: str) -> None:
    assert not looks_like_person_name(text), text
    assert not EMAIL_RE.search(text), text
    assert not LONG_DIGITS_RE.search(text), text
    assert not MEDICAL_RE.search(text), text


def _values(item: LabelledText) -> list[str]:
    return [v for vs in item.values.values() for v in vs]


def _shape(item: LabelledText) -> str:
    pairs = sorted(((v, t) for t, vs in item.values.items() for v in vs), key=lambda p: -len(p[0]))
    shape = item.text
    for value, pii in pairs:
        shape = shape.replace(value, f"<{pii.value}>")
    return shape


# ----- determinism ----------------------------------------------------------------------------------


def test_generators_are_deterministic_per_seed() -> None:
    assert synthetic_pii(200, seed=3) == synthetic_pii(200, seed=3)
    assert synthetic_clean(200, seed=3) == synthetic_clean(200, seed=3)
    assert build_corpus(100, 100, seed=3) == build_corpus(100, 100, seed=3)


def test_generators_differ_across_seeds() -> None:
    assert [x.text for x in synthetic_pii(50, seed=1)] != [x.text for x in synthetic_pii(50, seed=2)]
    assert [x.text for x in synthetic_clean(50, seed=1)] != [x.text for x in synthetic_clean(50, seed=2)]
    assert [x.text for x in build_corpus(50, 50, seed=1)] != [x.text for x in build_corpus(50, 50, seed=2)]


def test_sizes_and_sources(pii_items: list[LabelledText], clean_items: list[LabelledText]) -> None:
    assert len(pii_items) == N and {x.source for x in pii_items} == {"synthetic-pii"}
    assert len(clean_items) == N and {x.source for x in clean_items} == {"synthetic-clean"}
    assert synthetic_pii(0, seed=0) == []
    with pytest.raises(ValueError):
        synthetic_pii(-1, seed=0)


# ----- labels ---------------------------------------------------------------------------------------


def test_pii_labels_are_exact(pii_items: list[LabelledText]) -> None:
    for item in pii_items:
        assert item.pii == frozenset(item.values), item
        assert 1 <= len(item.pii) <= 3, item
        for pii, values in item.values.items():
            assert values, (pii, item)
            for value in values:
                assert value in item.text, (pii, value, item.text)


def test_pii_sentences_carry_no_unlabelled_email_or_medical(pii_items: list[LabelledText]) -> None:
    for item in pii_items:
        if PiiType.EMAIL not in item.pii:
            assert "@" not in item.text, item.text
        if PiiType.MEDICAL not in item.pii:
            assert not MEDICAL_RE.search(item.text), item.text


def test_clean_sentences_hold_no_pii(clean_items: list[LabelledText]) -> None:
    for item in clean_items:
        assert item.pii == frozenset() and item.values == {}, item
        _assert_clean_text(item.text)


def test_clean_sentences_are_hard_negatives(pii_items: list[LabelledText], clean_items: list[LabelledText]) -> None:
    """Cue words and sentence openings of the PII side also occur on the clean side, so neither can be
    what a probe learns."""
    clean_text = " ".join(x.text for x in clean_items)
    cues = ("SSN", "DOB", "date of birth", "phone", "email", "Patient", "address", "Dear", "Lead:", "tel.")
    for cue in cues:
        assert cue in clean_text, cue

    def opening(text: str) -> str:
        return " ".join(text.split()[:2]).lower()

    pii_openings = Counter(opening(x.text) for x in pii_items if not x.text.startswith(tuple(_values(x))))
    clean_openings = {opening(x.text) for x in clean_items}
    shared = sum(n for o, n in pii_openings.items() if o in clean_openings)
    assert shared >= 0.5 * sum(pii_openings.values())


# ----- diversity and balance ------------------------------------------------------------------------


def test_template_diversity(pii_items: list[LabelledText]) -> None:
    assert len(TEMPLATES) >= 60
    assert len({_shape(x) for x in pii_items}) >= 40


def test_every_probed_type_is_common(pii_items: list[LabelledText]) -> None:
    counts = Counter(t for x in pii_items for t in x.pii)
    for pii in PROBED_TYPES:
        assert counts[pii] >= 0.05 * N, (pii, counts[pii])
    assert counts[PiiType.ACCOUNT_NUMBER] > 0 and counts[PiiType.CREDIT_CARD] > 0


def test_sentences_are_mostly_short(pii_items: list[LabelledText], clean_items: list[LabelledText]) -> None:
    for items in (pii_items, clean_items):
        assert sum(len(x.text.split()) <= 32 for x in items) >= 0.95 * len(items)


# ----- human lines ----------------------------------------------------------------------------------


def test_human_splits_are_disjoint_and_clean() -> None:
    train, holdout = human_sentences("train"), human_sentences("holdout")
    assert train and holdout
    assert not set(train) & set(holdout)
    assert 0.15 < len(holdout) / (len(train) + len(holdout)) < 0.35
    for line in train + holdout:
        assert 3 <= len(line.split()) <= 40 and line == line.strip(), line
        _assert_clean_text(line)
    assert len({line.casefold() for line in train}) == len(train)
    with pytest.raises(ValueError):
        human_sentences("test")  # type: ignore[arg-type]


# ----- corpus ---------------------------------------------------------------------------------------


def test_build_corpus_mix() -> None:
    corpus = build_corpus(100, 100, seed=5, user_texts=["my own text", "  "])
    sources = Counter(x.source for x in corpus)
    assert sources == {"synthetic-pii": 100, "synthetic-clean": 50, "human": 50, "user": 1}
    user = next(x for x in corpus if x.source == "user")
    assert user.text == "my own text" and user.pii == frozenset() and user.values == {}
    assert [x.source for x in corpus[:20]] != sorted(x.source for x in corpus[:20])  # shuffled


def test_build_corpus_uses_the_requested_split() -> None:
    holdout = set(human_sentences("holdout"))
    demo = build_corpus(10, 200, seed=0, split="holdout")
    humans = [x.text for x in demo if x.source == "human"]
    assert humans and set(humans) <= holdout
    train_humans = {x.text for x in build_corpus(10, 200, seed=0) if x.source == "human"}
    assert not train_humans & holdout


def test_build_corpus_tops_up_with_synthetic_when_human_lines_run_out() -> None:
    n_holdout = len(human_sentences("holdout"))
    corpus = build_corpus(0, 2 * n_holdout + 100, seed=0, split="holdout")
    sources = Counter(x.source for x in corpus)
    assert sources["human"] == n_holdout
    assert sources["synthetic-clean"] == n_holdout + 100


# ----- hash -----------------------------------------------------------------------------------------


def test_corpus_hash_is_stable_and_sensitive() -> None:
    items = [
        LabelledText(
            "Call Jane Doe on 555-010-9999.",
            frozenset({PiiType.PERSON, PiiType.PHONE}),
            {PiiType.PERSON: ("Jane Doe",), PiiType.PHONE: ("555-010-9999",)},
            "synthetic-pii",
        ),
        LabelledText("The customer called.", frozenset(), {}, "synthetic-clean"),
    ]
    digest = corpus_hash(items)
    # A literal: the digest must not depend on the process (hash randomisation) or the platform.
    assert digest == "253f48366c06c19f02d96c344fc51d373dd350e409b68cf6fcc4fef63f1ea66a"
    assert digest == corpus_hash(list(items))
    changed = [items[0], LabelledText("The customer called!", frozenset(), {}, "synthetic-clean")]
    assert corpus_hash(changed) != digest
    relabelled = [items[0], LabelledText("The customer called.", frozenset({PiiType.PERSON}), {}, "human")]
    assert corpus_hash(relabelled) != digest
    corpus = build_corpus(50, 50, seed=9)
    assert corpus_hash(corpus) == corpus_hash(build_corpus(50, 50, seed=9))
