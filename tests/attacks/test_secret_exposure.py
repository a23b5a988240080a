"""Secret exposure (Carlini et al. 2019) on real MiniLM vectors: high for the vector made from the secret's text,
about zero for an unrelated vector or one made from the same text with another secret."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from vdbguard.attacks.secret_exposure import (
    SECRET_TYPES,
    DigitSpace,
    SecretExposureAttack,
    _rank_from_scores,
    exposure,
    find_secrets,
)
from vdbguard.corpus import synthetic_clean, synthetic_pii
from vdbguard.pii import PiiType

TEXT = "KYC review: Pamela Russell, DOB 3/12/74, SSN 519-44-1836."
SECRET = "519-44-1836"


def test_find_secrets_types_each_value() -> None:
    text = (
        "Call Jo on (331) 491-6076 about card 4983-9092-7179-6323; SSN 214-33-6170, acct 75-2048-7468050, "
        "IBAN GB48PYSK96559844538277. Born 1983-03-05, order 12345, ticket #4821."
    )
    assert find_secrets(text) == [
        (PiiType.PHONE, "(331) 491-6076"),
        (PiiType.CREDIT_CARD, "4983-9092-7179-6323"),
        (PiiType.SSN, "214-33-6170"),
        (PiiType.ACCOUNT_NUMBER, "75-2048-7468050"),
        (PiiType.ACCOUNT_NUMBER, "GB48PYSK96559844538277"),
    ]


def test_find_secrets_agrees_with_corpus_labels() -> None:
    items = synthetic_pii(600, seed=21)
    for pii_type in SECRET_TYPES:
        truth = [item for item in items if pii_type in item.pii]
        found = [all((pii_type, v) in find_secrets(item.text) for v in item.values[pii_type]) for item in truth]
        assert len(truth) >= 10 and np.mean(found) >= 0.95, (pii_type, np.mean(found))
    assert not any(find_secrets(item.text) for item in synthetic_clean(300, seed=21))


def test_digit_space_keeps_the_secret_shape() -> None:
    space = DigitSpace.from_secret(SECRET)
    assert space.size == 10**9 and math.isclose(space.log2_size, 9 * math.log2(10))
    samples = space.sample(np.random.default_rng(0), 50, exclude=SECRET)
    assert len(set(samples)) == 50 and SECRET not in samples
    assert all(len(s) == len(SECRET) and s[3] == s[6] == "-" for s in samples)
    with pytest.raises(ValueError):
        DigitSpace.from_secret("no digits")


def test_rank_estimate_samples_then_extrapolates() -> None:
    scores = np.random.default_rng(0).normal(0.0, 1.0, 2000)
    log2_space = 9 * math.log2(10)
    middle = _rank_from_scores(0.0, scores, log2_space)
    assert middle.method == "sampled" and 0.5 < middle.bits < 1.5  # rank ~ |R| / 2
    top = _rank_from_scores(8.0, scores, log2_space)
    assert top.method == "skewnorm" and top.beaten_by == 0
    # a normal tail at 8 sigma is ~2^-50, so the secret ranks first in the whole space
    assert top.bits > log2_space - 0.5 and top.rank_estimate < 2
    near = _rank_from_scores(float(scores.max()) + 1e-6, scores, log2_space)
    assert near.method == "skewnorm" and math.log2(2000) - 1 < near.bits < top.bits


def test_exposure_is_high_for_the_own_vector_and_low_otherwise(embedder) -> None:
    own = embedder.encode([TEXT])[0]
    result = exposure(embedder, own, TEXT, SECRET, samples=64)
    assert result.method == "skewnorm" and result.beaten_by == 0
    assert result.bits > 0.75 * result.log2_space, result

    # A vector that says nothing about the secret puts it at a uniform rank: ~1.4 bits on average. Any one
    # secret can still beat every sample by chance (p = 1/33 here), so look at the median of five.
    unrelated = embedder.encode(
        [
            "The weather was lovely on Sunday, so we walked down to the lake.",
            "Please ring the front desk about the broken printer.",
            "Shipment 4821 will be delivered to the warehouse next Tuesday.",
            "What is your favourite book?",
            "Employee record: the customer, DOB not on file, SSN not provided.",
        ]
    )
    bits = [exposure(embedder, v, TEXT, SECRET, samples=32, seed=i).bits for i, v in enumerate(unrelated)]
    assert np.median(bits) < 4, bits

    # same context, another SSN: the vector says nothing about *this* secret
    others = ["230-87-4415", "771-02-9954", "118-63-2207", "402-19-5580", "655-41-0736"]
    other_vectors = embedder.encode([TEXT.replace(SECRET, other) for other in others])
    bits = [exposure(embedder, v, TEXT, SECRET, samples=32, seed=i).bits for i, v in enumerate(other_vectors)]
    assert np.median(bits) < 4, bits


def test_attack_reports_bits_only_for_rows_with_known_secrets(embedder, tmp_path: Path) -> None:
    texts = [TEXT, "Please ring Jo back about the renewal terms.", None]
    vectors = embedder.encode([TEXT, texts[1], "anything"])
    attack = SecretExposureAttack(samples=32)
    attack.embedder = embedder
    attack.fit(synthetic_pii(200, seed=22), np.zeros((200, vectors.shape[1]), dtype=np.float32))
    assert attack.metrics()["finder_recall_SSN"] >= 0.95
    with_bits, no_secret, no_text = attack.infer(vectors, known_texts=texts)
    assert set(with_bits.exposure_bits) == {PiiType.SSN}
    assert with_bits.exposure_bits[PiiType.SSN] >= attack.threshold
    assert not no_secret.exposure_bits and not no_text.exposure_bits
    assert all(not i.exposure_bits for i in attack.infer(vectors))  # no owner text, nothing to rank
    assert attack.kind == "probe"

    attack.save(tmp_path / "model")
    loaded = SecretExposureAttack.load(tmp_path / "model")
    assert (loaded.threshold, loaded.samples, loaded.metrics()) == (attack.threshold, attack.samples, attack.metrics())
