"""Lossy compression as a defence: scalar int8, binary, product quantization and PCA reduction.

Every inversion attack reads the fine detail of a vector; compression throws detail away while
keeping what nearest-neighbour search needs. Vector stores ship these codecs for speed and memory,
so a frontier of "how much does the attack lose vs. how much recall do we lose" is free to take.
Quantization is not a privacy mechanism: it has no formal guarantee, and an attacker who trains on
quantized vectors recovers part of what was lost. Measure it, don't assume it.

* :class:`Int8Quantize`: symmetric scalar quantization with a stored scale (per dimension or
  global), as in the int8 / scalar quantization of Qdrant, Weaviate, Milvus and FAISS' SQ8.
* :class:`BinaryQuantize`: one sign bit per dimension (binary quantization in Qdrant / Weaviate).
* :class:`ProductQuantize`: Jégou, Douze & Schmid, "Product Quantization for Nearest Neighbor
  Search" (TPAMI 2011): split dimensions into subspaces, k-means a codebook per subspace, store
  one centroid id per subspace.
* :class:`PcaReduce`: keep the top-k principal directions; the stored dimension changes to k.

Queries: int8, binary and PQ store reconstructions in the original space, so ``apply_query`` is the
identity (asymmetric distance computation: an unquantized query against quantized documents
ranks better than quantizing both). PCA changes the space, so ``apply_query`` projects too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.transforms.base import Transform, not_fitted_error
from vdbguard.transforms.gaussian import as_rows

_CHUNK = 16384  # rows per block when a step needs a (rows × centroids) matrix
_ENCODE_BLOCK = 2048  # rows per block when encoding: the (rows × 256) scores stay in cache


def _check_dim(rows: np.ndarray, dim: int, name: str) -> None:
    if rows.shape[1] != dim:
        raise VdbguardError(f"{name}: vectors have dimension {rows.shape[1]}, the transform was fitted on {dim}")


def _integer_strength(strength: float, low: int, high: int, meaning: str) -> int:
    value = float(strength)
    if not value.is_integer() or not low <= value <= high:
        raise VdbguardError(f"{meaning} must be a whole number from {low} to {high}, got {strength!r}")
    return int(value)


class Int8Quantize(Transform):
    """Symmetric scalar quantization to ``bits`` (2–8) per coordinate; codes always fit in int8.

    ``fit`` records the largest absolute value per dimension (``per_dimension=True``) or overall;
    scale = max|x| / (2^(bits-1) - 1). ``apply`` returns the dequantized float32 reconstruction
    ``codes · scale``, so stores that want float vectors still work; :meth:`encode` gives the int8
    codes and scale for stores that take int8. For values inside the fitted range the error per
    coordinate is at most scale / 2; values outside it are clipped.
    """

    name: ClassVar[str] = "int8"
    description: ClassVar[str] = "scalar quantization with a fitted per-dimension scale; stores the dequantized vector"
    strength_meaning: ClassVar[str] = "bits per coordinate, 2-8 (fewer is stronger; 8 is plain int8)"
    needs_fit: ClassVar[bool] = True
    default_strength: ClassVar[float] = 8.0
    default_strengths: ClassVar[tuple[float, ...]] = (8.0, 6.0, 4.0, 3.0, 2.0)

    def __init__(self, strength: float | None = None, seed: int | None = None, per_dimension: bool = True) -> None:
        super().__init__(strength, seed)
        self.bits = _integer_strength(self.strength, 2, 8, "bits per coordinate")
        self.per_dimension = per_dimension
        self.levels = 2 ** (self.bits - 1) - 1  # codes lie in [-levels, levels]
        self.scale: np.ndarray | None = None

    def fit(self, vectors: np.ndarray, labels: np.ndarray | None = None) -> Int8Quantize:
        rows = as_rows(vectors)
        if not len(rows):
            raise VdbguardError("int8: fit needs at least one sample vector")
        peak = np.abs(rows).max(axis=0) if self.per_dimension else np.full(rows.shape[1], np.abs(rows).max())
        peak = np.where(peak > 0, peak, 1.0)  # a constant-zero dimension: any scale reconstructs it
        self.scale = (peak / self.levels).astype(np.float32)
        return self

    def _levels(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The codes as float32 (rounded and clipped to ±levels), and the fitted scale they multiply."""
        if self.scale is None:
            raise not_fitted_error(self)
        rows = as_rows(vectors)
        _check_dim(rows, self.scale.size, self.name)
        scaled = rows / self.scale
        np.rint(scaled, out=scaled)
        np.clip(scaled, -self.levels, self.levels, out=scaled)
        return scaled, self.scale

    def encode(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, scale)``: int8 codes of shape (n, d) and the float32 scale, (d,) or a 1-element array."""
        scaled, scale = self._levels(vectors)
        return scaled.astype(np.int8), scale if self.per_dimension else scale[:1].copy()

    def decode(self, codes: np.ndarray) -> np.ndarray:
        if self.scale is None:
            raise not_fitted_error(self)
        return codes.astype(np.float32) * self.scale

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        out, scale = self._levels(vectors)  # rescaled in float32: the int8 round trip is skipped
        out *= scale
        return out

    def params(self) -> dict[str, Any]:
        return {"strength": self.strength, "bits": self.bits, "per_dimension": self.per_dimension}

    def fit_state(self) -> dict[str, np.ndarray]:
        return {} if self.scale is None else {"scale": self.scale}

    def load_fit_state(self, state: Mapping[str, np.ndarray]) -> Int8Quantize:
        self.scale = np.asarray(state["scale"], dtype=np.float32)
        return self

    @property
    def fit_dim(self) -> int | None:
        return None if self.scale is None else int(self.scale.size)


class BinaryQuantize(Transform):
    """One sign bit per coordinate: stores ``sign(x) / √d`` (unit length; zero counts as positive).

    There is no strength knob; ``strength`` must be 1. :meth:`encode` gives the packed bits
    (``np.packbits``, big-endian within each byte) for stores with a native binary type.
    """

    name: ClassVar[str] = "binary"
    description: ClassVar[str] = "binary quantization: sign of each coordinate, stored as ±1/√d"
    strength_meaning: ClassVar[str] = "none: sign quantization has no knob (always 1)"
    default_strength: ClassVar[float] = 1.0
    default_strengths: ClassVar[tuple[float, ...]] = (1.0,)

    def __init__(self, strength: float | None = None, seed: int | None = None) -> None:
        if strength is not None and float(strength) != 1.0:
            raise VdbguardError(f"binary quantization has no strength knob; got {strength!r}", "use strength 1")
        super().__init__(1.0, seed)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        rows = as_rows(vectors)
        value = np.float32(1.0 / np.sqrt(max(rows.shape[1], 1)))
        return np.where(rows >= 0, value, -value)

    def encode(self, vectors: np.ndarray) -> np.ndarray:
        """Packed sign bits, uint8 of shape (n, ceil(d / 8)); bit 1 means the coordinate was >= 0."""
        return np.packbits(as_rows(vectors) >= 0, axis=1)

    @staticmethod
    def decode(bits: np.ndarray, dim: int) -> np.ndarray:
        signs = np.unpackbits(bits, axis=1, count=dim).astype(np.float32) * 2.0 - 1.0
        return signs / np.float32(np.sqrt(dim))


def _single_threaded_blas():
    """PQ multiplies thin matrices (rows × ~8 by ~8 × 256): BLAS threads only add hand-off cost there,
    and on a loaded machine their spin-waiting made these products 20× slower. One thread is faster."""
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency

    return threadpool_limits(limits=1, user_api="blas")


def kmeans(points: np.ndarray, k: int, rng: np.random.Generator, iterations: int) -> np.ndarray:
    """Lloyd's k-means with k-means++ seeding (Arthur & Vassilvitskii 2007), in numpy; returns (k, dim) float32.

    A PQ codebook is many tiny k-means problems (about 8 dimensions, 256 centroids); this loop
    runs them with single-threaded BLAS and no per-call set-up. Empty clusters are re-seeded at the
    points farthest from their centroid.
    """
    n = len(points)
    centroids = np.empty((k, points.shape[1]), dtype=np.float32)
    centroids[0] = points[rng.integers(n)]
    diff = points - centroids[0]
    closest = np.einsum("ij,ij->i", diff, diff).astype(np.float64)
    for j in range(1, k):
        total = float(closest.sum())
        pick = int(rng.choice(n, p=closest / total)) if total > 0 else int(rng.integers(n))
        centroids[j] = points[pick]
        diff = points - centroids[j]
        np.minimum(closest, np.einsum("ij,ij->i", diff, diff), out=closest)
    for _ in range(iterations):
        assign = np.concatenate(
            [
                _nearest(points[s : s + _CHUNK], centroids, 0.5 * np.einsum("ij,ij->i", centroids, centroids))
                for s in range(0, n, _CHUNK)
            ]
        )
        counts = np.bincount(assign, minlength=k)
        sums = np.stack([np.bincount(assign, weights=points[:, c], minlength=k) for c in range(points.shape[1])], 1)
        empty = counts == 0
        updated = (sums[~empty] / counts[~empty, None]).astype(np.float32)
        moved = not np.allclose(updated, centroids[~empty])
        centroids[~empty] = updated
        if empty.any():
            residual = points - centroids[assign]
            far = np.argsort(-np.einsum("ij,ij->i", residual, residual))[: int(empty.sum())]
            centroids[empty] = points[far]
            moved = True
        if not moved:
            break
    return centroids


def _nearest(block: np.ndarray, codebook: np.ndarray, half_norms: np.ndarray) -> np.ndarray:
    """Index of the nearest centroid per row: argmin ‖c‖²/2 - x·c (‖x‖² does not change the argmin)."""
    scores = block @ codebook.T
    np.subtract(half_norms, scores, out=scores)
    return scores.argmin(axis=1)


class ProductQuantize(Transform):
    """Product quantization (Jégou et al. 2011): one k-means centroid id per subspace, stored as its reconstruction.

    ``strength`` is the bits per subvector (codebook size 2^bits, 1–8 so a code fits in a byte);
    ``n_subspaces`` fixes how the dimensions are split (default d // 8, i.e. subvectors of about
    8 coordinates; uneven splits are allowed). Codebooks are fitted by k-means (k-means++ seeding)
    on at most ``max_fit_vectors`` sample rows. Bits per vector = n_subspaces × bits; ``apply``
    stores the float32 reconstruction (every stored subvector is one of 2^bits shared centroids),
    :meth:`encode` gives the compact codes.
    """

    name: ClassVar[str] = "pq"
    description: ClassVar[str] = "product quantization: per-subspace k-means codebooks, stores the reconstruction"
    strength_meaning: ClassVar[str] = "bits per subvector, 1-8: codebook size 2^bits (fewer is stronger)"
    needs_fit: ClassVar[bool] = True
    default_strength: ClassVar[float] = 8.0
    default_strengths: ClassVar[tuple[float, ...]] = (8.0, 6.0, 4.0, 2.0, 1.0)

    def __init__(
        self,
        strength: float | None = None,
        seed: int | None = None,
        n_subspaces: int | None = None,
        max_fit_vectors: int = 20000,
        kmeans_iterations: int = 25,
    ) -> None:
        super().__init__(strength, seed)
        self.bits = _integer_strength(self.strength, 1, 8, "bits per subvector")
        self.n_subspaces = n_subspaces
        self.max_fit_vectors = max_fit_vectors
        self.kmeans_iterations = kmeans_iterations
        self.splits: list[np.ndarray] = []  # column indices of each subspace
        self.codebooks: list[np.ndarray] = []  # (2^bits, sub_dim) float32 each

    def fit(self, vectors: np.ndarray, labels: np.ndarray | None = None) -> ProductQuantize:
        rows = as_rows(vectors)
        n, d = rows.shape
        k = 2**self.bits
        m = self.n_subspaces or max(1, d // 8)
        if not 1 <= m <= d:
            raise VdbguardError(f"pq: n_subspaces must be between 1 and the dimension {d}, got {m}")
        if n < k:
            raise VdbguardError(f"pq: {k} centroids need at least {k} sample vectors, got {n}", "fit on more vectors")
        rng = np.random.default_rng(self.seed)
        if n > self.max_fit_vectors:
            rows = rows[rng.choice(n, self.max_fit_vectors, replace=False)]
        self.splits = np.array_split(np.arange(d), m)
        with _single_threaded_blas():
            self.codebooks = [
                kmeans(np.ascontiguousarray(rows[:, cols]), k, rng, self.kmeans_iterations) for cols in self.splits
            ]
        return self

    def _dim(self) -> int:
        return sum(len(cols) for cols in self.splits)

    def encode(self, vectors: np.ndarray) -> np.ndarray:
        """Centroid ids, uint8 of shape (n, n_subspaces)."""
        if not self.codebooks:
            raise not_fitted_error(self)
        rows = as_rows(vectors)
        _check_dim(rows, self._dim(), self.name)
        # nearest centroid = argmax x·c - ‖c‖²/2: one product with a constant-1 column appended to x
        # and -‖c‖²/2 appended to each centroid. Blocks of rows stay in cache across all subspaces.
        augmented = [np.vstack([book.T, -0.5 * np.einsum("ij,ij->i", book, book)]) for book in self.codebooks]
        codes = np.empty((len(rows), len(self.splits)), dtype=np.uint8)
        widest = max(len(cols) for cols in self.splits)

        def encode_block(start: int) -> None:
            block = rows[start : start + _ENCODE_BLOCK]
            buffer = np.empty((len(block), widest + 1), dtype=np.float32)
            for j, (cols, book) in enumerate(zip(self.splits, augmented, strict=True)):
                width = len(cols)
                sub = buffer[:, : width + 1]
                sub[:, :width] = block[:, cols[0] : cols[-1] + 1]  # subspaces are contiguous column ranges
                sub[:, width] = 1.0
                codes[start : start + _ENCODE_BLOCK, j] = (sub @ book).argmax(axis=1)

        with _single_threaded_blas():
            for start in range(0, len(rows), _ENCODE_BLOCK):
                encode_block(start)
        return codes

    def decode(self, codes: np.ndarray) -> np.ndarray:
        if not self.codebooks:
            raise not_fitted_error(self)
        out = np.empty((len(codes), self._dim()), dtype=np.float32)
        for j, (cols, book) in enumerate(zip(self.splits, self.codebooks, strict=True)):
            out[:, cols[0] : cols[-1] + 1] = book[codes[:, j]]
        return out

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        return self.decode(self.encode(vectors))

    def params(self) -> dict[str, Any]:
        return {
            "strength": self.strength,
            "bits": self.bits,
            "n_subspaces": len(self.splits) or self.n_subspaces,
            "seed": self.seed,
        }

    def fit_state(self) -> dict[str, np.ndarray]:
        """Subspace widths and the codebooks side by side: (2^bits, d), one column block per subspace."""
        if not self.codebooks:
            return {}
        return {"widths": np.array([len(c) for c in self.splits]), "codebooks": np.hstack(self.codebooks)}

    def load_fit_state(self, state: Mapping[str, np.ndarray]) -> ProductQuantize:
        widths, books = np.asarray(state["widths"], dtype=np.int64), np.asarray(state["codebooks"], dtype=np.float32)
        if self.n_subspaces not in (None, len(widths)) or books.shape != (2**self.bits, int(widths.sum())):
            raise VdbguardError(
                f"pq: the saved fit has {len(widths)} subspaces of {len(books)} centroids, this transform wants "
                f"{2**self.bits} centroids" + (f" in {self.n_subspaces} subspaces" if self.n_subspaces else ""),
                "build the transform with the settings the fit was made with, or fit again",
            )
        ends = np.cumsum(widths)
        self.splits = [np.arange(end - w, end) for w, end in zip(widths, ends, strict=True)]
        self.codebooks = [np.ascontiguousarray(b) for b in np.split(books, ends[:-1], axis=1)]
        return self

    @property
    def fit_dim(self) -> int | None:
        return self._dim() or None


class PcaReduce(Transform):
    """Project onto the top-k principal directions of sample vectors: the stored dimension becomes k.

    ``apply_query`` applies the same projection, so query and documents meet in the same k-dim
    space; a collection stored this way must be created with dimension k. By default the
    directions are eigenvectors of the uncentred second-moment matrix XᵀX/n, which give the best
    rank-k approximation of dot products (what cosine / inner-product search compares);
    ``center=True`` uses the covariance (classical PCA) and subtracts the sample mean first.
    Output rows are not re-normalised: their norm says how much of the vector the k directions
    kept, and cosine indexes normalise anyway.
    """

    name: ClassVar[str] = "pca"
    description: ClassVar[str] = "PCA to k dimensions (stored dimension changes to k; queries are projected too)"
    strength_meaning: ClassVar[str] = "output dimension k (smaller is stronger)"
    needs_fit: ClassVar[bool] = True
    default_strength: ClassVar[float] = 128.0
    default_strengths: ClassVar[tuple[float, ...]] = (256.0, 128.0, 64.0, 32.0, 16.0)

    def __init__(self, strength: float | None = None, seed: int | None = None, center: bool = False) -> None:
        super().__init__(strength, seed)
        self.k = _integer_strength(self.strength, 1, 1 << 20, "output dimension k")
        self.center = center
        self.mean: np.ndarray | None = None
        self.components: np.ndarray | None = None  # (d, k) float32, orthonormal columns
        self.explained: float | None = None  # share of the second moment the k directions keep

    def fit(self, vectors: np.ndarray, labels: np.ndarray | None = None) -> PcaReduce:
        rows = as_rows(vectors).astype(np.float64)
        n, d = rows.shape
        if self.k > d:
            raise VdbguardError(f"pca: k = {self.k} is larger than the dimension {d}", f"choose k <= {d}")
        if n < 2:
            raise VdbguardError("pca: fit needs at least two sample vectors")
        mean = rows.mean(axis=0) if self.center else np.zeros(d)
        centred = rows - mean
        moment = centred.T @ centred / n
        eigenvalues, eigenvectors = np.linalg.eigh(moment)  # ascending
        order = np.argsort(eigenvalues)[::-1][: self.k]
        self.mean = mean.astype(np.float32)
        self.components = np.ascontiguousarray(eigenvectors[:, order], dtype=np.float32)
        total = float(eigenvalues.clip(min=0).sum())
        self.explained = float(eigenvalues[order].clip(min=0).sum() / total) if total > 0 else 1.0
        return self

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        if self.components is None or self.mean is None:
            raise not_fitted_error(self)
        rows = as_rows(vectors)
        _check_dim(rows, self.components.shape[0], self.name)
        if self.center:
            rows = rows - self.mean
        return rows @ self.components

    def apply_query(self, vectors: np.ndarray) -> np.ndarray:
        return self.apply(vectors)

    def params(self) -> dict[str, Any]:
        return {"strength": self.strength, "output_dim": self.k, "center": self.center, "explained": self.explained}

    def fit_state(self) -> dict[str, np.ndarray]:
        if self.components is None or self.mean is None:
            return {}
        return {"mean": self.mean, "components": self.components, "explained": np.array(self.explained)}

    def load_fit_state(self, state: Mapping[str, np.ndarray]) -> PcaReduce:
        components = np.ascontiguousarray(state["components"], dtype=np.float32)
        if components.ndim != 2 or components.shape[1] != self.k:
            raise VdbguardError(f"pca: the saved fit has components of shape {components.shape}, k is {self.k} here")
        self.mean = np.asarray(state["mean"], dtype=np.float32)
        self.components = components
        self.explained = float(state["explained"])
        return self

    @property
    def fit_dim(self) -> int | None:
        return None if self.components is None else int(self.components.shape[0])
