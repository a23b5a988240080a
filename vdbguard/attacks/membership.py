"""Data-subject presence: does this vector store hold a record about a given person?

A membership test in the sense of Shokri et al. (S&P 2017) and of the embedding-leakage study by Song &
Raghunathan (CCS 2020, section 6), adapted to a vector store: the question is not whether a *model* was
trained on someone, but whether the *store* holds a vector made from text about them (a GDPR Art. 15
access request: "do you hold data about me?"), answered from the vectors alone.

Method. The person's identifiers (name, and optionally email and phone) are written into a few templated
probe sentences ("a note about {name}", "{name}'s email is {email}"), embedded with the store's own
embedder, and the person's score is the best match between a probe and any stored vector:
``max over stored rows of mean over probes of cosine(probe, row)``. Taken alone that number says little
(every name scores high against a store of notes about people), so the same templates are filled with
``null_size`` random Faker identities (same identifier kinds, same locales as the training corpus) and
scored the same way. The person's p-value is the share of null identities that score at least as high
(with the +1 correction), and z is the distance from the null mean in null standard deviations.

With a fitted ``SlotSearchAttack`` passed as ``name_model``, each stored row's score also gets the cosines
of the person's bare first and last name in that model's learned first-/last-name spaces
(``cos(row W_first, e(first)) + cos(row W_last, e(last))``): a name matcher trained on sentence vectors,
which separates people with a record from people without one better than the templates alone.

Limits. The test finds records that *name* the person in a way the embedding keeps: a record that refers
to them only as "the customer" cannot be found; a very common name has a higher chance of a near-match on
a namesake's record; and the null is only as good as its fit to the query (a name from a locale the
null does not cover scores lower against an English store and the test gets conservative, not
liberal). The p-value is per query: correct for multiple comparisons when testing many people.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from faker import Faker

from vdbguard.attacks.base import l2_normalise
from vdbguard.corpus import DEFAULT_LOCALES
from vdbguard.embedders import Embedder

if TYPE_CHECKING:
    from vdbguard.attacks.slot_search import SlotSearchAttack

__all__ = [
    "PROBE_TEMPLATES",
    "PresenceResult",
    "null_identities",
    "presence_score",
    "presence_scores",
    "probe_sentences",
]

PROBE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "name": (
        "{name}",
        "a note about {name}",
        "{name} called about their account.",
        "Record for {name}.",
    ),
    "email": ("{name}'s email is {email}", "contact {email}"),
    "phone": ("{name}'s phone number is {phone}", "call {phone}"),
}
"""Probe sentences per identifier kind; ``{name}`` in an email/phone probe is left out when no name is given."""

IDENTIFIER_KINDS: tuple[str, ...] = tuple(PROBE_TEMPLATES)


@dataclass(frozen=True)
class PresenceResult:
    """``score``: best probe-to-record match; ``p_value`` and ``z`` against random identities;
    ``nearest_index``: the stored row that matched best (for the owner to look at, not proof)."""

    score: float
    p_value: float
    z: float
    nearest_index: int
    null_mean: float = 0.0
    null_std: float = 0.0

    @property
    def present(self) -> bool:
        """The test's call at the conventional 5 % level."""
        return self.p_value < 0.05


def _check_identifiers(identifiers: Mapping[str, str]) -> dict[str, str]:
    cleaned = {k: v.strip() for k, v in identifiers.items() if isinstance(v, str) and v.strip()}
    unknown = set(cleaned) - set(IDENTIFIER_KINDS)
    if unknown:
        raise ValueError(f"unknown identifier kinds {sorted(unknown)}; use {list(IDENTIFIER_KINDS)}")
    if not cleaned:
        raise ValueError("identifiers must hold at least one of name, email, phone")
    return cleaned


def probe_sentences(identifiers: Mapping[str, str]) -> list[str]:
    """The probe sentences for one person (a fixed number per set of identifier kinds)."""
    ids = _check_identifiers(identifiers)
    sentences: list[str] = []
    for kind in IDENTIFIER_KINDS:
        if kind not in ids:
            continue
        for template in PROBE_TEMPLATES[kind]:
            if "{name}" in template and "name" not in ids:
                template = template.replace("{name}'s ", "the ").replace("{name}", "the customer")
            sentences.append(template.format(**ids))
    return sentences


def null_identities(
    kinds: Iterable[str], n: int, seed: int = 0, locales: Sequence[str] = DEFAULT_LOCALES
) -> list[dict[str, str]]:
    """``n`` random Faker identities holding the identifier ``kinds``, cycling ``locales``.

    The null should look like the people being queried: names from other locales than the store's
    match its records worse, which makes the test call absent people present too often.
    """
    kinds = tuple(kinds)
    fakers = []
    for i, locale in enumerate(locales):
        fake = Faker(locale)
        fake.seed_instance(seed * 1000 + i)
        fakers.append(fake)
    rng = np.random.default_rng(seed)
    people = []
    for i in range(n):
        fake = fakers[i % len(fakers)]
        person: dict[str, str] = {}
        first, last = fake.first_name(), fake.last_name()
        if "name" in kinds:
            person["name"] = f"{first} {last}"
        if "email" in kinds:
            person["email"] = _email_like(first, last, fake, rng)
        if "phone" in kinds:
            person["phone"] = fake.phone_number()
        people.append(person)
    return people


def _email_like(first: str, last: str, fake: Faker, rng: np.random.Generator) -> str:
    """Half the time derived from the name (jane.roe@, jroe@, jane_roe12@), as real addresses and most queries
    are; a null of unrelated random addresses would make every name-derived query look present."""
    if rng.random() < 0.5:
        return str(fake.email())
    f, la = (re.sub(r"[^a-z]", "", w.lower()) or "x" for w in (first, last))
    styles = (f"{f}.{la}", f"{f[0]}{la}", f"{f}_{la}", f"{f}{la}{rng.integers(1, 99)}", f"{la}.{f[0]}", f)
    return f"{styles[rng.integers(len(styles))]}@{fake.free_email_domain()}"


@dataclass
class _Store:
    """The stored vectors, plus their projections into a slot-search model's first/last-name spaces."""

    vectors: np.ndarray
    first: np.ndarray | None = None
    last: np.ndarray | None = None

    @classmethod
    def of(cls, vectors: np.ndarray, name_model: SlotSearchAttack | None) -> _Store:
        vectors = l2_normalise(vectors)
        if vectors.ndim != 2 or vectors.shape[0] == 0:
            raise ValueError("store_vectors must be a non-empty (rows, dimension) matrix")
        if name_model is None:
            return cls(vectors)
        return cls(vectors, l2_normalise(vectors @ name_model.w_first), l2_normalise(vectors @ name_model.w_last))


def _name_parts(embedder: Embedder, people: Sequence[Mapping[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings of each person's bare first and last name (zero rows where a part is missing)."""
    from vdbguard.attacks.slot_search import split_person_name

    parts = [split_person_name(p["name"]) if "name" in p else (None, None) for p in people]
    words = sorted({w for pair in parts for w in pair if w})
    table = dict(zip(words, l2_normalise(embedder.encode(words)), strict=True)) if words else {}
    dimension = next(iter(table.values())).shape[0] if table else 0
    zero = np.zeros(dimension, dtype=np.float32)
    first = np.stack([table.get(f, zero) if f else zero for f, _ in parts]) if table else None
    last = np.stack([table.get(la, zero) if la else zero for _, la in parts]) if table else None
    return first, last  # type: ignore[return-value]


def _best_match(
    probes: np.ndarray,
    store: _Store,
    per_person: int,
    first: np.ndarray | None = None,
    last: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per person (``per_person`` consecutive probe rows): max over stored rows of the mean probe cosine,
    plus, with a name model, the cosines of the person's first and last name in its name spaces."""
    people = probes.shape[0] // per_person
    mean_probe = probes.reshape(people, per_person, -1).mean(axis=1)  # mean of cosines = cosine with the mean
    best = np.empty(people, dtype=np.float64)
    where = np.empty(people, dtype=np.int64)
    for start in range(0, people, 256):
        end = min(start + 256, people)
        sims = mean_probe[start:end] @ store.vectors.T
        if store.first is not None and first is not None and last is not None:
            sims = sims + first[start:end] @ store.first.T + last[start:end] @ store.last.T
        where[start:end] = sims.argmax(axis=1)
        best[start:end] = sims.max(axis=1)
    return best, where


def presence_scores(
    embedder: Embedder,
    store_vectors: np.ndarray,
    people: Sequence[Mapping[str, str]],
    null_size: int = 200,
    seed: int = 0,
    name_model: SlotSearchAttack | None = None,
    null_locales: Sequence[str] = DEFAULT_LOCALES,
) -> list[PresenceResult]:
    """``presence_score`` for many people at once; one null set per combination of identifier kinds."""
    store = _Store.of(store_vectors, name_model)
    checked = [_check_identifiers(p) for p in people]
    nulls: dict[tuple[str, ...], tuple[float, float, np.ndarray]] = {}
    for kinds in {tuple(k for k in IDENTIFIER_KINDS if k in p) for p in checked}:
        null_people = null_identities(kinds, null_size, seed, null_locales)
        sentences = [s for person in null_people for s in probe_sentences(person)]
        per_person = len(sentences) // null_size
        first, last = _name_parts(embedder, null_people) if name_model is not None else (None, None)
        scores, _ = _best_match(l2_normalise(embedder.encode(sentences)), store, per_person, first, last)
        nulls[kinds] = (float(scores.mean()), float(scores.std(ddof=1)), np.sort(scores))
    sentences = [probe_sentences(p) for p in checked]
    embedded = l2_normalise(embedder.encode([s for group in sentences for s in group]))
    first, last = _name_parts(embedder, checked) if name_model is not None else (None, None)
    results, offset = [], 0
    for i, (person, group) in enumerate(zip(checked, sentences, strict=True)):
        probes = embedded[offset : offset + len(group)]
        offset += len(group)
        parts = (first[i : i + 1], last[i : i + 1]) if first is not None and last is not None else (None, None)
        best, where = _best_match(probes, store, len(group), *parts)
        mean, std, null_sorted = nulls[tuple(k for k in IDENTIFIER_KINDS if k in person)]
        at_least = len(null_sorted) - int(np.searchsorted(null_sorted, best[0], side="left"))
        results.append(
            PresenceResult(
                score=round(float(best[0]), 5),
                p_value=round((1 + at_least) / (1 + len(null_sorted)), 5),
                z=round((float(best[0]) - mean) / max(std, 1e-9), 3),
                nearest_index=int(where[0]),
                null_mean=round(mean, 5),
                null_std=round(std, 5),
            )
        )
    return results


def presence_score(
    embedder: Embedder,
    store_vectors: np.ndarray,
    identifiers: dict[str, str],
    null_size: int = 200,
    seed: int = 0,
    name_model: SlotSearchAttack | None = None,
    null_locales: Sequence[str] = DEFAULT_LOCALES,
) -> PresenceResult:
    """How likely the store holds a record about the person with these ``identifiers``.

    ``identifiers``: any of ``name``, ``email``, ``phone``. ``store_vectors``: the stored vectors as rows
    (made with ``embedder``; read them with a connector's ``iter_batches``). The p-value is empirical
    against ``null_size`` random identities, so it cannot go below 1 / (null_size + 1).

    ``name_model``: a fitted ``SlotSearchAttack`` for the same embedder. Its learned first/last-name
    projections add a name-matching term to the score, which raised the test's power in our measurements.
    ``null_locales``: Faker locales for the null identities; match them to the people you query (default:
    the training corpus' locales). A mismatched null makes the p-values too small (BENCHMARKS.md).
    """
    return presence_scores(
        embedder,
        store_vectors,
        [identifiers],
        null_size=null_size,
        seed=seed,
        name_model=name_model,
        null_locales=null_locales,
    )[0]
