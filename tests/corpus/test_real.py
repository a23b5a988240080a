"""The real-text corpus: exact labels, sources split apart, the same frames on both sides of the boundary."""

from __future__ import annotations

import gzip
import importlib.resources
import json
import os
import subprocess
import sys

import pytest

from vdbguard.corpus import build_corpus
from vdbguard.corpus.real import (
    CALIBRATION_SOURCES,
    PERSON_FRAMES,
    REGISTER_SOURCES,
    TRAIN_SOURCES,
    real_corpus,
    real_sentences,
)
from vdbguard.pii import PROBED_TYPES, PiiType


@pytest.fixture(scope="module")
def train_items():
    return real_corpus(600, 600, seed=1)


def test_every_label_points_at_its_value_in_the_text(train_items) -> None:
    pii = [item for item in train_items if item.pii]
    assert len(pii) == 600
    for item in pii:
        assert item.pii == frozenset(item.values)
        assert all(value and value in item.text for values in item.values.values() for value in values), item
    assert {t for item in pii for t in item.pii} == set(PROBED_TYPES), "every type an attack learns"


def test_half_the_items_come_from_the_split_s_own_other_registers(train_items) -> None:
    calibration = real_corpus(600, 600, seed=1, split="calibration")
    for items, split in ((train_items, "train"), (calibration, "calibration")):
        from_registers = [item for item in items if item.source.startswith("real:")]
        assert {item.source.removeprefix("real:") for item in from_registers} == REGISTER_SOURCES[split], split
        assert 0.4 < sum(not item.pii for item in from_registers) / 600 < 0.6
        assert 0.25 < sum(bool(item.pii) for item in from_registers) / 600 < 0.5  # dates and diagnoses: none
        assert not any(item.pii & {PiiType.MEDICAL, PiiType.DATE_OF_BIRTH} for item in from_registers)
    assert not REGISTER_SOURCES["train"] & REGISTER_SOURCES["calibration"]
    attributed = [i for i in train_items if i.source == "real:fortunes-pypi" and " -- " in i.text and i.pii]
    assert sum(PiiType.PERSON in item.pii for item in attributed) > 20


def test_clean_items_carry_no_labels_and_share_the_person_frames(train_items) -> None:
    clean = [item for item in train_items if not item.pii]
    assert len(clean) == 600 and all(not item.values for item in clean)
    clean = [item for item in clean if item.source == "real-clean"]
    credit_words = {frame.split("{x}")[0].replace("{s}", "").strip() for frame in PERSON_FRAMES}
    credit_words.discard("")

    def framed(items):
        return sum(any(word in item.text for word in credit_words) for item in items)

    assert framed(clean) > 50
    assert framed([item for item in train_items if item.pii == {PiiType.PERSON}]) > 50


def test_splits_never_share_a_source_or_a_sentence() -> None:
    assert not TRAIN_SOURCES & CALIBRATION_SOURCES
    train, calibration = set(real_sentences("train")), set(real_sentences("calibration"))
    assert len(train) > 5000 and len(calibration) > 5000
    assert not train & calibration


def test_deterministic_per_seed() -> None:
    assert real_corpus(50, 50, seed=3) == real_corpus(50, 50, seed=3)
    assert [i.text for i in real_corpus(50, 50, seed=3)] != [i.text for i in real_corpus(50, 50, seed=4)]
    assert real_corpus(50, 50, seed=3, split="calibration") != real_corpus(50, 50, seed=3)


def test_the_same_in_every_process_whatever_its_hash_seed() -> None:
    # the fused verdict's cache is keyed on the calibration corpus: a corpus that changed per process refit it per scan
    script = (
        "from vdbguard.corpus import corpus_hash; from vdbguard.corpus.real import real_corpus; "
        "print(corpus_hash(real_corpus(200, 200, seed=0, split='calibration') + real_corpus(50, 50, seed=0)))"
    )
    hashes = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for hash_seed in (1, 2)
    }
    assert len(hashes) == 1


def test_the_shipped_text_names_nobody() -> None:
    """Credits ship as templates: every name and email replaced by a placeholder."""
    path = importlib.resources.files("vdbguard.data").joinpath("real_text.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as handle:  # type: ignore[arg-type]
        rows = [json.loads(line) for line in handle]
    assert {row["source"] for row in rows} == TRAIN_SOURCES | CALIBRATION_SOURCES
    assert all("@" not in row["text"] for row in rows)
    credits = [row["text"] for row in rows if row["kind"] == "credit"]
    assert credits and all("{name}" in text for text in credits)


def test_the_shipped_registers_cut_out_every_labelled_value() -> None:
    """Every labelled value, the names attribution lines credit included, is cut out to a slot."""
    path = importlib.resources.files("vdbguard.data").joinpath("real_registers.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as handle:  # type: ignore[arg-type]
        rows = [json.loads(line) for line in handle]
    assert {row["source"] for row in rows} == REGISTER_SOURCES["train"] | REGISTER_SOURCES["calibration"]
    attributions = [row for row in rows if row["register"].startswith("attribution")]
    assert len(attributions) > 1000
    for row in attributions:
        assert any(kind == "name" and row["frame"][:at].rstrip().endswith("--") for at, kind in row["slots"]), row
    assert all("@" not in row["frame"] for row in rows)


def test_build_corpus_adds_real_sentences_for_training_only() -> None:
    corpus = build_corpus(20, 20, seed=0, n_real_pii=30, n_real_clean=40)
    real = [item for item in corpus if item.source.startswith("real")]
    assert sum(bool(item.pii) for item in real) == 30 and sum(not item.pii for item in real) == 40
    with pytest.raises(ValueError, match="training only"):
        build_corpus(20, 20, seed=0, split="holdout", n_real_pii=5)
