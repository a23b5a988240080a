"""What every attack is: trained on (text, embedding) pairs, then run on stored vectors alone."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np

from vdbguard.corpus import LabelledText
from vdbguard.embedders import Embedder
from vdbguard.pii import PiiType

Progress = Callable[[int], None]
CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class Inference:
    """What one attack learned about one vector, before any detector looks at it."""

    recovered_text: str = ""
    recovered_tokens: tuple[tuple[str, float], ...] = ()
    type_scores: Mapping[PiiType, float] = field(default_factory=dict)
    # (type, value, score) for PII an attack recovered as a value, e.g. a name ranked first by slot search
    recovered_pii: tuple[tuple[PiiType, str, float], ...] = ()
    # secret exposure in bits (Carlini et al.) per known secret value, keyed by PII type
    exposure_bits: Mapping[PiiType, float] = field(default_factory=dict)
    # sensitive attributes that are not PII types (sex, age band, author): attribute -> (value, probability)
    attributes: Mapping[str, tuple[str, float]] = field(default_factory=dict)


def argument(default: Any = None, *, factory: Callable[[], Any] | None = None) -> Any:
    """A constructor argument that is not a setting (an object, a path, a thread count): ``save`` does not keep it."""
    if factory is not None:
        return field(default_factory=factory, metadata={"setting": False})
    return field(default=default, metadata={"setting": False})


def learned(default: Any = None, *, factory: Callable[[], Any] | None = None) -> Any:
    """What ``fit`` learns or a run measures: not a constructor argument, kept by ``save`` in its own way."""
    if factory is not None:
        return field(default_factory=factory, init=False, repr=False)
    return field(default=default, init=False, repr=False)


def _default(setting: dataclasses.Field[Any]) -> Any:
    if setting.default_factory is not dataclasses.MISSING:
        return setting.default_factory()
    return setting.default


class Attack(ABC):
    """An attack plugin. Subclasses are registered under the ``vdbguard.attacks`` entry point group.

    A subclass is a dataclass (``eq=False``: attacks compare by identity) whose fields declare its settings once:
    they are the constructor's arguments, what ``save`` keeps and ``load`` passes back. Fields made with
    :func:`argument` are passed but not kept; fields made with :func:`learned` are state, not arguments.
    ``version`` is part of the cache key: bump it whenever training changes what gets saved.
    ``embedder`` is bound by the trainer before ``fit``/``infer``: black-box attacks query it to
    re-embed their guesses (it is the target model; the attack never sees the stored text).
    """

    embedder: Embedder | None = None
    encoder_queries: int = 0  # texts a black-box search re-embedded with the target model, over all infer() calls

    name: ClassVar[str]
    description: ClassVar[str]
    version: ClassVar[int] = 1
    kind: ClassVar[str] = "inversion"  # "inversion" recovers text; "probe" scores attributes
    rank: ClassVar[int] = 0  # `--attack strongest` falls back to the highest rank for embedders nobody measured
    # learns nothing from the corpus (it searches with the target embedder): retraining it on protected
    # vectors changes nothing, so an adaptive version maps protected vectors back instead (evaluate.defense)
    zero_shot: ClassVar[bool] = False
    threshold: float
    _metrics: dict[str, float]

    @classmethod
    def settings(cls) -> tuple[str, ...]:
        """The constructor's arguments that ``save`` keeps under their own names and ``load`` passes back."""
        if not dataclasses.is_dataclass(cls):
            return ()
        return tuple(f.name for f in dataclasses.fields(cls) if f.init and f.metadata.get("setting", True))

    @abstractmethod
    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        """Train on labelled texts and their embeddings (rows L2-normalised)."""

    def training_steps(self, items: int) -> int | None:
        """How many times ``fit`` on ``items`` texts calls its progress callback (None: unknown), for a total."""
        return None

    @abstractmethod
    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        """Attack stored vectors; one Inference per row.

        ``known_texts`` is the owner's stored text per row, when the owner has it. Only owner-side
        audits use it (secret exposure ranks the *known* secret); inversion attacks must ignore it.
        """

    def save(self, directory: Path) -> None:
        """Keep the settings and metrics (an attack that learns weights saves them too)."""
        self.write_config(directory)

    @classmethod
    def load(cls, directory: Path) -> Attack:
        return cls.from_config(directory)[0]

    @classmethod
    def pretrained(cls, embedder: Embedder) -> Attack | None:
        """A model packaged with vdbguard for ``embedder``, used instead of training on the corpus; None if none."""
        return None

    def metrics(self) -> dict[str, float]:
        """Held-out quality measured during fit, so a report can say how strong the attack was."""
        return dict(getattr(self, "_metrics", {}))

    def verdict_settings(self) -> dict[str, Any]:
        """What a scan's verdict key holds of this attack beside its threshold: its metrics, and each setting changed
        from its default that they do not already say. An attack at its defaults keys as it did before its settings
        were declared, so existing states are not re-attacked for nothing."""
        metrics = self.metrics()
        fields = {f.name: f for f in dataclasses.fields(self)} if dataclasses.is_dataclass(self) else {}
        changed = {
            name: value
            for name in self.settings()
            if name not in metrics and name != "threshold" and (value := getattr(self, name)) != _default(fields[name])
        }
        return {**metrics, **changed}

    def write_config(self, directory: Path, state: Mapping[str, Any] | None = None) -> None:
        """Write config.json beside the saved weights: the ``settings``, what fit learned, and the metrics."""
        directory.mkdir(parents=True, exist_ok=True)
        settings = {name: getattr(self, name) for name in self.settings()}
        (directory / CONFIG_FILE).write_text(json.dumps({**settings, **(state or {}), "metrics": self.metrics()}))

    @staticmethod
    def read_config(directory: Path) -> dict[str, Any]:
        return json.loads((directory / CONFIG_FILE).read_text())

    @classmethod
    def from_config(cls, directory: Path, **arguments: Any) -> tuple[Self, dict[str, Any]]:
        """A new attack built from the saved ``settings`` (and ``arguments``), metrics restored; and the config.
        A setting the config lacks (saved before it existed) takes its default."""
        config = cls.read_config(directory)
        attack = cls(**{name: config[name] for name in cls.settings() if name in config}, **arguments)
        attack._metrics = config.get("metrics", {})
        return attack, config


def with_record_budget(attack: Attack, seconds: float) -> Attack:
    """``attack`` limited to ``seconds`` of CPU per record, if it takes a budget (``max_seconds``) and has none
    set; other attacks run as they are."""
    if seconds and "max_seconds" in attack.settings() and not attack.max_seconds:  # type: ignore[attr-defined]
        attack.max_seconds = seconds  # type: ignore[attr-defined]
    return attack


def labelled_split(
    items: Sequence[LabelledText], embeddings: np.ndarray, seed: int, share: float = 0.8
) -> tuple[list[LabelledText], np.ndarray, np.ndarray, np.ndarray]:
    """The items that carry labels (user texts do not), their unit vectors, and a seeded train/calibration split."""
    keep = [i for i, item in enumerate(items) if item.source != "user"]
    order = np.random.default_rng(seed).permutation(len(keep))
    cut = int(len(keep) * share)
    return [items[i] for i in keep], l2_normalise(embeddings[keep]), order[:cut], order[cut:]


_limited = threading.local()


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Fitting a small linear model is thousands of small products, each of which two BLAS threads only slow down:
    on two cores a probe fitted in 0.14 s took 0.02 s on one thread (measured; more when a detector worker runs).
    Free inside another such block (setting the limit costs a millisecond or two)."""
    from threadpoolctl import threadpool_limits

    if getattr(_limited, "depth", 0):
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        _limited.depth = 1
        try:
            yield
        finally:
            _limited.depth = 0


@dataclass(frozen=True)
class CalibratedProbe:
    """A linear probe whose raw score is Platt-scaled on held-out rows, so ``slope·score + intercept`` is a logit."""

    weights: np.ndarray
    bias: float
    slope: float
    intercept: float
    auc: float  # of the raw score on the calibration rows

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, train: np.ndarray, calibration: np.ndarray, c: float) -> CalibratedProbe:
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score

        with one_blas_thread():
            probe = LogisticRegression(C=c, max_iter=2000).fit(x[train], y[train])
            weights, bias = probe.coef_[0].astype(np.float32), float(probe.intercept_[0])
            scores = x[calibration] @ weights + bias
            slope, intercept = platt(scores, y[calibration])
        auc = round(float(roc_auc_score(y[calibration], scores)), 4)
        return cls(weights, bias, slope, intercept, auc)


def platt(scores: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The slope and intercept that turn a probe's raw score into a logit, fitted on held-out rows (Platt)."""
    from sklearn.linear_model import LogisticRegression

    fitted = LogisticRegression(C=1e4).fit(scores[:, None], y)
    return float(fitted.coef_[0, 0]), float(fitted.intercept_[0])


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Stores differ (Qdrant may hand back raw or normalised vectors); attacks see unit vectors."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
