"""Data-subject presence on a store of 300 real MiniLM vectors: people with a record in it score p < 0.05,
people without one do not."""

from __future__ import annotations

import numpy as np
import pytest

from vdbguard.attacks.membership import null_identities, presence_score, presence_scores, probe_sentences
from vdbguard.corpus import human_sentences, synthetic_clean, synthetic_pii
from vdbguard.pii import PiiType

INSERTED = "Please update the emergency contact for Marguerite Oyelaran to 415-555-0192."


def _two_word_names(items) -> list[str]:
    names = []
    for item in items:
        for value in item.values.get(PiiType.PERSON, ()):
            parts = value.split()
            if len(parts) == 2 and parts[0].rstrip(".").lower() not in ("mr", "mrs", "ms", "dr", "miss", "mx"):
                names.append(value)
    return names


@pytest.fixture(scope="module")
def store(embedder):
    """(texts, vectors): 150 Faker PII notes, 99 clean notes, 50 human lines and one inserted note."""
    texts = [item.text for item in synthetic_pii(150, seed=31)]
    texts += [item.text for item in synthetic_clean(99, seed=31)]
    texts += human_sentences("holdout")[:50]
    texts.insert(137, INSERTED)
    return texts, embedder.encode(texts)


def test_probe_sentences_and_nulls() -> None:
    sentences = probe_sentences({"name": "Jane Roe", "email": "jane@example.com"})
    assert "a note about Jane Roe" in sentences and "Jane Roe's email is jane@example.com" in sentences
    assert probe_sentences({"email": "jane@example.com"})[0] == "the email is jane@example.com"
    nulls = null_identities(["name", "phone"], 10, seed=1)
    assert len(nulls) == 10 and all(set(p) == {"name", "phone"} for p in nulls)
    assert nulls == null_identities(["name", "phone"], 10, seed=1)
    from vdbguard.detectors.lexicon import capitalised_names

    indian_names = set(capitalised_names(["en_IN"])[0])  # the null follows the locales it is given
    indian = null_identities(["name"], 10, seed=1, locales=("en_IN",))
    assert all(person["name"].split()[0] in indian_names for person in indian)
    with pytest.raises(ValueError):
        probe_sentences({"passport": "X123"})


@pytest.fixture(scope="module")
def scored(store, embedder):
    """One presence_scores call (one shared null of 200 random identities) for every name-only query."""
    texts, vectors = store
    joined = " ".join(texts)
    present = _two_word_names(synthetic_pii(150, seed=31))[:20]
    absent = [n for n in _two_word_names(synthetic_pii(150, seed=131)) if not any(p in joined for p in n.split())]
    names = ["Marguerite Oyelaran", "Bartholomew Quincey", *present, *absent[:20]]
    results = presence_scores(embedder, vectors, [{"name": n} for n in names])
    return dict(zip(names, results, strict=True)), present, absent[:20]


def test_inserted_person_is_found_and_a_stranger_is_not(store, scored, embedder) -> None:
    texts, vectors = store
    by_name, _, _ = scored
    present, absent = by_name["Marguerite Oyelaran"], by_name["Bartholomew Quincey"]
    assert present.p_value < 0.05 and present.present, present
    assert texts[present.nearest_index] == INSERTED
    assert absent.p_value > 0.05 and not absent.present, absent
    assert present.score > absent.score and present.z > absent.z + 2
    identifiers = {"name": "Marguerite Oyelaran", "phone": "415-555-0192"}
    with_phone = presence_score(embedder, vectors, identifiers, null_size=100)
    assert with_phone.p_value < 0.05 and texts[with_phone.nearest_index] == INSERTED


def test_power_and_false_positive_rate_over_many_people(scored) -> None:
    by_name, present, absent = scored
    p_present = np.array([by_name[n].p_value for n in present])
    p_absent = np.array([by_name[n].p_value for n in absent])
    assert len(present) == len(absent) == 20
    assert (p_present < 0.05).mean() >= 0.5, p_present  # measured 0.75 with these seeds
    assert (p_absent < 0.05).mean() <= 0.15, p_absent  # a calibrated test gives ~0.05
    assert np.median(p_present) < np.median(p_absent)
