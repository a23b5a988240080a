"""Chains of transforms: names, order, the write path and a fit that survives a save."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vdbguard.errors import VdbguardError
from vdbguard.transforms.chain import Chain, build_transform, sweep
from vdbguard.transforms.fitting import load_fit, save_fit
from vdbguard.transforms.gaussian import GaussianNoise


def _unit_rows(n: int, d: int = 32, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_chain_is_named_by_its_parts_and_the_strength_goes_to_the_last() -> None:
    chain = build_transform("redact+gaussian", 0.05, seed=0)
    assert isinstance(chain, Chain) and chain.name == "redact+gaussian"
    assert [p.name for p in chain.text_parts] == ["redact"] and chain.vector_parts[0].strength == 0.05
    assert chain.text_side and not chain.changes_space
    assert [t.strength for t in sweep("leace:1+gaussian")] == list(build_transform("gaussian", 0.1).default_strengths)
    assert [t.strength for t in sweep("redact+gaussian:0.2")] == [0.2]
    unnamed = build_transform("gaussian+pq", 4)
    assert isinstance(unnamed, Chain) and unnamed.parts[0].strength == GaussianNoise.default_strength


def test_every_transform_has_a_default_strength_it_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    """`protect --transform NAME` without --strength, and a chain's unnamed parts, take each class's own default."""
    from vdbguard.transforms import transform_classes

    monkeypatch.setenv("VDBGUARD_TRANSFORM_KEY", "k" * 32)
    for name, cls in transform_classes().items():
        transform = build_transform(name)
        assert transform.strength == cls.default_strength, name
        assert cls.default_strength in cls.default_strengths or not cls.default_strengths, name
    assert build_transform("redact").strength == 0.4, "as the docs use it"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("gaussian:0.1+redact:0.4", "must come first"),
        ("gaussian:0.1+nosuch", "unknown"),
    ],
)
def test_a_chain_that_cannot_work_says_why(name: str, problem: str) -> None:
    with pytest.raises(VdbguardError, match=problem):
        build_transform(name, 8)


def test_the_embedder_sees_only_redacted_text_and_the_vector_stage_still_runs() -> None:
    seen: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return _unit_rows(len(texts))

    chain = build_transform("redact+gaussian", 0.1, seed=0)
    vectors = chain.write_path(["Call Mary Johnson on mary.johnson@example.com tomorrow."], embed)
    assert "Johnson" not in seen[0] and "<" in seen[0]
    assert not np.allclose(vectors, _unit_rows(1))  # the noise stage ran after the embedder


def test_a_chain_fit_survives_a_save_and_load(tmp_path: Path) -> None:
    sample = _unit_rows(400)
    fitted = build_transform("gaussian:0.01+pq", 8, seed=0).fit(sample)
    save_fit(fitted, tmp_path / "fit.npz")
    fresh = build_transform("gaussian:0.01+pq", 8, seed=0)
    assert not fresh.fitted
    load_fit(fresh, tmp_path / "fit.npz")
    probe = _unit_rows(5, seed=1)
    assert np.array_equal(fresh.vector_parts[-1].apply(probe), fitted.vector_parts[-1].apply(probe))
