"""Keyed transforms: search still works with the right key, fails with a wrong one, and what a known-pair attack gets.

The alignment attack (ALGEN's first step) fits a linear map from ~1,000 known (plaintext,
ciphertext) pairs and applies it to ciphertexts it has not seen. Against a plain secret rotation
it recovers the plaintext exactly; against Scale-And-Perturb it recovers the plaintext plus the
ball noise, so what SAP buys is what its noise buys. Run with ``-s`` to see the table.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from tests.transforms.test_transforms import clustered, mean_cosine, recall_at_k, sentence_embeddings, unit_rows
from vdbguard.errors import VdbguardError
from vdbguard.transforms.dcpe import DcpeScaleAndPerturb
from vdbguard.transforms.keyed import KEY_ENV, alignment_attack, load_key
from vdbguard.transforms.rotation import SecretRotation

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


@pytest.fixture(scope="module")
def minilm(embedder, model_cache: Path) -> tuple[np.ndarray, np.ndarray]:
    return sentence_embeddings(embedder, model_cache)


def l2_top_k(queries: np.ndarray, docs: np.ndarray, k: int = 10) -> np.ndarray:
    """Nearest documents by Euclidean distance, the metric SAP is defined for."""
    d2 = (queries * queries).sum(1)[:, None] - 2 * queries @ docs.T + (docs * docs).sum(1)[None, :]
    return np.argsort(d2, axis=1, kind="stable")[:, :k]


# ---------------------------------------------------------------------------------------------- keys


def test_a_missing_key_says_how_to_set_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(VdbguardError) as info:
        DcpeScaleAndPerturb(0.5)
    assert KEY_ENV in str(info.value) and "token_hex" in str(info.value)
    with pytest.raises(VdbguardError, match="at least 32"):
        SecretRotation(key=b"short")


def test_key_sources_agree_and_the_key_never_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    x = unit_rows(20, 48, seed=0)
    monkeypatch.setenv(KEY_ENV, KEY.hex())
    from_env = SecretRotation()
    np.testing.assert_array_equal(from_env.apply(x), SecretRotation(key=KEY).apply(x))
    np.testing.assert_array_equal(from_env.apply(x), SecretRotation(key=KEY.hex()).apply(x))
    assert (
        load_key("a passphrase that is at least thirty-two bytes long")
        == b"a passphrase that is at least thirty-two bytes long"
    )
    for transform in (from_env, DcpeScaleAndPerturb(0.5, key=KEY)):
        shown = f"{transform.params()} {transform!r}"
        assert KEY.hex() not in shown and str(KEY) not in shown
        assert "key_id" in transform.params()
    assert SecretRotation(key=KEY).params()["key_id"] != SecretRotation(key=OTHER_KEY).params()["key_id"]


# ---------------------------------------------------------------------------------------------- SAP


def test_sap_queries_are_scaled_and_shuffled_without_noise() -> None:
    x = unit_rows(30, 64, seed=1)
    sap = DcpeScaleAndPerturb(1.0, seed=0, key=KEY)
    q = sap.apply_query(x)
    np.testing.assert_array_equal(q, sap.apply_query(x))  # no noise on the query side
    ratio = np.linalg.norm(q[0] - q[1]) / np.linalg.norm(x[0] - x[1])
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), ratio, rtol=1e-5)  # one secret scale s ≥ 1
    assert ratio >= 1.0
    assert sorted(np.round(q[0] / ratio, 6)) == sorted(np.round(x[0], 6))  # the same coordinates, shuffled
    noise = np.linalg.norm(sap.apply(x) - q, axis=1) / ratio
    assert np.all(noise <= 1.0 / 4 + 1e-5) and noise.mean() > 0.2  # inside the ball of radius β/4, near its rim


@pytest.mark.parametrize("rotate", [False, True])
def test_sap_is_beta_distance_comparison_preserving(rotate: bool) -> None:
    """Fuchsbauer et al.'s guarantee: ‖x-y‖ < ‖x-z‖ - β ⇒ the ciphertexts compare the same way, always."""
    beta = 0.3
    x = clustered(3000, 64, 5, 0.06, seed=2)  # near pairs (same cluster) and far ones, so many triples qualify
    sap = DcpeScaleAndPerturb(beta, seed=0, key=KEY, rotate=rotate)
    c = sap.apply(x)
    rng = np.random.default_rng(0)
    i, j, k = rng.integers(0, 3000, size=(3, 20000))
    plain_near = np.linalg.norm(x[i] - x[j], axis=1) < np.linalg.norm(x[i] - x[k], axis=1) - beta
    cipher_near = np.linalg.norm(c[i] - c[j], axis=1) < np.linalg.norm(c[i] - c[k], axis=1)
    assert plain_near.sum() > 1000
    assert np.all(cipher_near[plain_near])
    # closer calls than β are not promised, and the noise does flip some of them
    close = np.abs(np.linalg.norm(x[i] - x[j], axis=1) - np.linalg.norm(x[i] - x[k], axis=1)) < 0.02
    plain_close = (np.linalg.norm(x[i] - x[j], axis=1) < np.linalg.norm(x[i] - x[k], axis=1))[close]
    assert np.sum(plain_close != cipher_near[close]) > 0


def test_sap_keeps_minilm_neighbours_only_with_the_right_key(minilm: tuple[np.ndarray, np.ndarray]) -> None:
    docs, queries = minilm
    truth = l2_top_k(queries, docs)
    sap = DcpeScaleAndPerturb(0.25, seed=0, key=KEY)
    stored = sap.apply(docs)
    right = recall_at_k(truth, l2_top_k(sap.apply_query(queries), stored))
    wrong = recall_at_k(truth, l2_top_k(DcpeScaleAndPerturb(0.25, key=OTHER_KEY).apply_query(queries), stored))
    plain = recall_at_k(truth, l2_top_k(queries, stored))  # a query that skipped the transform
    assert right >= 0.8, right  # measured 0.97
    assert wrong < 0.1 and plain < 0.1, (wrong, plain)
    rotated = DcpeScaleAndPerturb(0.25, seed=0, key=KEY, rotate=True)
    assert recall_at_k(truth, l2_top_k(rotated.apply_query(queries), rotated.apply(docs))) >= 0.8


def test_sap_is_deterministic_per_key_and_seed() -> None:
    x = unit_rows(40, 32, seed=3)
    a = DcpeScaleAndPerturb(1.0, seed=9, key=KEY).apply(x)
    np.testing.assert_array_equal(a, DcpeScaleAndPerturb(1.0, seed=9, key=KEY).apply(x))
    assert not np.allclose(a, DcpeScaleAndPerturb(1.0, seed=10, key=KEY).apply(x))
    assert not np.allclose(a, DcpeScaleAndPerturb(1.0, seed=9, key=OTHER_KEY).apply(x))
    fresh = DcpeScaleAndPerturb(1.0, key=KEY)  # no seed: fresh noise, same key map
    np.testing.assert_array_equal(fresh.apply_query(x), DcpeScaleAndPerturb(1.0, seed=9, key=KEY).apply_query(x))


# ---------------------------------------------------------------------------------------------- the alignment attack


def test_secret_rotation_keeps_search_and_falls_to_known_pairs(minilm: tuple[np.ndarray, np.ndarray]) -> None:
    """~1,000 known pairs undo a secret rotation: least squares and Procrustes both recover cosine ≈ 1.0."""
    known, unseen = minilm
    rot = SecretRotation(key=KEY)
    np.testing.assert_allclose(rot.apply(unseen) @ rot.apply_query(known).T, unseen @ known.T, atol=1e-5)
    for method in ("lstsq", "procrustes"):
        recovered = alignment_attack(known, rot.apply(known), rot.apply(unseen), method=method)
        assert mean_cosine(recovered, unseen) > 0.999, method
    # far fewer pairs than dimensions leave the map underdetermined: the attack needs about d pairs
    few = alignment_attack(known[:50], rot.apply(known[:50]), rot.apply(unseen), method="lstsq")
    assert mean_cosine(few, unseen) < 0.9


def test_what_sap_noise_buys_against_alignment(minilm: tuple[np.ndarray, np.ndarray]) -> None:
    """The attacker's recovered cosine falls as β grows, and never below what the noise alone leaves.

    β = 0 (scale + shuffle, no noise) is as broken as the rotation. With noise the attack recovers
    x + u/s: about the cosine of the plaintext to its own noisy copy ("noise bound"). Search recall
    falls with β too; read the two columns together.
    """
    known, unseen = minilm
    truth = l2_top_k(unseen, known)
    rows = []
    for beta in (0.0, 0.25, 0.5, 1.0, 2.0, 4.0):
        sap = DcpeScaleAndPerturb(beta, seed=0, key=KEY)
        stored = sap.apply(known)
        recall = recall_at_k(truth, l2_top_k(sap.apply_query(unseen), stored))
        target = sap.apply(unseen)
        attack = mean_cosine(alignment_attack(known, stored, target, method="procrustes"), unseen)
        bound = mean_cosine(unseen, target @ np.linalg.pinv(sap.apply_query(np.eye(known.shape[1], dtype=np.float32))))
        rows.append((beta, recall, attack, bound))
    print("\n| β | recall@10 (right key) | attack cosine (1,000 pairs, Procrustes) | noise bound |")
    print("|---|---|---|---|")
    for beta, recall, attack, bound in rows:
        print(f"| {beta} | {recall:.3f} | {attack:.4f} | {bound:.4f} |")
    attacks = [r[2] for r in rows]
    assert attacks[0] > 0.999  # no noise: the key alone protects nothing
    assert all(a > b for a, b in pairwise(attacks)), attacks
    for _, _, attack, bound in rows:
        assert attack <= bound + 0.01  # the attack cannot beat knowing the key
        assert attack >= bound - 0.1  # and gets most of the way there
    assert rows[3][1] >= 0.8 and rows[3][2] > 0.9  # β = 1: search still works, and so does the attack
