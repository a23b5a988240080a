"""Slot search recovers person names from real MiniLM vectors of held-out sentences, with calibrated scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vdbguard.attacks.slot_search import SlotSearchAttack, split_person_name
from vdbguard.corpus import LabelledText, human_sentences, synthetic_clean, synthetic_pii
from vdbguard.detectors.lexicon import capitalised_names
from vdbguard.evaluate.data import EvalItem
from vdbguard.evaluate.inversion import evaluate_inversion
from vdbguard.pii import PiiType

LOCALES = ("en_US", "en_GB")  # a small gazetteer (~2.5k names) keeps fitting fast


def test_split_person_name_drops_titles_and_initials() -> None:
    assert split_person_name("Jane Smith") == ("Jane", "Smith")
    assert split_person_name("Dr. Jane A. Smith") == ("Jane", "Smith")
    assert split_person_name("Mr Smith") == (None, "Smith")
    assert split_person_name("Jane") == ("Jane", None)
    assert split_person_name("Lynley Henderson-Waters") == ("Lynley", "Waters")


def test_gazetteer_covers_every_locale_when_unrestricted() -> None:
    first, last = capitalised_names(("en_US",))
    assert "James" in first and "Smith" in last
    assert all(n.isascii() and n[0].isupper() for n in first + last)
    all_first, all_last = capitalised_names()
    assert set(first) < set(all_first) and set(last) < set(all_last)
    assert len(all_first) > 10_000 and len(all_last) > 10_000


@pytest.fixture(scope="module")
def fitted(embedder) -> SlotSearchAttack:
    humans = [LabelledText(t, frozenset(), {}, "human") for t in human_sentences("train")[:150]]
    items = synthetic_pii(500, seed=1) + synthetic_clean(150, seed=1) + humans
    attack = SlotSearchAttack(locales=LOCALES, top_k=3, max_calibration=100)
    attack.embedder = embedder
    attack.fit(items, embedder.encode([item.text for item in items]))
    return attack


@pytest.fixture(scope="module")
def held_out(fitted: SlotSearchAttack, embedder):
    """100 held-out sentences: (items, inferences with re-embedding search, inferences from the classifier)."""
    items = synthetic_pii(100, seed=2, locales=("en_US",))
    vectors = embedder.encode([item.text for item in items])
    refined = fitted.infer(vectors)
    fitted.refine = False
    try:
        classifier_only = fitted.infer(vectors)
    finally:
        fitted.refine = True
    return items, refined, classifier_only


def _top1(items, inferences) -> dict[str, float]:
    hits: dict[str, list[bool]] = {"first": [], "last": [], "full": []}
    for item, inference in zip(items, inferences, strict=True):
        truth = [split_person_name(v) for v in item.values.get(PiiType.PERSON, ())]
        firsts, lasts = {f for f, _ in truth if f}, {la for _, la in truth if la}
        first = last = None
        if inference.recovered_pii:
            _, (_, first, _), (_, last, _) = inference.recovered_pii
        if firsts:
            hits["first"].append(first in firsts)
        if lasts:
            hits["last"].append(last in lasts)
        if firsts and lasts:
            hits["full"].append(first in firsts and last in lasts)
    return {k: float(np.mean(v)) for k, v in hits.items()}


def test_recovers_names_from_held_out_vectors(held_out) -> None:
    items, refined_inferences, classifier_inferences = held_out
    refined, classifier_only = _top1(items, refined_inferences), _top1(items, classifier_inferences)
    # chance is ~1/1,000 per part on this gazetteer
    assert refined["first"] >= 0.3, refined
    assert refined["last"] >= 0.4, refined
    assert refined["full"] >= 0.2, refined
    assert classifier_only["first"] >= 0.2, classifier_only
    assert refined["full"] >= classifier_only["full"], (refined, classifier_only)


def test_output_shape_and_calibration(held_out) -> None:
    items, inferences, _ = held_out
    scored = []
    for item, inference in zip(items, inferences, strict=True):
        if not inference.recovered_pii:
            assert inference.recovered_text == ""
            continue
        full, first, last = inference.recovered_pii
        assert full[0] is first[0] is last[0] is PiiType.PERSON
        assert full[1] == f"{first[1]} {last[1]}" == inference.recovered_text
        assert all(0.0 <= v[2] <= 1.0 for v in inference.recovered_pii)
        truth = {split_person_name(v)[0] for v in item.values.get(PiiType.PERSON, ())}
        scored.append((first[2], first[1] in truth))
    p = np.array([s for s, _ in scored])
    right = np.array([r for _, r in scored])
    assert len(scored) >= 30
    # the calibrated score ranks right guesses above wrong ones, and is not wildly off on average
    assert p[right].mean() > p[~right].mean()
    assert abs(p.mean() - right.mean()) < 0.2, (p.mean(), right.mean())


def test_text_without_names_is_rarely_filled(fitted: SlotSearchAttack, embedder) -> None:
    texts = human_sentences("holdout")[:60]
    inferences = fitted.infer(embedder.encode(texts))
    confident = sum(any(score >= fitted.threshold for _, _, score in i.recovered_pii) for i in inferences)
    assert confident <= 3, confident


def test_harness_counts_the_recovered_names(fitted: SlotSearchAttack, embedder) -> None:
    items = [
        EvalItem(item.text, tuple(item.values[PiiType.PERSON]))
        for item in synthetic_pii(40, seed=5, locales=("en_US",))
        if PiiType.PERSON in item.values
    ]
    result = evaluate_inversion(fitted, embedder, items)
    assert result["first_name"] and result["first_name"] >= 0.2, result
    assert result["last_name"] and result["last_name"] >= 0.3, result


def test_save_load_round_trip(fitted: SlotSearchAttack, embedder, tmp_path: Path) -> None:
    fitted.save(tmp_path / "model")
    loaded = SlotSearchAttack.load(tmp_path / "model")
    loaded.embedder = embedder
    assert loaded.metrics() == fitted.metrics()
    texts = [item.text for item in synthetic_pii(12, seed=6, locales=("en_US",))]
    vectors = embedder.encode(texts)
    before = [i.recovered_text for i in fitted.infer(vectors)]
    after = [i.recovered_text for i in loaded.infer(vectors)]
    # name vectors are stored as float16, so an occasional near-tie may flip
    assert sum(a == b for a, b in zip(before, after, strict=True)) >= len(texts) - 1
    loaded.embedder = None  # without the embedder it falls back to the classifier alone, still calibrated
    assert any(i.recovered_pii for i in loaded.infer(vectors))


def test_vec2text_puts_the_names_the_vector_holds_into_its_own_guess(fitted: SlotSearchAttack, embedder) -> None:
    from vdbguard.attacks.vec2text import Vec2TextInversion

    items = [item for item in synthetic_pii(80, seed=5, locales=("en_US",)) if PiiType.PERSON in item.pii]
    wrong = f"{fitted.first_names[0]} {fitted.last_names[0]}"
    guesses, truths = [], []
    for item in items:
        name = max(item.values[PiiType.PERSON], key=len)
        first, last = split_person_name(name)
        if first and last and f"{first} {last}" in item.text:
            guesses.append(item.text.replace(f"{first} {last}", wrong))
            truths.append((item.text, f"{first} {last}"))
    corrector = Vec2TextInversion(steps=0, names=fitted)
    corrector.embedder = embedder
    found = corrector.correct(embedder.encode([t for t, _ in truths]), [[g] for g in guesses])
    restored = np.mean([name in text for (text, _), (_, name) in zip(found, truths, strict=True)])
    by_slot_search = fitted.infer(embedder.encode([t for t, _ in truths]))
    alone = np.mean([i.recovered_text == name for i, (_, name) in zip(by_slot_search, truths, strict=True)])
    # the guess is the true sentence with a wrong name: re-embedding in that sentence picks among the
    # classifier's top names better than slot search's own nearest corpus skeleton does
    assert len(truths) >= 20 and restored >= 0.3 and restored >= alone, (restored, alone)
    guess_cosines = np.sum(embedder.encode(guesses) * embedder.encode([t for t, _ in truths]), axis=1)
    assert all(cosine >= g - 1e-5 for (_, cosine), g in zip(found, guess_cosines, strict=True))


def test_name_edits_replace_a_name_run_or_insert_the_best_pair(fitted: SlotSearchAttack) -> None:
    from vdbguard.attacks.vec2text import Vec2TextInversion

    corrector = Vec2TextInversion(names=fitted)
    first, last = fitted.first_names[0], fitted.last_names[0]
    edits = corrector._name_edits(f"Call {first} {last}, today.", ["Ann", "Bo"], ["Lee", "Roe"])
    assert edits == ["Call Ann Lee, today.", "Call Ann Roe, today.", "Call Bo Lee, today.", "Call Bo Roe, today."]
    assert corrector._name_edits("call the customer", ["Ann"], ["Lee"]) == [
        "Ann Lee call the customer",
        "call Ann Lee the customer",
        "call the Ann Lee customer",
        "call the customer Ann Lee",
    ]
