"""Concept transforms (LEACE erasure, SPARSE mask + Mahalanobis noise): what each promises, measured.

LEACE is checked on real MiniLM embeddings of the labelled corpus (PERSON: "the text names a
person"); SPARSE's mask learning on synthetic vectors where the concept lives in known dimensions.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.linear_model import LogisticRegression

from vdbguard.errors import VdbguardError
from vdbguard.pii import PiiType
from vdbguard.transforms import transform_classes
from vdbguard.transforms.concepts import concept_labels, corpus_concept_set
from vdbguard.transforms.leace import LeaceErasure
from vdbguard.transforms.sparse import SparseMahalanobis, noise_scales

CONCEPT_DIMS = np.arange(5, 13)


def probe_accuracy(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray) -> float:
    """Held-out accuracy of a logistic probe trained afresh: the adaptive attacker."""
    return float(LogisticRegression(max_iter=2000, C=10.0).fit(train_x, train_y).score(test_x, test_y))


def synthetic_concept(n: int = 2000, d: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian rows whose binary concept shifts only dimensions 5-12."""
    rng = np.random.default_rng(seed)
    y = rng.integers(2, size=n)
    x = rng.standard_normal((n, d)).astype(np.float32)
    x[:, CONCEPT_DIMS] += (2 * y[:, None] - 1) * 0.6
    return x, y


@pytest.fixture(scope="module")
def person_set(embedder, model_cache: Path) -> tuple[np.ndarray, np.ndarray]:
    """600 synthetic sentences (about 190 name a person) embedded by MiniLM, cached under the test cache."""
    from vdbguard.corpus import synthetic_clean, synthetic_pii

    items = [*synthetic_pii(350, 0), *synthetic_clean(250, 0)]
    items = [items[i] for i in np.random.default_rng(0).permutation(len(items))]
    labels = concept_labels(items, "PERSON")
    digest = hashlib.sha256("\n".join(item.text for item in items).encode()).hexdigest()[:16]
    path = model_cache / "embeddings" / f"concepts-{embedder.fingerprint}-{digest}.npy"
    if path.exists():
        vectors = np.load(path)
    else:
        vectors = embedder.encode([item.text for item in items])
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npy", delete=False) as tmp:
            np.save(tmp, vectors)
        os.replace(tmp.name, path)
    return vectors, labels


# ---------------------------------------------------------------------------------------------- registry, labels


def test_entry_points_and_cli_list_show_both() -> None:
    from vdbguard.cli import main

    classes = transform_classes()
    assert classes["leace"] is LeaceErasure and classes["sparse"] is SparseMahalanobis
    assert LeaceErasure.default_strengths[-1] == 1.0 and list(LeaceErasure.default_strengths) == sorted(
        LeaceErasure.default_strengths
    )  # weakest first: a larger share of the correction is stronger, a larger ε is weaker
    assert list(SparseMahalanobis.default_strengths) == sorted(SparseMahalanobis.default_strengths, reverse=True)
    assert LeaceErasure.needs_fit and SparseMahalanobis.needs_fit
    out = CliRunner().invoke(main, ["transforms", "list"], terminal_width=200)
    assert out.exit_code == 0 and "leace" in out.output and "sparse" in out.output


def test_concept_labels_follow_the_corpus_ground_truth() -> None:
    from vdbguard.corpus import synthetic_clean, synthetic_pii

    items = [*synthetic_pii(60, 3), *synthetic_clean(30, 3)]
    person = concept_labels(items, "person")
    assert person.tolist() == [int(PiiType.PERSON in item.pii) for item in items]
    assert 0 < person.sum() < len(items)
    sex = concept_labels(items, "sex")
    assert set(sex.tolist()) <= {"none", "female", "male", None} and "none" in sex.tolist()
    with pytest.raises(VdbguardError, match="unknown concept"):
        concept_labels(items, "shoe size")


def test_corpus_concept_set_pairs_vectors_with_labels(embedder) -> None:
    vectors, labels = corpus_concept_set(embedder, "sex", n=24, seed=5)
    assert vectors.dtype == np.float32 and vectors.shape == (len(labels), embedder.dimension)
    assert None not in labels.tolist() and len(labels) <= 24


@pytest.mark.parametrize("cls", [LeaceErasure, SparseMahalanobis])
def test_fit_without_usable_labels_says_what_to_pass(cls: type) -> None:
    x, y = synthetic_concept(200)
    transform = cls(1.0, seed=0)
    with pytest.raises(VdbguardError) as err:
        transform.fit(x)
    assert "labels" in str(err.value) and "corpus_concept_set" in err.value.hint
    with pytest.raises(VdbguardError, match="single value"):
        transform.fit(x, np.zeros(len(x)))
    with pytest.raises(VdbguardError, match="one row per vector"):
        transform.fit(x, y[:10])
    with pytest.raises(VdbguardError, match="None"):
        transform.fit(x[:3], np.array(["a", None, "b"], dtype=object))
    with pytest.raises(VdbguardError, match="not fitted"):
        cls(1.0).apply(x)


# ---------------------------------------------------------------------------------------------- LEACE


def test_leace_blinds_a_fresh_person_probe_and_keeps_neighbours(person_set: tuple[np.ndarray, np.ndarray]) -> None:
    """Measured on 3,000 fit / 1,000 held-out corpus vectors: probe 0.95 → 0.684 (majority 0.685), neighbours 0.91."""
    x, y = person_set
    train, test = slice(0, 420), slice(420, None)
    majority = max(y[test].mean(), 1 - y[test].mean())
    before = probe_accuracy(x[train], y[train], x[test], y[test])
    assert before >= 0.88, before
    leace = LeaceErasure(1.0).fit(x[train], y[train])
    assert leace.rank == 1
    stored, asked = leace.apply(x), leace.apply_query(x[test])
    assert stored.dtype == np.float32 and stored.shape == x.shape
    np.testing.assert_allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-5)  # unit rows stay unit
    after = probe_accuracy(stored[train], y[train], stored[test], y[test])
    assert after <= majority + 0.05, (after, majority)

    def top10(queries: np.ndarray, docs: np.ndarray) -> np.ndarray:
        scores = queries @ docs.T
        np.fill_diagonal(scores, -np.inf)
        return np.argsort(-scores, axis=1)[:, :10]

    pairs = zip(top10(x[test], x[test]), top10(asked, stored[test]), strict=True)
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in pairs])
    assert overlap >= 0.75, overlap
    # below full strength the concept is only shrunk: a retrained probe still reads it
    half = LeaceErasure(0.5).fit(x[train], y[train])
    assert probe_accuracy(half.apply(x[train]), y[train], half.apply(x[test]), y[test]) >= before - 0.05


def test_leace_erases_several_categorical_columns_at_once() -> None:
    """A 3-class and a binary concept: rank 2 + 1, class means equal afterwards, probes at chance."""
    rng = np.random.default_rng(1)
    n, d = 3000, 32
    colour, flag = rng.integers(3, size=n), rng.integers(2, size=n)
    x = rng.standard_normal((n, d)).astype(np.float32)
    x[:, :3] += 1.5 * np.eye(3)[colour]
    x[:, 3] += 1.5 * flag
    labels = np.stack([np.array(["red", "green", "blue"])[colour], flag.astype(str)], axis=1)
    leace = LeaceErasure(1.0, renormalize=False).fit(x[:2000], labels[:2000])
    assert leace.rank == 3
    out = leace.apply(x)
    for codes in (colour, flag):
        means = np.stack([out[:2000][codes[:2000] == k].mean(axis=0) for k in np.unique(codes)])
        assert np.abs(means - means[0]).max() < 1e-3
        baseline = np.bincount(codes[2000:]).max() / 1000
        assert probe_accuracy(out[:2000], codes[:2000], out[2000:], codes[2000:]) <= baseline + 0.04
    # everything else is untouched: the change lives in a rank-3 subspace
    assert np.linalg.matrix_rank((out - x).astype(np.float64), tol=1e-4) == 3


# ---------------------------------------------------------------------------------------------- SPARSE


def test_sparse_mask_finds_the_concept_dimensions_and_noise_goes_there() -> None:
    x, y = synthetic_concept()
    sparse = SparseMahalanobis(50.0, seed=0, renormalize=False, steps=500).fit(x, y)
    np.testing.assert_array_equal(sparse.sensitive_dims, CONCEPT_DIMS)
    noise = sparse.apply(np.zeros((20000, 64), np.float32))
    assert noise.dtype == np.float32 and noise.shape == (20000, 64)
    std = noise.std(axis=0)
    others = np.setdiff1d(np.arange(64), CONCEPT_DIMS)
    assert std[CONCEPT_DIMS].min() > 5 * std[others].max()  # ratio 8 between masked and unmasked scales
    # the Mahalanobis mechanism: Σ^{-1/2}z is Laplace noise, ‖·‖ ~ Gamma(d, 1/ε), mean d/ε
    whitened = np.linalg.norm(noise.astype(np.float64) / sparse.scales, axis=1)
    assert abs(whitened.mean() - 64 / 50.0) < 4 * np.sqrt(64) / 50.0 / np.sqrt(len(noise))
    # same expected noise energy as the Laplace mechanism at the same ε: E‖z‖² = d(d+1)/ε²
    energy = np.sum(noise.astype(np.float64) ** 2, axis=1)
    assert energy.mean() == pytest.approx(64 * 65 / 50.0**2, rel=0.05)


def test_sparse_smaller_eps_is_noisier_and_seeds_reproduce() -> None:
    x, y = synthetic_concept(800, seed=2)
    a = SparseMahalanobis(200.0, seed=4, steps=200).fit(x, y)
    b = SparseMahalanobis(200.0, seed=4, steps=200).fit(x, y)
    np.testing.assert_array_equal(a.mask, b.mask)
    np.testing.assert_array_equal(a.apply(x), b.apply(x))
    zeros = np.zeros((4000, 64), np.float32)
    loose, tight = (SparseMahalanobis(eps, seed=0, renormalize=False) for eps in (20.0, 200.0))
    loose.mask = tight.mask = a.mask
    loose.scales = tight.scales = noise_scales(a.mask, 8.0)
    assert np.linalg.norm(loose.apply(zeros), axis=1).mean() > 5 * np.linalg.norm(tight.apply(zeros), axis=1).mean()
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(np.linalg.norm(a.apply(unit), axis=1), 1.0, atol=1e-5)
    with pytest.raises(VdbguardError, match="dimension"):
        a.apply(np.zeros((2, 10), np.float32))


def test_protect_cli_fits_leace_on_the_corpus_and_copies_erased_vectors(
    embedder, model_cache: Path, tmp_path: Path
) -> None:
    from click.testing import CliRunner
    from vdbguard.connectors.chroma import ChromaConnector

    from tests.helpers import make_chroma_store
    from vdbguard.cli import main

    source = make_chroma_store(tmp_path / "store", "notes", 40, 384, seed=3, metric="cosine")
    args = ["protect", "--connector", "chroma", "--path", str(tmp_path / "store"), "--collection", "notes"]
    args += ["--to-collection", "notes-erased", "--transform", "leace", "--strength", "1", "--concept", "PERSON"]
    args += ["--fail-on", "never"]  # random vectors: whatever the scans find
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with ChromaConnector(collection="notes-erased", path=tmp_path / "store") as connector:
        copied = {r.id: r.vector for batch in connector.iter_batches() for r in batch.records}
    expected = LeaceErasure(1.0).fit(*corpus_concept_set(embedder, "PERSON"))
    for record in source:
        np.testing.assert_allclose(copied[record.id], expected.apply(record.vector[None])[0], atol=1e-4)
