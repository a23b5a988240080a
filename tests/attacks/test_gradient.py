"""White-box gradient inversion (Song & Raghunathan 2020 relaxed optimisation) against the real MiniLM."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vdbguard.attacks import load_attack_class
from vdbguard.attacks.gradient import GradientInversion
from vdbguard.errors import VdbguardError
from vdbguard.text import tokens

TARGETS = (
    "The patient was diagnosed with asthma and uses an inhaler every morning.",
    "Please send the invoice for the laptop repair to accounts payable.",
)


@pytest.fixture(scope="module")
def attack(embedder) -> GradientInversion:
    attack = GradientInversion(steps=60, lengths=(8,), refine_rounds=1, threads=1)
    attack.embedder = embedder
    return attack


@pytest.fixture(scope="module")
def inverted(attack, embedder):
    targets = embedder.encode(list(TARGETS))
    trainable = [p.requires_grad for p in embedder.model.parameters()]
    result = targets, attack.invert(targets), attack.infer(targets)
    # the embedder is shared with every other attack: inversion must leave it as it found it
    assert [p.requires_grad for p in embedder.model.parameters()] == trainable
    assert all(p.grad is None for p in embedder.model.parameters())
    return result


def test_registered_as_a_white_box_inversion():
    cls = load_attack_class("gradient")
    assert cls is GradientInversion
    assert cls.kind == "inversion" and cls.rank == 5


def test_recovery_lands_near_the_target(inverted, embedder):
    targets, raw, _ = inverted
    for (words, importance, cosine), target in zip(raw, targets, strict=True):
        assert words and len(words) == len(importance)
        recovered = embedder.encode([" ".join(words)])[0]
        # the cosine the attack reports is the re-embedded cosine of what it returns
        assert float(recovered @ target) == pytest.approx(cosine, abs=0.02)
        assert cosine > 0.5  # unrelated sentences sit around 0.0-0.2 with MiniLM


def test_recovers_topic_words(inverted):
    _, _, inferences = inverted
    recovered = [set(tokens(inference.recovered_text)) for inference in inferences]
    truth = [set(tokens(text)) for text in TARGETS]
    stop = {"the", "and", "an", "to", "for", "with", "was", "every"}
    hits = [len((r & t) - stop) for r, t in zip(recovered, truth, strict=True)]
    assert all(h >= 1 for h in hits), (recovered, hits)


def test_inference_scores_are_probabilities_of_a_word_mattering(inverted):
    _, _, inferences = inverted
    for inference in inferences:
        words = inference.recovered_text.split()
        assert len(words) == len(set(words))  # a bag: no repeats
        assert {w for w, _ in inference.recovered_tokens} == set(words)
        scores = [s for _, s in inference.recovered_tokens]
        assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
        assert not inference.type_scores and not inference.recovered_pii


def test_fit_trains_nothing_and_save_keeps_only_config(embedder, tmp_path):
    attack = GradientInversion(steps=7, lengths=(4, 6), seed=3)
    attack.fit([], np.zeros((0, 384), dtype=np.float32))
    attack.save(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]
    loaded = GradientInversion.load(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["lengths"] == [4, 6]
    assert (loaded.steps, loaded.lengths, loaded.seed) == (7, (4, 6), 3)


def test_a_scan_embeds_no_corpus_for_attacks_that_learn_nothing(embedder, tmp_path):
    """The profile's 20,000 training sentences take ~30 CPU-minutes to embed with mpnet: for zero-shot attacks
    that was the whole cost of their first use, paid for a fit() that does nothing."""
    from vdbguard.attacks.training import trained_attacks

    attacks = trained_attacks(embedder, ["gradient", "adversarial-decoding"], profile="small", cache_dir=tmp_path)
    assert [attack.name for attack in attacks] == ["gradient", "adversarial-decoding"]
    assert all(attack.zero_shot and attack.embedder is embedder for attack in attacks)
    assert not list(tmp_path.rglob("*.npy")), "a corpus was embedded"


def test_refuses_vectors_it_cannot_have_made(embedder):
    attack = GradientInversion(steps=2, lengths=(2,))
    with pytest.raises(VdbguardError, match="embedder bound"):
        attack.infer(np.ones((1, 384), dtype=np.float32))
    attack.embedder = embedder
    with pytest.raises(VdbguardError, match="768 dimensions"):
        attack.infer(np.ones((1, 768), dtype=np.float32))
    assert attack.infer(np.zeros((0, 384), dtype=np.float32)) == []
    with pytest.raises(ValueError):
        GradientInversion(steps=0)
