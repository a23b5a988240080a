"""Which known embedding model made these stored vectors? (for ``vdbguard scan --embedder auto``)

Every sentence-embedding model writes into its own coordinate system: its outputs share a common mean
direction (anisotropy) and concentrate in a low-dimensional subspace of the space, and both are tied
to that model's axes. So, per candidate model whose dimension matches the sample:

1. embed a fixed set of generic probe sentences (``PROBE_SENTENCES``, notes and chat) with the candidate;
2. ``mean_cosine``: cosine between the sample's mean direction and the probes' mean direction; for a
   direction foreign to the model it is ~N(0, 1/d), so ``sigma_mean = mean_cosine * sqrt(d)``;
3. ``subspace_energy``: the share of the sample's energy inside the probes' top-``k`` principal subspace;
   a foreign direction puts Beta(k/2, (d-k)/2) there (mean ``k / d``), so ``sigma_energy`` is its excess
   in standard errors, with the sample size shrunk by the sample's own anisotropy (Kish's design effect);
4. ``evidence_sigma`` combines the two (Stouffer). Vectors of another model, random vectors and even a
   rotated copy of the candidate's own vectors stay within a few sigma; the candidate's own vectors reach
   tens of sigma from a dozen vectors, even on topics far from the probes. The nearest-probe cosine and
   the sample's norms and anisotropy are reported as plain-language reasons.

``score = clip((evidence_sigma - 3) / (12 - 3), 0, 1)``; a dimension mismatch or a model that is not
installed scores 0 with that reason. Probe embeddings are cached on disk per model, so repeat calls do
not load the models. Limits: it only chooses among the candidates it is given (an unlisted model
scores low everywhere, which is the signal to stop); two fine-tunes of one base model, or a model
and its quantised copy, look alike; a sample of a few vectors from one narrow topic scores lower.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vdbguard.cache import atomic_write, cache_root
from vdbguard.embedders.loading import DEFAULT_EMBEDDER, Embedder, resolve_model_path
from vdbguard.errors import VdbguardError

__all__ = [
    "DEFAULT_CANDIDATES",
    "PROBE_SENTENCES",
    "ModelMatch",
    "identify_embedder",
    "sample_statistics",
    "score_models",
]

DEFAULT_CANDIDATES: tuple[str, ...] = (DEFAULT_EMBEDDER, "all-mpnet-base-v2")
SUBSPACE_RANK = 16
NULL_SIGMA = 3.0
"""Evidence up to this many standard deviations is what foreign (or random) directions can give: score 0."""
FULL_SIGMA = 12.0
"""Evidence from this many standard deviations up scores 1."""
CONFIDENT_SCORE = 0.3
"""``identify_embedder`` takes no candidate below this (about 5.7 sigma of evidence)."""

PROBE_SENTENCES: tuple[str, ...] = (
    "Please call me back when you get a chance.",
    "The meeting has been moved to Thursday afternoon.",
    "Can you send me the invoice for last month?",
    "Our flight was delayed by three hours because of the storm.",
    "The patient reported mild chest pain after exercise.",
    "I forgot my password and cannot log in to the portal.",
    "The quarterly revenue grew by twelve percent.",
    "She adopted a small dog from the local shelter.",
    "What time does the pharmacy close on Sundays?",
    "The package was left at the front door this morning.",
    "He has been training for the marathon since spring.",
    "The new software update fixed the battery drain issue.",
    "We need to renew the lease before the end of the year.",
    "The doctor prescribed antibiotics for the infection.",
    "Let's grab lunch at the Italian place near the office.",
    "The bank flagged a suspicious transaction on my card.",
    "Heavy rain is expected across the region tomorrow.",
    "The children built a sandcastle on the beach.",
    "Please update my mailing address in your records.",
    "The committee approved the budget for the new library.",
    "My internet connection keeps dropping every evening.",
    "The recipe calls for two cups of flour and an egg.",
    "The insurance claim was denied due to missing documents.",
    "He studied history at university before joining the army.",
    "The museum is free to visit on the first Sunday of the month.",
    "The train to the airport leaves every fifteen minutes.",
    "I would like to cancel my subscription, effective immediately.",
    "The nurse checked her blood pressure and temperature.",
    "They are hiring a senior engineer for the data team.",
    "The concert tickets sold out within minutes.",
    "Remember to water the plants while I am away.",
    "The court ruled in favour of the tenants.",
    "How do I reset the router to factory settings?",
    "The hotel room had a beautiful view of the harbour.",
    "Your order has shipped and should arrive on Friday.",
    "The vaccine appointment is booked for next Monday at noon.",
    "Students must submit their essays by Friday at midnight.",
    "The football match ended in a draw after extra time.",
    "We are out of coffee again, can someone buy more?",
    "The contract includes a ninety-day notice period.",
    "An old oak tree fell across the road during the night.",
    "The landlord promised to fix the heating next week.",
    "The therapist suggested keeping a daily journal.",
    "The stock market fell sharply after the announcement.",
    "I really enjoyed the book you lent me.",
    "The app asks for permission to access your location.",
    "Thanks for your help with the move last weekend!",
    "The factory will close for maintenance in August.",
    "What is your favourite movie?",
    "I love listening to music on long drives.",
    "Do you know any good jokes?",
    "Who painted the ceiling of the chapel?",
    "How are you doing today?",
    "I am not sure I understand the question.",
    "Are you a robot or a person?",
    "My favourite colour is green.",
    "What do you like to do on weekends?",
    "Tell me something interesting about space.",
    "That is a funny thing to say.",
    "Computers can solve problems very quickly.",
    "Which planet is closest to the sun?",
    "I think therefore I am.",
    "Can you recommend a good restaurant?",
    "What is the meaning of life?",
)


@dataclass(frozen=True)
class ModelMatch:
    """How well one candidate model explains the sample: ``score`` in [0, 1], and why."""

    name: str
    score: float
    reasons: tuple[str, ...]
    statistics: Mapping[str, float] = field(default_factory=dict)


def _clean(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Finite, non-zero rows, as unit vectors; and their original norms."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2:
        raise VdbguardError(f"expected a 2-D array of vectors, got shape {vectors.shape}")
    norms = np.linalg.norm(vectors, axis=1)
    keep = np.isfinite(norms) & (norms > 1e-12)
    return vectors[keep] / norms[keep, None], norms[keep]


def sample_statistics(vectors: np.ndarray) -> dict[str, float]:
    """Model-independent facts about a sample: size, dimension, norms, anisotropy."""
    unit, norms = _clean(vectors)
    n = len(unit)
    stats = {"n": float(n), "dimension": float(np.asarray(vectors).shape[1])}
    if n:
        stats |= {
            "norm_mean": float(norms.mean()),
            "norm_std": float(norms.std()),
            "unit_normalised": float(bool(np.all(np.abs(norms - 1) < 1e-3))),
            "mean_vector_norm": float(np.linalg.norm(unit.mean(axis=0))),
        }
    if n > 1:
        gram = unit @ unit.T
        stats["anisotropy"] = float((gram.sum() - n) / (n * (n - 1)))  # mean pairwise cosine
    return {k: round(v, 4) for k, v in stats.items()}


def _declared_dimension(path: Path) -> int | None:
    """The output dimension a sentence-transformers folder declares (last Dense, else Pooling), unloaded."""
    try:
        modules = json.loads((path / "modules.json").read_text())
    except (OSError, ValueError):
        return None
    dimension = None
    for module in modules:
        kind, folder = str(module.get("type", "")), path / str(module.get("path", ""))
        try:
            if kind.endswith("Dense"):
                dimension = int(json.loads((folder / "config.json").read_text())["out_features"])
            elif kind.endswith("Pooling"):
                config = json.loads((folder / "config.json").read_text())
                modes = [k for k, v in config.items() if k.startswith("pooling_mode") and v is True]
                dimension = int(config["word_embedding_dimension"]) * max(1, len(modes))
        except (OSError, ValueError, KeyError):
            return None
    return dimension


def _probe_cache_file(path: Path) -> Path:
    weights = sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".bin")) if path.is_dir() else []
    stamp = [str(path.resolve()), *(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in weights)]
    stamp.append(hashlib.sha256("\n".join(PROBE_SENTENCES).encode()).hexdigest())
    key = hashlib.sha256("|".join(stamp).encode()).hexdigest()[:20]
    return cache_root() / "fingerprint" / f"{key}.npy"


def _probe_embeddings(name: str, path: Path, embedders: Mapping[str, Embedder]) -> np.ndarray:
    """The candidate's embeddings of the probe sentences, cached on disk (no model load on a cache hit)."""
    cached = _probe_cache_file(path)
    if cached.exists():
        return np.load(cached)
    embedder = embedders.get(name) or Embedder(name)
    vectors = embedder.encode(list(PROBE_SENTENCES)).astype(np.float64)
    with atomic_write(cached) as handle:
        np.save(handle, vectors)
    return vectors


def _energy(vectors: np.ndarray, basis: np.ndarray) -> float:
    return float(np.mean(np.sum((vectors @ basis.T) ** 2, axis=1)))


def _compare(sample: np.ndarray, probes: np.ndarray, anisotropy: float) -> dict[str, float]:
    """The two statistics, each as a z-score against "these are directions foreign to the model"."""
    n, dimension = sample.shape
    rank = min(SUBSPACE_RANK, len(probes) // 2 - 1)
    chance = rank / dimension
    basis = np.linalg.svd(probes, full_matrices=False)[2][:rank]
    energy = _energy(sample, basis)
    # A direction with no relation to the basis puts Beta(k/2, (d-k)/2) of its energy in it. Sample vectors
    # that share a direction (anisotropy) are not independent draws: Kish's design effect shrinks n, and
    # taking the mean pairwise cosine as the correlation errs on the cautious side.
    single_sd = np.sqrt(2 * chance * (1 - chance) / (dimension + 2))
    effective_n = n / (1 + (n - 1) * max(anisotropy, 0.0))
    sigma_energy = (energy - chance) / (single_sd / np.sqrt(effective_n))
    # the sample's mean direction against the model's: a foreign direction gives cosine ~ N(0, 1/d)
    sample_mean, probe_mean = sample.mean(axis=0), probes.mean(axis=0)
    norms = np.linalg.norm(sample_mean) * np.linalg.norm(probe_mean)
    mean_cosine = float(sample_mean @ probe_mean / max(norms, 1e-12))
    sigma_mean = mean_cosine * np.sqrt(dimension)
    # for the reasons only: what the model's own sentences reach (basis from half the probes, other half)
    half_basis = np.linalg.svd(probes[::2], full_matrices=False)[2][:rank]
    out = {
        "mean_cosine": mean_cosine,
        "subspace_energy": energy,
        "subspace_energy_chance": chance,
        "subspace_energy_own": _energy(probes[1::2], half_basis),
        "effective_n": effective_n,
        "sigma_energy": sigma_energy,
        "sigma_mean": sigma_mean,
        "evidence_sigma": (sigma_energy + sigma_mean) / np.sqrt(2),  # Stouffer's combination
        "nearest_probe_cosine": float(np.median((sample @ probes.T).max(axis=1))),
    }
    return {k: round(float(v), 4) for k, v in out.items()}


def _match(name: str, sample: np.ndarray, stats: Mapping[str, float], embedders: Mapping[str, Embedder]) -> ModelMatch:
    try:
        path = resolve_model_path(name)
    except VdbguardError as exc:
        return ModelMatch(name, 0.0, (f"not available: {exc}",))
    dimension = _declared_dimension(path)
    if dimension is None:
        dimension = (embedders.get(name) or Embedder(name)).dimension
    if dimension != sample.shape[1]:
        reason = f"dimension mismatch: the model makes {dimension}-d vectors, the sample is {sample.shape[1]}-d"
        return ModelMatch(name, 0.0, (reason,))
    if len(sample) == 0:
        return ModelMatch(name, 0.0, ("no usable (finite, non-zero) vectors in the sample",))
    compared = _compare(sample, _probe_embeddings(name, path, embedders), stats.get("anisotropy", 0.0))
    score = float(np.clip((compared["evidence_sigma"] - NULL_SIGMA) / (FULL_SIGMA - NULL_SIGMA), 0.0, 1.0))
    reasons = [
        f"dimension {dimension} matches",
        f"evidence {compared['evidence_sigma']:.1f} sigma that the vectors live in this model's coordinates "
        f"(foreign or random vectors: within +-{NULL_SIGMA:.0f})",
        f"mean direction of the sample vs the model's: cosine {compared['mean_cosine']:.2f} "
        f"({compared['sigma_mean']:.1f} sigma)",
        f"{compared['subspace_energy']:.0%} of the sample lies in the model's top-{SUBSPACE_RANK} probe subspace "
        f"(chance {compared['subspace_energy_chance']:.0%}, the model's own sentences "
        f"{compared['subspace_energy_own']:.0%}; {compared['sigma_energy']:.1f} sigma)",
        f"median cosine to the nearest probe sentence {compared['nearest_probe_cosine']:.2f}",
    ]
    if stats.get("unit_normalised"):
        reasons.append("vectors are unit-normalised, as sentence-transformers models with a Normalize module emit")
    elif "norm_mean" in stats:
        reasons.append(f"vectors are not unit-normalised (mean norm {stats['norm_mean']:.3g}); compared as directions")
    return ModelMatch(name, round(score, 4), tuple(reasons), {**stats, **compared})


def score_models(
    vectors: np.ndarray, candidates: Sequence[str] = DEFAULT_CANDIDATES, embedders: Mapping[str, Embedder] | None = None
) -> list[ModelMatch]:
    """Rank candidate models (packaged names or local sentence-transformers folders) by how well each
    explains ``vectors`` (a sample of stored vectors, a few dozen are plenty); best first.

    ``embedders`` may hand over already-loaded models by candidate name, to save loading them again.
    """
    sample, _ = _clean(vectors)
    stats = sample_statistics(vectors)
    matches = [_match(name, sample, stats, embedders or {}) for name in dict.fromkeys(candidates)]
    return sorted(matches, key=lambda m: -m.score)


def identify_embedder(
    vectors: np.ndarray, candidates: Sequence[str] = DEFAULT_CANDIDATES, min_score: float = CONFIDENT_SCORE
) -> str:
    """The candidate that most likely produced ``vectors``, or an error naming every candidate's score."""
    matches = score_models(vectors, candidates)
    if matches and matches[0].score >= min_score:
        return matches[0].name
    scores = ", ".join(f"{m.name}: {m.score:.2f} ({m.reasons[0]})" for m in matches)
    raise VdbguardError(
        f"no candidate embedder explains the stored vectors (score >= {min_score} needed): {scores}",
        "pass --embedder NAME_OR_PATH; or, for a model that cannot run here (an API model), --embedder store "
        "when the collection keeps its text for a few hundred records",
    )
