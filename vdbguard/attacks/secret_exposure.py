"""Secret exposure (Carlini et al., USENIX Security 2019, "The Secret Sharer"): how many bits of a known
secret does a stored vector give away?

Owner-side audit. For a record whose owner knows the stored text, each structured secret in it (SSN,
credit-card, phone or account number) is ranked against its randomness space R: every string of the
same shape with other digits (``123-45-6789`` -> ``###-##-####``, |R| = 10^9). The score of a candidate
is the cosine between the stored vector and the re-embedded text with the secret replaced by that
candidate (black-box queries to the target embedder). Exposure = log2|R| - log2 rank(secret).

The rank is estimated from ``samples`` uniform candidates: rank ~ 1 + |R| * (fraction of candidates that
score at least as high as the secret). When no sampled candidate beats the secret, sampling can only
say "rank < |R| / samples", so, as in the paper (section 4.2), a skew-normal is fitted to the sampled
scores and its tail probability at the secret's score stands in for that fraction.

What the number means here. A stored vector is a deterministic function of its text, so when it is the
embedding of exactly the known text the secret always wins the ranking; the exposure then says how far
it stands out from its look-alikes, i.e. how easy an attacker who knows (or guesses) the context would
find the digits by re-embedding guesses. It is *not* a recovery attack: it needs the true text, and a
high exposure does not mean an attacker without the context can read the digits (slot search recovers
0 % of phone/SSN digits from MiniLM vectors, see vdbguard.attacks.slot_search). Limits: R keeps the
secret's shape and letters and ignores checksums (Luhn, IBAN) and issuing rules, so |R| is an upper
bound and the bits an upper bound with it; the skew-normal tail is an extrapolation and, for vectors
that are exactly the embedding of the text, typically saturates at log2|R|.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.stats import skewnorm

from vdbguard.attacks.base import Attack, Inference, Progress, l2_normalise, learned
from vdbguard.corpus import LabelledText
from vdbguard.embedders import Embedder
from vdbguard.pii import PiiType

__all__ = [
    "DigitSpace",
    "ExposureResult",
    "SecretExposureAttack",
    "exposure",
    "find_secrets",
]

SECRET_TYPES: tuple[PiiType, ...] = (PiiType.SSN, PiiType.CREDIT_CARD, PiiType.ACCOUNT_NUMBER, PiiType.PHONE)


@dataclass(frozen=True)
class DigitSpace:
    """Every string shaped like ``template`` with each ``#`` replaced by a digit (letters and separators kept)."""

    template: str

    @classmethod
    def from_secret(cls, secret: str) -> DigitSpace:
        if not any(c.isdigit() for c in secret):
            raise ValueError(f"secret {secret!r} holds no digits to vary")
        return cls(re.sub(r"\d", "#", secret))

    @property
    def digits(self) -> int:
        return self.template.count("#")

    @property
    def size(self) -> int:
        return 10**self.digits

    @property
    def log2_size(self) -> float:
        return self.digits * math.log2(10)

    def sample(self, rng: np.random.Generator, n: int, exclude: str = "") -> list[str]:
        """``n`` uniform draws from the space (``exclude``, the secret itself, is redrawn)."""
        out: list[str] = []
        while len(out) < n:
            digits = rng.integers(0, 10, size=(n - len(out), self.digits))
            for row in digits:
                it = iter(row)
                candidate = "".join(str(next(it)) if c == "#" else c for c in self.template)
                if candidate != exclude:
                    out.append(candidate)
        return out


@dataclass(frozen=True)
class ExposureResult:
    """``bits`` = log2|R| - log2 ``rank_estimate``; ``method`` is "sampled" or "skewnorm" (extrapolated)."""

    bits: float
    rank_estimate: float
    method: str
    log2_space: float = 0.0
    secret_score: float = 0.0
    beaten_by: int = 0
    samples: int = 0


def _rank_from_scores(secret_score: float, scores: np.ndarray, log2_space: float) -> ExposureResult:
    """Carlini et al.'s rank estimate from the secret's score and the scores of sampled candidates."""
    n = len(scores)
    if n == 0:
        raise ValueError("need at least one sampled candidate")
    beaten = float(np.sum(scores > secret_score) + 0.5 * np.sum(scores == secret_score))
    ln_space = log2_space * math.log(2)
    if beaten > 0:
        method = "sampled"
        ln_fraction = math.log(beaten / n)
    else:
        method = "skewnorm"
        spread = float(np.std(scores))
        if spread < 1e-9:  # all candidates score the same and below the secret: nothing to extrapolate from
            ln_fraction = -math.inf
        else:
            a, loc, scale = skewnorm.fit(scores.astype(np.float64))
            ln_fraction = float(skewnorm.logsf(secret_score, a, loc, scale))
            if not math.isfinite(ln_fraction):
                ln_fraction = -math.inf
            ln_fraction = min(ln_fraction, math.log(1.0 / n))  # never worse than the sample itself says
    # rank = 1 + |R| * fraction, computed in logs so 10^16 spaces and 1e-300 tails stay finite
    ln_rank = float(np.logaddexp(0.0, ln_space + ln_fraction)) if math.isfinite(ln_fraction) else 0.0
    log2_rank = ln_rank / math.log(2)
    bits = max(0.0, log2_space - log2_rank)
    return ExposureResult(
        bits=round(bits, 3),
        rank_estimate=float(2.0**log2_rank),
        method=method,
        log2_space=round(log2_space, 3),
        secret_score=float(secret_score),
        beaten_by=int(np.sum(scores > secret_score)),
        samples=n,
    )


def _substitute(text: str, secret: str, candidate: str) -> str:
    return text.replace(secret, candidate)


def exposure(
    embedder: Embedder,
    vector: np.ndarray,
    text: str,
    secret: str,
    space: DigitSpace | None = None,
    samples: int = 256,
    seed: int = 0,
) -> ExposureResult:
    """Exposure of ``secret`` (a substring of ``text``) in ``vector``, in bits (Carlini et al. 2019).

    ``space`` defaults to every digit string shaped like ``secret``. ``samples`` candidates are re-embedded
    in ``text`` (one ``embedder.encode`` call); the secret's own text is embedded too, so ``vector`` may be
    any stored vector, not only the embedding of ``text``.
    """
    if secret not in text:
        raise ValueError("secret must occur in text")
    space = space or DigitSpace.from_secret(secret)
    rng = np.random.default_rng(seed)
    candidates = space.sample(rng, samples, exclude=secret)
    texts = [text, *(_substitute(text, secret, c) for c in candidates)]
    embedded = l2_normalise(embedder.encode(texts))
    target = l2_normalise(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
    scores = embedded @ target
    return _rank_from_scores(float(scores[0]), scores[1:], space.log2_size)


# --------------------------------------------------------------------------------------------------
# Finding secrets in the owner's text
# --------------------------------------------------------------------------------------------------

_KEYWORDS: tuple[tuple[re.Pattern[str], PiiType], ...] = (
    (re.compile(r"\b(?:ssn|social security)\b", re.IGNORECASE), PiiType.SSN),
    (re.compile(r"\b(?:account|acct|a/c|iban)\b", re.IGNORECASE), PiiType.ACCOUNT_NUMBER),
    (re.compile(r"\b(?:card|visa|mastercard|amex)\b", re.IGNORECASE), PiiType.CREDIT_CARD),
    (
        re.compile(r"\b(?:phones?|tel|calls?|ring|text|texted|mobile|cell|contact|reached|fax)\b", re.IGNORECASE),
        PiiType.PHONE,
    ),
)
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b")
_DIGIT_RUN = re.compile(r"(?<![\w.+])\+?\(?\d(?:[\s().\-/]{0,2}\d)+(?:\s?(?:x|ext\.?)\s?\d{1,6})?(?![\w])")
_DATE = re.compile(r"^(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4})$")
_SSN_SHAPE = re.compile(r"^\d{3}([- ]?)\d{2}\1\d{4}$")


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _keyword_before(text: str, start: int, window: int = 40) -> PiiType | None:
    """The secret type named closest before ``start`` ("SSN: ...", "account number ...")."""
    before = text[max(0, start - window) : start]
    best: tuple[int, PiiType] | None = None
    for pattern, pii_type in _KEYWORDS:
        for m in pattern.finditer(before):
            if best is None or m.end() > best[0]:
                best = (m.end(), pii_type)
    return best[1] if best else None


def _classify(value: str, hint: PiiType | None) -> PiiType | None:
    digits = re.sub(r"\D", "", value.split("x")[0].split("ext")[0])
    n = len(digits)
    if _DATE.match(value) or n < 7:
        return None
    if _SSN_SHAPE.match(value) and (hint in (None, PiiType.SSN) or "-" in value):
        return PiiType.SSN
    if hint is PiiType.SSN and n == 9:
        return PiiType.SSN
    if 13 <= n <= 19 and _luhn(digits) and hint in (None, PiiType.CREDIT_CARD, PiiType.ACCOUNT_NUMBER):
        return PiiType.CREDIT_CARD if hint is not PiiType.ACCOUNT_NUMBER else PiiType.ACCOUNT_NUMBER
    if hint is PiiType.ACCOUNT_NUMBER and 6 <= n <= 20:
        return PiiType.ACCOUNT_NUMBER
    if re.fullmatch(r"\d{2}-\d{4}-\d{7}", value):
        return PiiType.ACCOUNT_NUMBER
    if hint is PiiType.CREDIT_CARD and 12 <= n <= 19:
        return PiiType.CREDIT_CARD
    if (
        9 <= n <= 15
        or re.fullmatch(r"\d{3,4}[ .-]\d{4}", value)
        or (value.startswith("+") and n >= 7)
        or (hint is PiiType.PHONE and n >= 7)
    ):
        return PiiType.PHONE
    return None


def find_secrets(text: str) -> list[tuple[PiiType, str]]:
    """Structured secrets (SSN, credit-card, account and phone numbers) in ``text``, by regex and context.

    Digit runs are typed by shape (``###-##-####``, Luhn-valid 13-19 digits, IBAN) and by the keyword just
    before them ("SSN", "acct", "card", "call"); dates and short numbers are skipped. Values are returned as
    they appear in the text, in order.
    """
    found: list[tuple[int, PiiType, str]] = []
    taken: list[tuple[int, int]] = []
    for m in _IBAN.finditer(text):
        found.append((m.start(), PiiType.ACCOUNT_NUMBER, m.group(0)))
        taken.append(m.span())
    for m in _DIGIT_RUN.finditer(text):
        if any(s < m.end() and m.start() < e for s, e in taken):
            continue
        value = m.group(0).strip().rstrip(".-/( ")
        if value.startswith("(") and ")" not in value:
            value = value[1:]
        pii_type = _classify(value, _keyword_before(text, m.start()))
        if pii_type is not None and value:
            found.append((m.start(), pii_type, value))
    return [(pii_type, value) for _, pii_type, value in sorted(found, key=lambda f: f[0])]


# --------------------------------------------------------------------------------------------------
# The attack plugin
# --------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class SecretExposureAttack(Attack):
    """Carlini et al. 2019 secret exposure, per structured secret in the owner's known text.

    ``infer`` needs ``known_texts`` (an owner-side audit): rows without known text, or whose text holds no
    SSN / card / account / phone number, get an empty Inference. For each secret found it reports
    ``exposure_bits[type]`` (the largest when a type occurs twice). Costs ``samples`` + 1 embedder
    queries per secret, so it runs at roughly embedder-throughput / (samples + 1) secrets per second.

    ``threshold`` is in bits. The default, 15 bits, is half of log2|R| for a US SSN (log2 10^9 = 29.9):
    an attacker who knows the context would need at most |R| / 2^15 guesses, i.e. about 30,000 for an
    SSN. The paper's own rule of thumb is that exposure near log2|R| means the secret can be extracted.
    ``fit`` learns nothing: the attack only queries the embedder.
    """

    name: ClassVar[str] = "secret-exposure"
    description: ClassVar[str] = "Carlini et al. 2019 exposure (bits) of each known secret in its stored vector"
    version: ClassVar[int] = 1
    kind: ClassVar[str] = "probe"
    threshold: float = 15.0
    samples: int = 128
    seed: int = 0
    _metrics: dict[str, float] = learned(factory=dict)

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        """Nothing to learn; records how often the secret finder agrees with the corpus labels."""
        labelled = [item for item in items if item.source == "synthetic-pii"]
        for pii_type in SECRET_TYPES:
            truth = [item for item in labelled if pii_type in item.pii]
            if not truth:
                continue
            hits = sum(
                all((pii_type, value) in find_secrets(item.text) for value in item.values[pii_type]) for item in truth
            )
            self._metrics[f"finder_recall_{pii_type.value}"] = round(hits / len(truth), 4)
        if progress:
            progress(1)

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        vectors = l2_normalise(vectors)
        results = [Inference() for _ in range(len(vectors))]
        if known_texts is None or self.embedder is None:
            return results
        jobs: list[tuple[int, PiiType, str, DigitSpace, list[str]]] = []
        texts: list[str] = []
        rng = np.random.default_rng(self.seed)
        for row, text in enumerate(known_texts):
            if not text:
                continue
            for pii_type, secret in find_secrets(text):
                space = DigitSpace.from_secret(secret)
                candidates = [_substitute(text, secret, c) for c in space.sample(rng, self.samples, exclude=secret)]
                jobs.append((row, pii_type, secret, space, candidates))
                texts += [text, *candidates]
        if not jobs:
            return results
        embedded = l2_normalise(self.embedder.encode(texts))
        bits: dict[int, dict[PiiType, float]] = {}
        offset = 0
        for row, pii_type, _secret, space, candidates in jobs:
            block = embedded[offset : offset + len(candidates) + 1] @ vectors[row]
            offset += len(candidates) + 1
            result = _rank_from_scores(float(block[0]), block[1:], space.log2_size)
            per_row = bits.setdefault(row, {})
            per_row[pii_type] = max(per_row.get(pii_type, 0.0), result.bits)
        for row, per_row in bits.items():
            results[row] = Inference(exposure_bits=dict(per_row))
        return results
