"""Bag-of-words inversion (Song & Raghunathan, CCS 2020): which words was this vector made from?

A multi-label MLP maps an embedding to independent word probabilities over a vocabulary learned
from the training corpus. Words above the F1-best ``word_threshold`` form the recovered text; a PII
word found in it counts as evidence only at probability ``threshold`` (default 0.5) or more.
It recovers topic words well and rare tokens (names, digits) poorly,
which is why it is paired with the PII probes.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from vdbguard.attacks.base import Attack, Inference, Progress, l2_normalise, learned
from vdbguard.cache import atomic_write
from vdbguard.corpus import LabelledText

if TYPE_CHECKING:  # torch is imported for training only
    from torch import nn

_WEIGHTS_FILE = "weights.npz"
_WORD = re.compile(r"[a-z][a-z'-]*[a-z]|[a-z]")


def content_words(text: str) -> list[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return [word for word in _WORD.findall(text.lower()) if len(word) > 1 and word not in STOP_WORDS]


def _model(dimension: int, vocabulary: int, hidden: int) -> nn.Module:
    from torch import nn

    return nn.Sequential(nn.Linear(dimension, hidden), nn.GELU(), nn.Dropout(0.1), nn.Linear(hidden, vocabulary))


class _Weights(NamedTuple):
    """The trained network as numpy arrays: inference needs no torch, whose import is most of what a re-scan of
    a few changed records would otherwise load."""

    hidden: np.ndarray
    hidden_bias: np.ndarray
    out: np.ndarray
    out_bias: np.ndarray

    @classmethod
    def of(cls, state: dict[str, Any]) -> _Weights:
        return cls(*(np.asarray(state[key], dtype=np.float32) for key in _STATE_KEYS))

    def logits(self, x: np.ndarray) -> np.ndarray:
        from scipy.special import erf

        h = x @ self.hidden.T + self.hidden_bias
        h *= 0.5 * (1.0 + erf(h / np.float32(np.sqrt(2.0))))  # GELU, exact as torch's default
        return h @ self.out.T + self.out_bias


_STATE_KEYS = ("0.weight", "0.bias", "3.weight", "3.bias")  # the two Linear layers of ``_model``


@dataclass(eq=False)
class BagOfWordsInversion(Attack):
    name: ClassVar[str] = "bag-of-words"
    description: ClassVar[str] = "Song & Raghunathan 2020 multi-label inversion: ranked recovered words"
    version: ClassVar[int] = 3
    rank: ClassVar[int] = 10
    max_vocabulary: int = 8000
    hidden: int = 512
    epochs: int = 15
    min_steps: int = 2000
    max_words: int = 12
    threshold: float = 0.5  # a recovered PII word's score that makes a finding
    seed: int = 0
    word_threshold: float = learned(0.3)
    vocabulary: list[str] = learned(factory=list)
    weights: _Weights | None = learned()
    _metrics: dict[str, float] = learned(factory=dict)

    def _targets(self, items: Sequence[LabelledText]) -> np.ndarray:
        index = {word: i for i, word in enumerate(self.vocabulary)}
        targets = np.zeros((len(items), len(self.vocabulary)), dtype=np.float32)
        for row, item in enumerate(items):
            for word in content_words(item.text):
                if word in index:
                    targets[row, index[word]] = 1.0
        return targets

    def _epochs(self, train_items: int) -> int:
        return max(self.epochs, -(-self.min_steps // -(-train_items // 128)))

    def training_steps(self, items: int) -> int:
        return self._epochs(items - max(1, items // 10))

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        import torch
        from torch import nn

        torch.manual_seed(self.seed)
        counts = Counter(word for item in items for word in set(content_words(item.text)))
        self.vocabulary = [word for word, n in counts.most_common(self.max_vocabulary) if n >= 2]
        x = torch.from_numpy(l2_normalise(embeddings))
        y = torch.from_numpy(self._targets(items))
        order = np.random.default_rng(self.seed).permutation(len(items))
        held_out = max(1, len(items) // 10)
        test_idx, train_idx = order[:held_out], order[held_out:]

        network = _model(x.shape[1], len(self.vocabulary), self.hidden)
        optimiser = torch.optim.AdamW(network.parameters(), lr=2e-3, weight_decay=1e-4)
        loss_fn = nn.BCEWithLogitsLoss()
        generator = torch.Generator().manual_seed(self.seed)
        for _ in range(self._epochs(len(train_idx))):
            network.train()
            for batch in torch.randperm(len(train_idx), generator=generator).split(128):
                rows = torch.from_numpy(train_idx)[batch]
                optimiser.zero_grad()
                loss_fn(network(x[rows]), y[rows]).backward()
                optimiser.step()
            if progress:
                progress(1)
        self.weights = _Weights.of({key: value.detach().numpy() for key, value in network.state_dict().items()})
        self._calibrate_threshold(x[test_idx].numpy(), y[test_idx].numpy())

    def _logits(self, x: np.ndarray) -> np.ndarray:
        assert self.weights is not None, "fit() or load() first"
        return self.weights.logits(x)

    def _calibrate_threshold(self, x: np.ndarray, y: np.ndarray) -> None:
        """Pick the word threshold with the best held-out F1, and keep that F1 as the attack's strength."""
        from scipy.special import expit

        probabilities, truth = expit(self._logits(x)), y.astype(bool)
        best = (0.0, 0.0, 0.0, self.word_threshold)
        for threshold in np.arange(0.1, 0.9, 0.05):
            predicted = probabilities >= threshold
            hits = (predicted & truth).sum()
            precision = hits / max(predicted.sum(), 1)
            recall = hits / max(truth.sum(), 1)
            f1 = 2 * precision * recall / max(precision + recall, 1e-9)
            if f1 > best[0]:
                best = (f1, precision, recall, float(threshold))
        f1, precision, recall, self.word_threshold = best
        self._metrics = {
            "heldout_word_f1": round(float(f1), 4),
            "heldout_word_precision": round(float(precision), 4),
            "heldout_word_recall": round(float(recall), 4),
            "word_threshold": round(self.word_threshold, 2),
            "vocabulary": len(self.vocabulary),
        }

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        from scipy.special import expit, logit

        logits = self._logits(l2_normalise(vectors))
        results = [Inference() for _ in range(len(logits))]
        # most rows recover no word at all: the probability only of the words near or past the threshold
        rows, columns = np.nonzero(logits >= logit(self.word_threshold) - 1e-3)
        scores = expit(logits[rows, columns])
        reached = scores >= self.word_threshold
        rows, columns, scores = rows[reached], columns[reached], scores[reached]
        order = np.lexsort((columns, -scores, rows))  # by row, then most probable first
        rows, columns, scores = rows[order], columns[order], scores[order]
        bounds = np.flatnonzero(np.diff(rows, prepend=-1, append=-1))  # where each row's run starts, and the end
        for start, end in itertools.pairwise(bounds):
            picked = range(start, min(end, start + self.max_words))
            tokens = tuple((self.vocabulary[columns[i]], round(float(scores[i]), 4)) for i in picked)
            results[rows[start]] = Inference(
                recovered_text=" ".join(word for word, _ in tokens), recovered_tokens=tokens
            )
        return results

    def save(self, directory: Path) -> None:
        assert self.weights is not None, "fit() first"
        directory.mkdir(parents=True, exist_ok=True)
        _write_weights(directory, self.weights)
        self.write_config(directory, {"word_threshold": self.word_threshold, "vocabulary": self.vocabulary})

    @classmethod
    def load(cls, directory: Path) -> BagOfWordsInversion:
        attack, config = cls.from_config(directory)
        attack.word_threshold = config["word_threshold"]
        attack.vocabulary = config["vocabulary"]
        if (directory / _WEIGHTS_FILE).is_file():
            with np.load(directory / _WEIGHTS_FILE) as stored:
                attack.weights = _Weights.of(dict(stored))
        else:  # saved before weights.npz, as a torch state dict: the same weights, kept as numpy from now on
            import torch

            attack.weights = _Weights.of(torch.load(directory / "model.pt", weights_only=True))
            with contextlib.suppress(OSError):  # a read-only cache loads through torch each time
                _write_weights(directory, attack.weights)
        return attack


def _write_weights(directory: Path, weights: _Weights) -> None:
    with atomic_write(directory / _WEIGHTS_FILE) as file:
        np.savez(file, **dict(zip(_STATE_KEYS, weights, strict=True)))
