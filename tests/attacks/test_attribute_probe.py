"""Attribute inference: condition family, sex, age band and few-shot authorship from vectors alone."""

from __future__ import annotations

import datetime
import json

import numpy as np
import pytest

from vdbguard.attacks import load_attack_class
from vdbguard.attacks.attribute_probe import AttributeProbe, synthetic_authors
from vdbguard.corpus import LabelledText, synthetic_clean, synthetic_pii
from vdbguard.corpus.labels import FAMILY_OF, NONE, birth_year, labels_of, medical_family, sex_of_name
from vdbguard.data.medical import CONDITIONS, DRUGS
from vdbguard.pii import PiiType

TODAY = datetime.date(2025, 6, 1)


def _item(text: str, **values: tuple[str, ...]) -> LabelledText:
    typed = {PiiType(k): v for k, v in values.items()}
    return LabelledText(text=text, pii=frozenset(typed), values=typed, source="synthetic-pii")


def test_labels_come_from_the_inserted_values():
    item = _item(
        "Mrs Okafor, born 03/04/1950, was diagnosed with asthma.",
        PERSON=("Mrs Okafor",),
        DATE_OF_BIRTH=("03/04/1950",),
        MEDICAL=("asthma",),
    )
    assert labels_of(item, TODAY) == {"medical_family": "respiratory", "sex": "female", "age_band": "65+"}
    clean = LabelledText(text="The caller asked about parking.", pii=frozenset(), values={}, source="synthetic-clean")
    assert labels_of(clean, TODAY) == {"medical_family": NONE, "sex": NONE, "age_band": NONE}


def test_ambiguous_sentences_are_left_unlabelled():
    mixed = _item("Craig and Jenna", PERSON=("Craig", "Jenna"), MEDICAL=("sertraline", "warfarin"))
    assert labels_of(mixed, TODAY)["sex"] is None  # two people of different sexes
    assert labels_of(mixed, TODAY)["medical_family"] is None  # a mental-health drug and a cardiovascular one
    assert sex_of_name("Dr Sanchez") is None and sex_of_name("Mx Tyler") is None
    assert sex_of_name("Mr. Lee") == "male" and sex_of_name("Dr Deborah Hale") == "female"
    assert sex_of_name("Kevin J. Moore") == "male"


def test_two_digit_birth_years_resolve_to_an_adult_age():
    assert birth_year("4/7/05", TODAY) == 2005  # 20 years old
    assert birth_year("4/7/12", TODAY) == 1912  # 2012 would be a child: the corpus only makes adults
    assert birth_year("1961-02-03", TODAY) == 1961 and birth_year("14 Mar 1990", TODAY) == 1990
    assert birth_year("unknown", TODAY) is None


def test_every_mapped_medical_term_exists_in_the_corpus_lists():
    terms = {t.lower() for t in (*CONDITIONS, *DRUGS)}
    assert set(FAMILY_OF) <= terms  # no typos: a misspelt key would silently fall into "other"
    assert medical_family("Metformin") == "metabolic and endocrine"
    assert sum(medical_family(t) == "other" for t in terms) <= 10


@pytest.fixture(scope="module")
def fitted(embedder) -> AttributeProbe:
    items = [*synthetic_pii(500, seed=3), *synthetic_clean(100, seed=3)]
    probe = AttributeProbe(min_pii_sentences=0)
    probe.embedder = embedder
    probe.fit(items, embedder.encode([item.text for item in items]))
    return probe


@pytest.fixture(scope="module")
def heldout(embedder) -> tuple[list[LabelledText], np.ndarray]:
    items = synthetic_pii(200, seed=999, locales=("en_NZ", "en_IN"))
    return items, embedder.encode([item.text for item in items])


def test_probe_recovers_sex_and_medical_presence_on_new_locales(fitted, heldout):
    assert {"medical_family", "sex", "age_band"} <= set(fitted.models)
    assert fitted.metrics()["sex_accuracy_given_present"] > 0.7
    scores = fitted.evaluate(*heldout)
    # locales the probe never saw (NZ and Indian names): the leak is not memorised names
    assert scores["sex_accuracy_given_present"] > 0.7
    assert scores["sex_accuracy_given_present"] > scores["sex_majority_baseline_given_present"] + 0.15
    assert scores["medical_family_presence_auc"] > 0.9
    assert scores["medical_family_accuracy_given_present"] > scores["medical_family_majority_baseline_given_present"]


def test_infer_reports_medical_as_pii_and_sex_as_an_attribute(fitted, embedder):
    vectors = embedder.encode(
        ["Triage this morning: Mrs Aroha Ngata has a history of schizophrenia.", "The parcel is held at the depot."]
    )
    medical, clean = fitted.infer(vectors)
    assert set(medical.type_scores) == {PiiType.MEDICAL}
    assert medical.type_scores[PiiType.MEDICAL] > fitted.threshold > clean.type_scores[PiiType.MEDICAL]
    assert medical.recovered_pii[0][:2] == (PiiType.MEDICAL, "mental health condition")
    assert medical.attributes["sex"][0] == "female" and "sex" not in clean.attributes
    rows = fitted.predict_attributes(vectors)
    assert rows[0]["medical_family"][0] == "mental health" and rows[1]["medical_family"][0] == NONE
    assert rows[0]["sex"][0] == "female"
    assert all(0.0 <= p <= 1.0 for row in rows for _, p in row.values())


def test_few_shot_authorship(fitted, embedder):
    texts, authors = synthetic_authors(n_authors=3, per_author=30, seed=4, signed=False)
    vectors, labels = embedder.encode(texts), np.array(authors)
    train = np.array([i for a in dict.fromkeys(authors) for i in np.flatnonzero(labels == a)[:15]])
    test = np.setdiff1d(np.arange(len(texts)), train)
    fitted.fit_authors(vectors[train], labels[train])
    predicted = np.array([label for label, _ in fitted.predict_authors(vectors[test])])
    # three authors: chance is 1/3; content is shared, so only style separates them (measured: 0.64)
    assert np.mean(predicted == labels[test]) > 0.5
    with pytest.raises(ValueError, match="two authors"):
        fitted.fit_authors(vectors[:3], ["a", "a", "a"])


def test_save_and_load_round_trip_without_pickle(fitted, heldout, tmp_path):
    fitted.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "probes.npz"]
    json.loads((tmp_path / "config.json").read_text())
    np.load(tmp_path / "probes.npz", allow_pickle=False)
    loaded = load_attack_class("attribute-probe").load(tmp_path)
    assert isinstance(loaded, AttributeProbe) and loaded.metrics() == fitted.metrics()
    _, vectors = heldout
    assert loaded.predict_attributes(vectors[:20]) == fitted.predict_attributes(vectors[:20])
    assert loaded.infer(vectors[:5]) == fitted.infer(vectors[:5])


def test_unfitted_probe_reports_nothing():
    probe = AttributeProbe()
    assert probe.kind == "probe"
    assert probe.infer(np.ones((2, 384), dtype=np.float32)) == [probe.infer(np.ones((1, 384)))[0]] * 2
    assert probe.predict_attributes(np.ones((2, 384))) == [{}, {}]
    with pytest.raises(ValueError, match="fit_authors"):
        probe.predict_authors(np.ones((1, 384)))


def test_scan_reports_inferred_attributes_masked(fitted, embedder):
    from tests.helpers import ListConnector
    from vdbguard.detectors.presidio import PresidioDetector
    from vdbguard.records import VectorRecord
    from vdbguard.scan import Scanner

    text = "Triage this morning: Mrs Aroha Ngata has a history of schizophrenia."
    records = [VectorRecord(id="note-1", vector=embedder.encode([text])[0])]
    for mask_pii, shown in ((True, "f*****"), (False, "female")):
        (finding,) = Scanner([fitted], PresidioDetector(), 384, mask_pii=mask_pii).scan(ListConnector(records)).findings
        sex = next(a for a in finding.inferred_attributes if a.attribute == "sex")
        assert (sex.attack, sex.value) == ("attribute-probe", shown)
        assert sex.probability >= sex.threshold == fitted.threshold
