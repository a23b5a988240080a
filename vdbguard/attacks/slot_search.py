"""Embedding-guided search for the person name in a vector: which first and last name was it made from?

Two stages, both trained on the project corpus only:

(a) **Closed-list classifier** over a gazetteer of every ASCII first and last name in Faker's person
    providers (all locales, ~16.8k first and ~14.8k last names). Each gazetteer name is embedded on its
    own with the target embedder; a bilinear scorer ``cos(x W, e(name))`` is trained with a sampled
    softmax on corpus sentences (W starts at the identity). Because names are scored through their own
    embeddings rather than one learned weight per name, it ranks names it never saw in training.
(b) **Re-embedding search** (black-box queries to the target embedder, as in the search-based attacks of
    Morris et al. 2023 and Li et al. 2023 "Sentence Embedding Leaks More Information than You Expect"):
    the top-k first and top-k last names are written, as "First Last", into a skeleton (the training
    sentence nearest to the vector, with its own name cut out), re-embedded, and the pair whose sentence
    lands closest to the vector, combined with the classifier's scores, wins.

Slots are only filled where a linear PERSON probe (Song & Raghunathan 2020) gives P(name) >= ``probe_gate``.
Each recovered value carries the probability that it appears in the source text, estimated on held-out
corpus rows as P(name present) (the Platt-calibrated probe) x P(this guess is right | a name is present)
(a logistic calibrator on the classifier and search margins): ``recovered_pii`` holds
``(PERSON, "First Last", P(both right))``, ``(PERSON, "First", P(first right))`` and
``(PERSON, "Last", P(last right))``; ``recovered_text`` is "First Last" and ``recovered_tokens`` the two
lower-cased parts with their probabilities.

Limits. Only names on the gazetteer can be recovered (a compound surname is scored on its last part,
like the evaluation harness does); a sentence naming two people yields one name; rows the probe does
not flag get nothing. The skeleton helps most when stored text resembles the corpus templates. Refining
costs ``top_k**2`` embedder queries per flagged row. Structured values are out of reach: on MiniLM the
digits of phone numbers and SSNs are not recoverable by inversion (0 % of phone digits for the
bag-of-words inverter), which is why their leak is measured as exposure given the known context
(vdbguard.attacks.secret_exposure) rather than recovered here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from vdbguard.attacks.base import (
    Attack,
    CalibratedProbe,
    Inference,
    Progress,
    l2_normalise,
    labelled_split,
    learned,
)
from vdbguard.corpus import LabelledText
from vdbguard.corpus.embedded import embed_list
from vdbguard.detectors.lexicon import capitalised_names
from vdbguard.pii import PiiType
from vdbguard.text import TITLES

__all__ = ["SlotSearchAttack", "split_person_name"]

_INITIAL = re.compile(r"^[A-Z]\.?$")
_SLOT = "\u27e8NAME\u27e9"  # stands for the name in a skeleton sentence
PARTS = ("first", "last", "full")


def split_person_name(value: str) -> tuple[str | None, str | None]:
    """("First", "Last") of a PERSON value; titles and middle initials dropped; a compound surname gives its
    last part (as the harness scores it). "Mr. Smith" -> (None, "Smith"); "Jane" -> ("Jane", None)."""
    tokens = value.replace(",", " ").split()
    titled = False
    while tokens and tokens[0].rstrip(".").lower() in TITLES:
        tokens, titled = tokens[1:], True
    tokens = [t for t in tokens if not _INITIAL.match(t)]
    if not tokens:
        return None, None
    if len(tokens) == 1:
        return (None, _last_part(tokens[0])) if titled else (tokens[0], None)
    return tokens[0], _last_part(tokens[-1])


def _last_part(name: str) -> str:
    return re.split(r"[-\s]", name)[-1] or name


@dataclass
class _Candidates:
    """Per flagged row: top-k first/last indices, their classifier cosines, and features for calibration."""

    first: np.ndarray  # (rows, k) gazetteer indices
    last: np.ndarray
    first_scores: np.ndarray  # (rows, k) cosines
    last_scores: np.ndarray


def _no_rows() -> np.ndarray:
    return np.zeros((0, 0), dtype=np.float32)


@dataclass(eq=False)
class SlotSearchAttack(Attack):
    """Recovers person names from vectors: closed-list bilinear classifier + re-embedding search.

    See the module docstring for the method and its limits. ``threshold`` applies to the calibrated
    probability of each recovered value (default 0.5).
    """

    name: ClassVar[str] = "slot-search"
    description: ClassVar[str] = "name slot search: gazetteer classifier + re-embedding refinement (PERSON values)"
    version: ClassVar[int] = 1
    kind: ClassVar[str] = "inversion"
    rank: ClassVar[int] = 5  # recovers names only, so `--attack strongest` should prefer a full inverter
    threshold: float = 0.5
    top_k: int = 5
    refine: bool = True
    refine_weight: float = 3.0
    probe_gate: float = 0.3
    locales: Sequence[str] | None = None
    epochs: int = 15
    negatives: int = 2048
    max_calibration: int = 300
    seed: int = 0
    first_names: list[str] = learned(factory=list)
    last_names: list[str] = learned(factory=list)
    first_vectors: np.ndarray = learned(factory=_no_rows)
    last_vectors: np.ndarray = learned(factory=_no_rows)
    w_first: np.ndarray = learned(factory=_no_rows)
    w_last: np.ndarray = learned(factory=_no_rows)
    probe_weights: np.ndarray = learned(factory=lambda: np.zeros(0, dtype=np.float32))
    probe_bias: float = learned(0.0)
    probe_platt: tuple[float, float] = learned((1.0, 0.0))
    skeletons: list[str] = learned(factory=list)
    skeleton_vectors: np.ndarray = learned(factory=_no_rows)
    # (mode, part) -> (coefficients, intercept); mode "refined" or "classifier"
    calibrators: dict[str, tuple[list[float], float]] = learned(factory=dict)
    _metrics: dict[str, float] = learned(factory=dict)

    def __post_init__(self) -> None:
        self.locales = tuple(self.locales) if self.locales is not None else None

    # ----- training ---------------------------------------------------------------------------------

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        if self.embedder is None:
            raise RuntimeError("slot-search queries the target embedder: bind attack.embedder before fit()")
        items, x, train, calibration = labelled_split(items, embeddings, self.seed)
        has_person = np.array([PiiType.PERSON in item.pii for item in items])
        if has_person[calibration].all() or not has_person[calibration].any():
            raise ValueError("slot-search needs sentences with and without person names to train on")
        probe = CalibratedProbe.fit(x, has_person, train, calibration, 4.0)
        self.probe_weights, self.probe_bias = probe.weights, probe.bias
        self.probe_platt = (probe.slope, probe.intercept)
        self._metrics["person_probe_auc"] = probe.auc

        self.first_names, self.last_names = capitalised_names(self.locales)
        self.first_vectors = l2_normalise(embed_list(self.embedder, self.first_names))
        self.last_vectors = l2_normalise(embed_list(self.embedder, self.last_names))
        if progress:
            progress(1)

        first_truth, last_truth = zip(*(self._truth(item) for item in items), strict=True)
        first_index = {n: i for i, n in enumerate(self.first_names)}
        last_index = {n: i for i, n in enumerate(self.last_names)}
        self.w_first = self._train_bilinear(x[train], [first_truth[i] for i in train], first_index, self.first_vectors)
        self.w_last = self._train_bilinear(x[train], [last_truth[i] for i in train], last_index, self.last_vectors)
        if progress:
            progress(1)

        person_rows = [i for i in train if has_person[i]]
        self.skeletons = [self._skeleton(items[i]) for i in person_rows]
        self.skeleton_vectors = x[person_rows]
        self._calibrate(x, [i for i in calibration if has_person[i]], first_truth, last_truth)
        if progress:
            progress(1)

    @staticmethod
    def _truth(item: LabelledText) -> tuple[frozenset[str], frozenset[str]]:
        firsts, lasts = set(), set()
        for value in item.values.get(PiiType.PERSON, ()):
            first, last = split_person_name(value)
            if first:
                firsts.add(first)
            if last:
                lasts.add(last)
        return frozenset(firsts), frozenset(lasts)

    @staticmethod
    def _skeleton(item: LabelledText) -> str:
        text = item.text
        for value in sorted(item.values.get(PiiType.PERSON, ()), key=len, reverse=True):
            text = text.replace(value, _SLOT)
        return text

    def _train_bilinear(
        self, x: np.ndarray, truth: Sequence[frozenset[str]], index: dict[str, int], names: np.ndarray
    ) -> np.ndarray:
        """W for score(x, name) = cos(x W, e(name)): sampled softmax over the gazetteer, W pulled to identity."""
        rows = [i for i, t in enumerate(truth) if any(n in index for n in t)]
        dimension = x.shape[1]
        if not rows:
            return np.eye(dimension, dtype=np.float32)
        generator = torch.Generator().manual_seed(self.seed)
        y = torch.tensor([index[min(n for n in truth[i] if n in index)] for i in rows])
        inputs = torch.from_numpy(np.ascontiguousarray(x[rows]))
        table = torch.from_numpy(names)
        identity = torch.eye(dimension)
        weights = torch.nn.Parameter(identity.clone())
        log_scale = torch.nn.Parameter(torch.tensor(3.0))
        optimiser = torch.optim.Adam([weights, log_scale], lr=3e-3)
        for _ in range(self.epochs):
            for batch in torch.randperm(len(rows), generator=generator).split(256):
                sampled = torch.randint(0, len(names), (self.negatives,), generator=generator)
                candidates = torch.unique(torch.cat([y[batch], sampled]))
                target = torch.searchsorted(candidates, y[batch])
                z = torch.nn.functional.normalize(inputs[batch] @ weights, dim=1)
                logits = z @ table[candidates].T * log_scale.exp()
                loss = torch.nn.functional.cross_entropy(logits, target) + 1e-3 * ((weights - identity) ** 2).sum()
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        return weights.detach().numpy().astype(np.float32)

    # ----- scoring ----------------------------------------------------------------------------------

    def person_probability(self, x: np.ndarray) -> np.ndarray:
        """Calibrated P(the text behind each vector names a person)."""
        slope, intercept = self.probe_platt
        return expit(slope * (x @ self.probe_weights + self.probe_bias) + intercept)

    def _candidates(self, x: np.ndarray) -> _Candidates:
        k = self.top_k
        out = {}
        for part, weights, table in (
            ("first", self.w_first, self.first_vectors),
            ("last", self.w_last, self.last_vectors),
        ):
            scores = l2_normalise(x @ weights) @ table.T
            top = np.argpartition(-scores, k, axis=1)[:, :k]
            top_scores = np.take_along_axis(scores, top, axis=1)
            order = np.argsort(-top_scores, axis=1)
            out[part] = (np.take_along_axis(top, order, axis=1), np.take_along_axis(top_scores, order, axis=1))
        return _Candidates(out["first"][0], out["last"][0], out["first"][1], out["last"][1])

    def _can_refine(self) -> bool:
        return self.refine and self.embedder is not None and len(self.skeletons) > 0

    def _refine(self, x: np.ndarray, c: _Candidates, refine: bool) -> tuple[np.ndarray, np.ndarray]:
        """Best (first, last) pair per row on classifier (+ re-embedding) scores; also the grid scores."""
        k = self.top_k
        grid = c.first_scores[:, :, None] + c.last_scores[:, None, :]  # (rows, k, k)
        if refine and len(x):
            nearest = (x @ self.skeleton_vectors.T).argmax(axis=1)
            texts = []
            for row in range(len(x)):
                skeleton = self.skeletons[nearest[row]]
                for a in c.first[row]:
                    for b in c.last[row]:
                        texts.append(skeleton.replace(_SLOT, f"{self.first_names[a]} {self.last_names[b]}"))
            embedded = l2_normalise(self.embedder.encode(texts)).reshape(len(x), k, k, -1)
            grid = grid + self.refine_weight * np.einsum("rabd,rd->rab", embedded, x)
        flat = grid.reshape(len(x), k * k)
        return flat.argmax(axis=1), flat

    def _features(self, c: _Candidates, best: np.ndarray, flat: np.ndarray, refined: bool) -> dict[str, np.ndarray]:
        """Calibration features per part: classifier top-1 cosine and margin (and the grid margin when refined)."""
        k = self.top_k
        first_pick, last_pick = best // k, best % k
        rows = np.arange(len(best))
        ordered = np.sort(flat, axis=1)
        grid_margin = ordered[:, -1] - ordered[:, -2] if flat.shape[1] > 1 else ordered[:, -1]
        common = [grid_margin] if refined else []

        def part(scores: np.ndarray, pick: np.ndarray) -> list[np.ndarray]:
            chosen = scores[rows, pick]
            runner_up = np.where(pick == 0, scores[:, 1], scores[:, 0]) if scores.shape[1] > 1 else 0 * chosen
            return [chosen, chosen - runner_up]

        f, la = part(c.first_scores, first_pick), part(c.last_scores, last_pick)
        return {
            "first": np.stack([*f, *common], axis=1),
            "last": np.stack([*la, *common], axis=1),
            "full": np.stack([*f, *la, *common], axis=1),
        }

    def _calibrate(
        self,
        x: np.ndarray,
        person_rows: Sequence[int],
        first_truth: Sequence[frozenset[str]],
        last_truth: Sequence[frozenset[str]],
    ) -> None:
        """P(the top guess for each part is in the text | the text names someone), on held-out rows.

        The unconditional probability an Inference reports is this times the PERSON probe's probability,
        so rows without a name are handled by the probe, which trains on every row, not by these few.
        """
        flagged = list(person_rows[: self.max_calibration])
        if not flagged:
            return
        xc = x[flagged]
        c = self._candidates(xc)
        modes = ("refined", "classifier") if self._can_refine() else ("classifier",)
        for mode in modes:
            best, flat = self._refine(xc, c, refine=mode == "refined")
            features = self._features(c, best, flat, refined=mode == "refined")
            firsts = [self.first_names[c.first[r, b // self.top_k]] for r, b in enumerate(best)]
            lasts = [self.last_names[c.last[r, b % self.top_k]] for r, b in enumerate(best)]
            labels = {
                "first": np.array([f in first_truth[i] for f, i in zip(firsts, flagged, strict=True)]),
                "last": np.array([la in last_truth[i] for la, i in zip(lasts, flagged, strict=True)]),
            }
            labels["full"] = labels["first"] & labels["last"]
            for part in PARTS:
                y = labels[part]
                if y.all() or not y.any():
                    rate = float(np.clip(y.mean(), 1e-3, 1 - 1e-3))
                    self.calibrators[f"{mode}:{part}"] = (
                        [0.0] * features[part].shape[1],
                        float(np.log(rate / (1 - rate))),
                    )
                else:
                    model = LogisticRegression(C=1.0, max_iter=2000).fit(features[part], y)
                    self.calibrators[f"{mode}:{part}"] = (
                        [float(v) for v in model.coef_[0]],
                        float(model.intercept_[0]),
                    )
            with_first = [r for r, i in enumerate(flagged) if first_truth[i]]
            with_last = [r for r, i in enumerate(flagged) if last_truth[i]]
            with_both = [r for r, i in enumerate(flagged) if first_truth[i] and last_truth[i]]
            for part, subset in (("first", with_first), ("last", with_last), ("full", with_both)):
                if subset:
                    self._metrics[f"heldout_{mode}_{part}_name_top1"] = round(float(labels[part][subset].mean()), 4)
        self._metrics["calibration_rows"] = len(flagged)

    def _probability(self, mode: str, part: str, features: np.ndarray) -> np.ndarray:
        coefficients, intercept = self.calibrators.get(f"{mode}:{part}", ([0.0] * features.shape[1], 0.0))
        return expit(features @ np.asarray(coefficients) + intercept)

    # ----- attack -----------------------------------------------------------------------------------

    def name_candidates(self, vectors: np.ndarray) -> list[tuple[float, list[str], list[str]]]:
        """Per vector: P(it names a person) and the classifier's ``top_k`` first and last names, best first.

        For attacks that place names into text of their own (vec2text) and let re-embedding choose.
        """
        if not self.first_names:
            raise RuntimeError("fit() or load() first")
        x = l2_normalise(vectors)
        c = self._candidates(x)
        return [
            (
                float(p),
                [self.first_names[i] for i in c.first[row]],
                [self.last_names[i] for i in c.last[row]],
            )
            for row, p in enumerate(self.person_probability(x))
        ]

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        if not self.first_names:
            raise RuntimeError("fit() or load() first")
        x = l2_normalise(vectors)
        results = [Inference() for _ in range(len(x))]
        person = self.person_probability(x)
        flagged = np.flatnonzero(person >= self.probe_gate)
        if not len(flagged):
            return results
        xf = x[flagged]
        c = self._candidates(xf)
        mode = "refined" if self._can_refine() else "classifier"
        best, flat = self._refine(xf, c, refine=mode == "refined")
        features = self._features(c, best, flat, refined=mode == "refined")
        p = {part: person[flagged] * self._probability(mode, part, features[part]) for part in PARTS}
        for r, row in enumerate(flagged):
            first = self.first_names[c.first[r, best[r] // self.top_k]]
            last = self.last_names[c.last[r, best[r] % self.top_k]]
            pf, pl, pfull = (round(float(p[part][r]), 4) for part in PARTS)
            results[row] = Inference(
                recovered_text=f"{first} {last}",
                recovered_tokens=((first.lower(), pf), (last.lower(), pl)),
                recovered_pii=(
                    (PiiType.PERSON, f"{first} {last}", pfull),
                    (PiiType.PERSON, first, pf),
                    (PiiType.PERSON, last, pl),
                ),
            )
        return results

    # ----- persistence ------------------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        if not self.first_names:
            raise RuntimeError("fit() first")
        directory.mkdir(parents=True, exist_ok=True)
        np.savez(
            directory / "arrays.npz",
            w_first=self.w_first,
            w_last=self.w_last,
            first_vectors=self.first_vectors.astype(np.float16),
            last_vectors=self.last_vectors.astype(np.float16),
            skeleton_vectors=self.skeleton_vectors.astype(np.float16),
            probe_weights=self.probe_weights,
        )
        config = {
            "probe_bias": self.probe_bias,
            "probe_platt": list(self.probe_platt),
            "first_names": self.first_names,
            "last_names": self.last_names,
            "skeletons": self.skeletons,
            "calibrators": self.calibrators,
        }
        self.write_config(directory, config)

    @classmethod
    def load(cls, directory: Path) -> SlotSearchAttack:
        attack, config = cls.from_config(directory)
        with np.load(directory / "arrays.npz") as arrays:
            attack.w_first, attack.w_last = arrays["w_first"], arrays["w_last"]
            attack.first_vectors = l2_normalise(arrays["first_vectors"])
            attack.last_vectors = l2_normalise(arrays["last_vectors"])
            attack.skeleton_vectors = l2_normalise(arrays["skeleton_vectors"])
            attack.probe_weights = arrays["probe_weights"]
        attack.probe_bias = config["probe_bias"]
        attack.probe_platt = (float(config["probe_platt"][0]), float(config["probe_platt"][1]))
        attack.first_names, attack.last_names = config["first_names"], config["last_names"]
        attack.skeletons = config["skeletons"]
        attack.calibrators = {k: (list(v[0]), float(v[1])) for k, v in config["calibrators"].items()}
        return attack
