"""Key handling shared by the keyed transforms (dcpe, rotation), and the alignment attack that tests them.

Keys: 32 or more secret bytes, from ``key=`` (bytes, or a string: 64 hex digits are decoded,
anything else is taken as UTF-8) or the ``VDBGUARD_TRANSFORM_KEY`` environment variable. The key
is never logged and never in ``params()``; ``params()["key_id"]`` is a one-way 8-byte tag of it so
a mismatched query key can be noticed. Sub-keys for the scale, the permutation and the rotation
are HMAC-SHA256 derivations of the key.

A keyed rotation (:mod:`vdbguard.transforms.rotation`) is a keyed random orthogonal matrix and
nothing else: distances are kept exactly, and so is everything an attacker needs. With about ``d``
known (plaintext, ciphertext) pairs — a leaked sample, a few documents the attacker planted,
embeddings of public text — a
least-squares or orthogonal-Procrustes fit recovers the key map and inverts every other vector
(the alignment step of ALGEN, Chen et al., "ALGEN: Few-shot Inversion Attacks on Textual
Embeddings using Alignment and Generation", 2025). :func:`alignment_attack` runs that attack;
``tests/test_keyed.py`` shows a recovered cosine of ≈1.0 for the rotation. Against SAP the same
attack recovers ``x + u/s`` at best: the key adds nothing once ~d pairs leak, and what is left is
the noise, i.e. SAP is then worth what its ball noise of relative radius β/4 is worth.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from typing import Any, ClassVar

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.transforms.base import Transform

KEY_ENV = "VDBGUARD_TRANSFORM_KEY"
KEY_BYTES = 32
_KEY_HINT = (
    f"pass key=<{KEY_BYTES}+ secret bytes> or set {KEY_ENV}, e.g. "
    f"export {KEY_ENV}=$(python -c 'import secrets; print(secrets.token_hex(32))'); "
    "keep it secret and use the same key for queries"
)


def load_key(key: bytes | str | None, what: str = "this keyed transform") -> bytes:
    """The secret key as bytes: the argument, else ``$VDBGUARD_TRANSFORM_KEY``; at least 32 bytes."""
    if key is None:
        key = os.environ.get(KEY_ENV) or None
        if key is None:
            raise VdbguardError(f"{what} needs a secret key and none was given", _KEY_HINT)
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


def subkey_rng(key: bytes, label: str) -> np.random.Generator:
    digest = hmac.new(key, label.encode(), hashlib.sha256).digest()
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int.from_bytes(digest, "big"))))


def key_id(key: bytes) -> str:
    return hmac.new(key, b"vdbguard/key-id", hashlib.sha256).hexdigest()[:16]


def haar_rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """A uniformly random d×d orthogonal matrix (QR of a Gaussian matrix with the sign fix of Mezzadri 2007)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


class KeyedTransform(Transform):
    """Shared key handling: a secret key and one cached keyed linear map per dimension."""

    needs_key: ClassVar[bool] = True

    def __init__(self, strength: float | None, seed: int | None, key: bytes | str | None) -> None:
        super().__init__(strength, seed)
        self._key = load_key(key, f"transform {self.name!r}")
        self._maps: dict[int, tuple[np.ndarray | None, np.ndarray | None]] = {}

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}(strength={self.strength!r}, key_id={key_id(self._key)!r})"

    def _rotation(self, d: int) -> np.ndarray:
        return haar_rotation(subkey_rng(self._key, f"vdbguard/rotation/{d}"), d).astype(np.float32)

    def _permutation(self, d: int) -> np.ndarray:
        return subkey_rng(self._key, f"vdbguard/permutation/{d}").permutation(d)

    def params(self) -> dict[str, Any]:
        return {"strength": self.strength, "key_id": key_id(self._key)}


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
