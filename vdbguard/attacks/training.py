"""Train attacks on the project's corpus against one embedder, and cache them on disk.

Cache key: the embedder's behavioural fingerprint, the corpus hash, the attack's name and
version. A second scan against the same embedder loads instead of retraining.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from vdbguard.attacks import Attack, load_attack_class
from vdbguard.cache import cache_root
from vdbguard.corpus import LabelledText, corpus_hash
from vdbguard.corpus.embedded import embed_corpus
from vdbguard.corpus.labelled import cached_corpus_hash
from vdbguard.data import packaged_file
from vdbguard.embedders import Embedder
from vdbguard.progress import ProgressSink, Silent
from vdbguard.transforms.base import Transform

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingProfile:
    """How many synthetic (template) and real (placed-PII) sentences of each kind the attacks learn from."""

    n_pii: int
    n_clean: int
    n_real_pii: int = 0
    n_real_clean: int = 0
    verdict_records: int = 1500
    """PII and clean sentences each, from the real-text calibration split, that the fused verdict is fitted on:
    1,500 clean ones place a 2% cutoff on 30 of them."""
    seed: int = 0

    def corpus(self, user_texts: Sequence[str] = ()) -> list[LabelledText]:
        from vdbguard.corpus import build_corpus  # here: loading trained attacks needs no corpus generators

        return build_corpus(
            self.n_pii,
            self.n_clean,
            seed=self.seed,
            user_texts=user_texts,
            n_real_pii=self.n_real_pii,
            n_real_clean=self.n_real_clean,
        )


PROFILES: dict[str, TrainingProfile] = {
    "default": TrainingProfile(n_pii=4000, n_clean=4000, n_real_pii=6000, n_real_clean=6000),
    "small": TrainingProfile(n_pii=800, n_clean=800, n_real_pii=800, n_real_clean=800, verdict_records=400),
}


@functools.lru_cache(maxsize=4)
def _profile_corpus(profile: TrainingProfile) -> tuple[LabelledText, ...]:
    """Built once per process: the scan needs it for training and again for the verdict's cache key."""
    return tuple(profile.corpus())


def training_digest(profile: TrainingProfile | str) -> str:
    """The hash of the corpus a profile's attacks learn from (without user texts): keys what depends on them.

    Building the corpus takes seconds, so its hash is kept on disk, keyed by the profile and by everything
    the corpus is built from (see ``cached_from_corpus``).
    """
    profile = PROFILES[profile] if isinstance(profile, str) else profile
    return cached_corpus_hash(repr(profile), lambda: _profile_corpus(profile))


PACKAGED_MODELS = ("trained-minilm",)
"""Folders of fast-tier models and verdicts trained ahead for a packaged embedder, each with ``embedder.json``
recording the fingerprint probes' embeddings that recognise that embedder on any machine."""


def model_folders(embedder: Embedder, cache: Path | None = None) -> list[Path]:
    """Where trained models for ``embedder`` are looked for: the user's cache first, then what shipped with vdbguard
    for it (so a first scan on the packaged MiniLM trains nothing). Training writes to the first."""
    folders = [(cache or cache_root()) / "models" / embedder.fingerprint]
    for name in PACKAGED_MODELS:
        folder = packaged_file(name)
        recorded = folder / "embedder.json"
        if recorded.exists() and embedder.computes_like(json.loads(recorded.read_text())["probes"]):
            folders.append(folder)
    return folders


def training_notice(
    embedder: Embedder, attack_names: Sequence[str], corpus: Sequence[LabelledText], cache: Path
) -> str:
    """What a first scan with this embedder is about to do, for how long, and where the result stays."""
    sample = [item.text for item in corpus[:: max(1, len(corpus) // 64)]]
    started = time.perf_counter()
    embedder.encode(sample)
    minutes = (time.perf_counter() - started) / len(sample) * len(corpus) / 60
    return (
        f"first use of {embedder.name}: training {', '.join(attack_names)} on {len(corpus):,} sentences "
        f"(about {max(1, round(minutes))} min to embed them on this machine, then training); "
        f"cached in {cache} for later scans. `vdbguard warmup` does this ahead of a scheduled job"
    )


def _defense_key(defense: Transform) -> str:
    description = json.dumps({"name": defense.name, **defense.params()}, sort_keys=True, default=str)
    return hashlib.sha256(description.encode()).hexdigest()[:12]


def protected_embeddings(
    defense: Transform,
    embedder: Embedder,
    corpus: Sequence[LabelledText],
    progress: ProgressSink | None = None,
    cache: Path | None = None,
) -> np.ndarray:
    """The corpus as an attacker who knows the pipeline would see it after ``defense``: its whole write path, the text
    stage (redaction), the embedder, then the vector stage (a chain's noise, say)."""

    def embed(texts: list[str]) -> np.ndarray:
        items = [replace(item, text=text) for item, text in zip(corpus, texts, strict=True)]
        return embed_corpus(embedder, items, progress, cache)

    return defense.write_path([item.text for item in corpus], embed)


@contextmanager
def _training_lock(folder: Path, name: str) -> Iterator[None]:
    """Held while one process looks for model ``name`` in ``folder`` and trains it if missing; another process
    (a second scan, a test worker) waits, then finds it cached. Without ``fcntl`` (Windows) both may train."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _cached(folders: Sequence[Path], name: str) -> Path | None:
    return next((folder / name for folder in folders if (folder / name / "COMPLETE").exists()), None)


def _train(
    cls: type[Attack],
    embedder: Embedder,
    corpus: Sequence[LabelledText],
    embeddings: np.ndarray,
    progress: ProgressSink,
    directory: Path,
) -> Attack:
    """``cls`` fitted on ``corpus`` and saved whole to ``directory`` (a staging folder renamed into place)."""
    attack = cls()
    attack.embedder = embedder
    with progress.task(f"Training {cls.name}", attack.training_steps(len(corpus))) as advance:
        attack.fit(corpus, embeddings, progress=advance)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=directory.parent))
    attack.save(staging)
    (staging / "COMPLETE").touch()
    try:
        os.replace(staging, directory)
    except OSError:  # another process cached the same model first: keep theirs
        shutil.rmtree(staging, ignore_errors=True)
    return attack


def trained_attacks(
    embedder: Embedder,
    attack_names: Sequence[str],
    profile: TrainingProfile | str = "default",
    user_texts: Sequence[str] = (),
    cache_dir: Path | None = None,
    progress: ProgressSink | None = None,
    defense: Transform | None = None,
) -> list[Attack]:
    """Load each attack from the cache, training (and caching) the ones that are missing.

    With ``defense``, the attacker is *adaptive*: it trains on corpus embeddings protected by that
    transform (same key/strength), as an attacker who knows the pipeline would.
    """
    profile = PROFILES[profile] if isinstance(profile, str) else profile
    progress = progress or Silent()
    cache = cache_dir or cache_root()
    if user_texts:
        corpus: Sequence[LabelledText] = profile.corpus(user_texts)
        digest = corpus_hash(corpus)
    else:  # built only if an attack has to be trained
        corpus, digest = (), training_digest(profile)
    embeddings: np.ndarray | None = None
    attacks = []
    folders = model_folders(embedder, cache)
    if defense is not None or user_texts:
        folders = folders[:1]  # what shipped learned from the plain corpus
    for name in attack_names:
        cls = load_attack_class(name, embedder.name)
        name = cls.name  # "strongest" resolves to a real attack, and caches under that attack's name
        suffix = f"-{_defense_key(defense)}" if defense is not None else ""
        folder_name = f"{name}-v{cls.version}-{digest[:16]}{suffix}"
        pretrained = cls.pretrained(embedder) if defense is None and not user_texts else None
        if pretrained is not None:
            attacks.append(pretrained)
            continue
        if cls.zero_shot:  # nothing to learn, so no corpus to embed (20,000 sentences: ~30 CPU-minutes on mpnet)
            attack = cls()
            attack.embedder = embedder
            attacks.append(attack)
            continue
        trained = _cached(folders, folder_name)
        if trained is None:
            with _training_lock(folders[0], folder_name):  # a scan beside this one trains it once, not twice
                trained = _cached(folders, folder_name)
                if trained is None:
                    if not corpus:
                        corpus = list(_profile_corpus(profile))
                    if embeddings is None:
                        logger.warning("%s", training_notice(embedder, attack_names, corpus, folders[0]))
                        embeddings = (
                            embed_corpus(embedder, corpus, progress, cache)
                            if defense is None
                            else protected_embeddings(defense, embedder, corpus, progress, cache)
                        )
                    attacks.append(_train(cls, embedder, corpus, embeddings, progress, folders[0] / folder_name))
                    continue
        attack = cls.load(trained)
        attack.embedder = embedder
        attacks.append(attack)
    return attacks
