"""Keyed transforms: approximate distance-comparison-preserving encryption, and the plain secret rotation.

:class:`ScaleAndPerturb` is the Scale-And-Perturb (SAP) scheme of Fuchsbauer, Ghosal, Hauke &
O'Neill, "Approximate Distance-Comparison-Preserving Symmetric Encryption" (SCN 2022, LNCS 13409,
pp. 117-144), the idea behind IronCore Labs' Cloaked AI: ``c = s·x + u`` with a secret scale
``s`` and ``u`` uniform in a ball of radius ``s·β/4``, then the paper's shuffling step, done here
as a keyed permutation of the coordinates (and optionally a keyed orthogonal rotation). SAP is
β-distance-comparison-preserving: whenever ‖x - y‖ < ‖x - z‖ - β, the ciphertexts compare the same
way, so nearest-neighbour search on ciphertexts still works. Queries go through ``apply_query``:
the same scale and permutation, without noise.

:class:`SecretRotation` is a keyed random orthogonal matrix and nothing else: distances are kept
exactly, and so is everything an attacker needs. With about ``d`` known (plaintext, ciphertext)
pairs — a leaked sample, a few documents the attacker planted, embeddings of public text — a
least-squares or orthogonal-Procrustes fit recovers the key map and inverts every other vector
(the alignment step of ALGEN, Chen et al., "ALGEN: Few-shot Inversion Attacks on Textual
Embeddings using Alignment and Generation", 2025). :func:`alignment_attack` runs that attack;
``tests/test_keyed.py`` shows a recovered cosine of ≈1.0 for the rotation. Against SAP the same
attack recovers ``x + u/s`` at best: the key adds nothing once ~d pairs leak, and what is left is
the noise, i.e. SAP is then worth what its ball noise of relative radius β/4 is worth.

Keys: 32 or more secret bytes, from ``key=`` (bytes, or a string: 64 hex digits are decoded,
anything else is taken as UTF-8) or the ``VDBGUARD_TRANSFORM_KEY`` environment variable. The key
is never logged and never in ``params()``; ``params()["key_id"]`` is a one-way 8-byte tag of it so
a mismatched query key can be noticed. Sub-keys for the scale, the permutation and the rotation
are HMAC-SHA256 derivations of the key.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from typing import Any, ClassVar

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.transforms.base import Transform
from vdbguard.transforms.gaussian import as_rows, check_strength
from vdbguard.transforms.ldp import ball_noise

KEY_ENV = "VDBGUARD_TRANSFORM_KEY"
KEY_BYTES = 32
_KEY_HINT = (
    f"pass key=<{KEY_BYTES}+ secret bytes> or set {KEY_ENV}, e.g. "
    f"export {KEY_ENV}=$(python -c 'import secrets; print(secrets.token_hex(32))'); "
    "keep it secret and use the same key for queries"
)


def load_key(key: bytes | str | None) -> bytes:
    """The secret key as bytes: the argument, else ``$VDBGUARD_TRANSFORM_KEY``; at least 32 bytes."""
    if key is None:
        key = os.environ.get(KEY_ENV) or None
        if key is None:
            raise VdbguardError("this keyed transform needs a secret key", _KEY_HINT)
    if isinstance(key, str):
        text = key.strip()
        try:
            raw = bytes.fromhex(text) if len(text) == 2 * KEY_BYTES else text.encode()
        except ValueError:
            raw = text.encode()
    elif isinstance(key, (bytes, bytearray, memoryview)):
        raw = bytes(key)
    else:
        raise VdbguardError(f"key must be bytes or str, got {type(key).__name__}", _KEY_HINT)
    if len(raw) < KEY_BYTES:
        raise VdbguardError(f"the secret key is {len(raw)} bytes; at least {KEY_BYTES} are needed", _KEY_HINT)
    return raw


def _subkey_rng(key: bytes, label: str) -> np.random.Generator:
    digest = hmac.new(key, label.encode(), hashlib.sha256).digest()
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int.from_bytes(digest, "big"))))


def key_id(key: bytes) -> str:
    return hmac.new(key, b"vdbguard/key-id", hashlib.sha256).hexdigest()[:16]


def haar_rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """A uniformly random d×d orthogonal matrix (QR of a Gaussian matrix with the sign fix of Mezzadri 2007)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


class _Keyed(Transform):
    """Shared key handling: a secret key and one cached keyed linear map per dimension."""

    def __init__(self, strength: float, seed: int | None, key: bytes | str | None) -> None:
        super().__init__(strength, seed)
        self._key = load_key(key)
        self._maps: dict[int, tuple[np.ndarray | None, np.ndarray | None]] = {}

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}(strength={self.strength!r}, key_id={key_id(self._key)!r})"

    def _rotation(self, d: int) -> np.ndarray:
        return haar_rotation(_subkey_rng(self._key, f"vdbguard/rotation/{d}"), d).astype(np.float32)

    def _permutation(self, d: int) -> np.ndarray:
        return _subkey_rng(self._key, f"vdbguard/permutation/{d}").permutation(d)

    def params(self) -> dict[str, Any]:
        return {"strength": self.strength, "key_id": key_id(self._key)}


class ScaleAndPerturb(_Keyed):
    """SAP (Fuchsbauer et al.): store ``shuffle(s·x + u)``, u uniform in a ball of radius s·β/4; query ``shuffle(s·q)``

    ``β`` is the approximation factor in plaintext distance units: comparisons whose distances
    differ by more than β are always preserved. For unit vectors the noise radius is β/4 of the
    vector's length. The secret scale s is derived from the key (log-uniform in [1, 1024)).
    ``rotate=True`` follows the permutation with a keyed orthogonal rotation (it does not change
    distances, so it costs recall nothing, but it gains nothing against the alignment attack either).
    Noise is fresh per call; with ``seed`` set (and the same key) the output is reproducible. Fresh
    noise cuts both ways: many encryptions of the same vector average their noise away, so encrypt
    each document once. SAP is defined for Euclidean distance (use an L2 collection); on MiniLM
    embeddings a cosine collection ranked about as well (recall@10 0.91 vs 0.90 at β = 1).
    """

    name: ClassVar[str] = "dcpe"
    description: ClassVar[str] = (
        "keyed Scale-And-Perturb DCPE (Fuchsbauer et al. 2022): secret scale, ball noise s·β/4, keyed shuffle"
    )
    strength_meaning: ClassVar[str] = "approximation factor β: noise ball radius is s·β/4 (larger is stronger)"
    default_strengths: ClassVar[tuple[float, ...]] = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)

    def __init__(
        self, strength: float, seed: int | None = None, key: bytes | str | None = None, rotate: bool = False
    ) -> None:
        super().__init__(check_strength(strength, "approximation factor β", positive=False), seed, key)
        self.rotate = rotate
        unit = _subkey_rng(self._key, "vdbguard/dcpe/scale").random()
        self._scale = float(2.0 ** (10.0 * unit))
        if seed is None:
            self._rng = np.random.default_rng()
        else:  # reproducible, but tied to the key: another key with the same seed gives other noise
            self._rng = _subkey_rng(self._key, f"vdbguard/dcpe/noise/{seed}")

    def _map(self, d: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(permutation, matrix): a plain column permutation, or one matrix doing shuffle then rotation."""
        if d not in self._maps:
            perm = self._permutation(d)
            if self.rotate:
                matrix = np.empty((d, d), dtype=np.float32)
                matrix[perm] = self._rotation(d)  # x[:, perm] @ R == x @ matrix
                self._maps[d] = (None, matrix)
            else:
                self._maps[d] = (perm, None)
        return self._maps[d]

    def _encrypt(self, rows: np.ndarray, noise: bool) -> np.ndarray:
        """``shuffle(s·x + u)``, computed as ``s·shuffle(x) + u'``: the ball noise is isotropic, so
        shuffling (or rotating) it gives noise with the same distribution, and the key map runs once."""
        n, d = rows.shape
        perm, matrix = self._map(d)
        out = np.take(rows, perm, axis=1) if matrix is None else rows @ matrix  # take: ~7× faster than rows[:, perm]
        out *= np.float32(self._scale)
        if noise and self.strength > 0 and n:
            radius = self._scale * self.strength / 4.0
            # uniform in the ball: uniform direction, radius R·U^(1/d)
            out += ball_noise(self._rng, n, d, radius * self._rng.random(n) ** (1.0 / d))
        return out

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        return self._encrypt(as_rows(vectors), noise=True)

    def apply_query(self, vectors: np.ndarray) -> np.ndarray:
        return self._encrypt(as_rows(vectors), noise=False)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "rotate": self.rotate, "seed": self.seed}


class SecretRotation(_Keyed):
    """A keyed random orthogonal rotation, no noise: the insecure baseline (see :func:`alignment_attack`).

    Distances and inner products are preserved exactly, so search is unaffected; so is inversion,
    once about d (plaintext, ciphertext) pairs are known. There is no strength knob (always 1).
    """

    name: ClassVar[str] = "rotation"
    description: ClassVar[str] = (
        "keyed random orthogonal rotation without noise (insecure baseline: ~d known pairs undo it)"
    )
    strength_meaning: ClassVar[str] = "none: a rotation has no knob (always 1)"
    default_strengths: ClassVar[tuple[float, ...]] = (1.0,)

    def __init__(self, strength: float = 1.0, seed: int | None = None, key: bytes | str | None = None) -> None:
        if float(strength) != 1.0:
            raise VdbguardError(f"a secret rotation has no strength knob; got {strength!r}", "use strength 1")
        super().__init__(1.0, seed, key)

    def _matrix(self, d: int) -> np.ndarray:
        if d not in self._maps:
            self._maps[d] = (None, self._rotation(d))
        return self._maps[d][1]  # type: ignore[return-value]

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        rows = as_rows(vectors)
        return rows @ self._matrix(rows.shape[1])

    def apply_query(self, vectors: np.ndarray) -> np.ndarray:
        return self.apply(vectors)


def alignment_attack(
    known_plain: np.ndarray, known_cipher: np.ndarray, cipher: np.ndarray, method: str = "lstsq"
) -> np.ndarray:
    """Recover plaintexts from ciphertexts with a linear map fitted on known (plaintext, ciphertext) pairs.

    ``method="lstsq"``: W = argmin ‖C·W - P‖ (any linear key map, scale included); ``"procrustes"``:
    the best orthogonal W times a scalar, from the SVD of CᵀP (Schönemann 1966), which needs fewer
    pairs and matches a rotation / permutation exactly. This is the alignment step of ALGEN; a
    real attacker then feeds the recovered vectors to an inversion model.
    """
    p = np.asarray(known_plain, dtype=np.float64)
    c = np.asarray(known_cipher, dtype=np.float64)
    if method == "lstsq":
        w, *_ = np.linalg.lstsq(c, p, rcond=None)
    elif method == "procrustes":
        u, sigma, vt = np.linalg.svd(c.T @ p)
        w = (u @ vt) * (sigma.sum() / max(float((c * c).sum()), 1e-30))
    else:
        raise VdbguardError(f"unknown alignment method {method!r}", "use 'lstsq' or 'procrustes'")
    return (np.asarray(cipher, dtype=np.float64) @ w).astype(np.float32)
