"""Saved fits: a plain .npz (no pickle) that reproduces the fitted transform exactly, and refuses to load elsewhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from vdbguard.errors import VdbguardError
from vdbguard.transforms import transform_classes
from vdbguard.transforms.base import Transform
from vdbguard.transforms.fitting import ensure_fitted, load_fit, read_fit, save_fit
from vdbguard.transforms.keyed import KEY_ENV
from vdbguard.transforms.leace import LeaceErasure
from vdbguard.transforms.quantize import Int8Quantize, PcaReduce, ProductQuantize
from vdbguard.transforms.rotation import SecretRotation
from vdbguard.transforms.sparse import SparseMahalanobis

DIM = 16
# One way to build each transform that needs a fit; built twice, they must agree once one has the other's fit.
FITTED: dict[str, Callable[[], Transform]] = {
    "int8": lambda: Int8Quantize(6),
    "pq": lambda: ProductQuantize(4),  # seed=None: a refit would give other codebooks
    "pca": lambda: PcaReduce(5, center=True),
    "leace": lambda: LeaceErasure(1.0),
    "sparse": lambda: SparseMahalanobis(50.0, seed=1, steps=30),  # the seed fixes the noise of both copies
}


@pytest.fixture(scope="module")
def sample() -> tuple[np.ndarray, np.ndarray]:
    """Vectors whose first coordinate carries a binary concept (the label), like a PII flag would."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 300)
    x = rng.standard_normal((300, DIM)).astype(np.float32)
    x[:, 0] += 2.0 * labels
    return x, labels


def test_every_transform_that_needs_a_fit_is_covered() -> None:
    assert sorted(FITTED) == sorted(name for name, cls in transform_classes().items() if cls.needs_fit)


@pytest.mark.parametrize("name", sorted(FITTED))
def test_a_saved_fit_reproduces_the_transform(name: str, sample: tuple[np.ndarray, np.ndarray], tmp_path: Path) -> None:
    x, labels = sample
    fitted = FITTED[name]().fit(x, labels)
    path = save_fit(fitted, tmp_path / f"{name}.npz")
    loaded = FITTED[name]()
    assert not loaded.fitted
    assert load_fit(loaded, path, dimension=DIM) is loaded and loaded.fitted
    np.testing.assert_array_equal(loaded.apply(x), fitted.apply(x))
    np.testing.assert_array_equal(loaded.apply_query(x[:5]), fitted.apply_query(x[:5]))
    assert loaded.params() == fitted.params()
    with np.load(path, allow_pickle=False) as data:  # plain arrays only: nothing to unpickle
        assert all(not data[k].dtype.hasobject for k in data.files)
    meta, arrays = read_fit(path)
    assert (meta["transform"], meta["dimension"], meta["params"]["strength"]) == (name, DIM, fitted.strength)
    assert sorted(arrays) == sorted(fitted.fit_state())


@pytest.mark.parametrize("name", sorted(FITTED))
def test_an_unfitted_transform_names_itself_and_how_to_fit(name: str, sample: tuple[np.ndarray, np.ndarray]) -> None:
    transform = FITTED[name]()
    with pytest.raises(VdbguardError, match=f"transform '{name}' is not fitted") as raised:
        transform.apply(sample[0])
    assert "fit(" in raised.value.hint and "load_fit" in raised.value.hint
    with pytest.raises(VdbguardError, match="not fitted"):
        save_fit(transform, Path("never-written.npz"))


def test_a_fit_is_refused_for_another_transform_strength_or_dimension(
    sample: tuple[np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    x = sample[0]
    path = save_fit(Int8Quantize(6).fit(x), tmp_path / "int8.npz")
    with pytest.raises(VdbguardError, match="for transform 'int8', not 'pca'"):
        load_fit(PcaReduce(5), path)
    other = Int8Quantize(4)
    with pytest.raises(VdbguardError, match="other settings: bits 6 in the file, 4 here"):
        load_fit(other, path)
    assert not other.fitted  # a refused file leaves the transform as it was
    with pytest.raises(VdbguardError, match="16-dimensional vectors, these have 32"):
        load_fit(Int8Quantize(6), path, dimension=32)
    with pytest.raises(VdbguardError, match="other settings: center"):
        load_fit(PcaReduce(5), save_fit(PcaReduce(5, center=True).fit(x), tmp_path / "pca.npz"))
    with pytest.raises(VdbguardError, match="wants 16 centroids in 4 subspaces"):
        load_fit(ProductQuantize(4, n_subspaces=4), save_fit(ProductQuantize(4).fit(x), tmp_path / "pq.npz"))


def test_a_keyed_fit_records_a_key_tag_never_the_key(tmp_path: Path) -> None:
    key, other = bytes(range(32)), bytes(range(1, 33))
    path = save_fit(SecretRotation(key=key), tmp_path / "rotation.npz")
    raw = path.read_bytes()
    assert key not in raw and key.hex().encode() not in raw
    assert load_fit(SecretRotation(key=key), path).params() == SecretRotation(key=key).params()
    with pytest.raises(VdbguardError, match="another key"):
        load_fit(SecretRotation(key=other), path)


def test_files_that_are_not_fits_are_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip file at all")
    with pytest.raises(VdbguardError, match="not a readable vdbguard fit file"):
        load_fit(Int8Quantize(6), garbage)
    pickled = tmp_path / "pickled.npz"
    meta = {"format": "vdbguard-fit", "version": 1, "transform": "int8", "params": {}, "dimension": None}
    np.savez(pickled, __vdbguard_fit__=np.array(json.dumps(meta)), scale=np.array([{"x": 1}], dtype=object))
    with pytest.raises(VdbguardError, match="not a readable vdbguard fit file"):  # never unpickled
        load_fit(Int8Quantize(6), pickled)


@pytest.mark.parametrize("name", sorted(n for n, cls in transform_classes().items() if cls.needs_key))
def test_a_keyed_transform_without_a_key_names_itself_and_the_variable(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    cls = transform_classes()[name]
    with pytest.raises(VdbguardError, match=f"transform '{name}' needs a secret key") as raised:
        cls(strength=cls.default_strengths[0])
    assert KEY_ENV in raised.value.hint


def test_ensure_fitted_loads_else_fits_and_saves_else_refuses(
    sample: tuple[np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    x, labels = sample
    path = tmp_path / "pq.npz"
    with pytest.raises(VdbguardError, match="nothing to fit from"):
        ensure_fitted(ProductQuantize(4), path)
    first = ensure_fitted(ProductQuantize(4), path, x)
    assert path.exists()
    second = ensure_fitted(ProductQuantize(4), path)  # loaded, not refitted (seed=None would give other codebooks)
    np.testing.assert_array_equal(second.apply(x), first.apply(x))
    with pytest.raises(VdbguardError, match="needs labels") as raised:
        ensure_fitted(LeaceErasure(1.0), tmp_path / "leace.npz", x)
    assert "corpus_concept_set" in raised.value.hint
    fitted = LeaceErasure(1.0).fit(x, labels)
    ensure_fitted(fitted, tmp_path / "leace.npz")  # fitted elsewhere: saved where asked
    np.testing.assert_array_equal(ensure_fitted(LeaceErasure(1.0), tmp_path / "leace.npz").apply(x), fitted.apply(x))
