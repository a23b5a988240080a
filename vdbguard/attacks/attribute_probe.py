"""Attribute inference beyond PII types: condition family, sex, age band and authorship from a vector alone.

Song & Raghunathan (CCS 2020, "Information Leakage in Embedding Models", section 5) show that a linear
classifier on sentence embeddings recovers sensitive attributes of the text, including *who wrote it*
from a few labelled examples per author; SPARSE reports sex (~88 %) and disease (~70 %) inferred from
clinical-note embeddings (MIMIC). This probe measures the same leaks on vdbguard's synthetic corpus:

* ``medical_family``: which family of condition (mental health, cancer, cardiovascular, ...) the text
  is about, mapped from the literal condition / drug values the corpus generator inserted; ``none``
  when it names none. Its "not none" probability is also reported as the MEDICAL type score, and the
  likeliest family as a recovered MEDICAL value, so the existing scanner shows it as evidence.
* ``sex``: of the person the text names, from titles (Mr / Mrs / Ms / Miss) and from Faker's
  gender-specific first-name lists (the lists the corpus draws names from); ``none`` without a person.
  Texts whose people are of both sexes, or whose name is in both lists, are left out of training.
* ``age_band``: from the year of a date of birth in the text, relative to today; ``none`` without one.
* ``author`` (only after ``fit_authors``): few-shot authorship attribution from labelled vectors
  that the user supplies (10-50 per author), a multinomial logistic regression as in the paper.

Each attribute is one multinomial logistic regression on the unit-normalised vector; ``metrics()``
reports held-out accuracy, accuracy when the attribute is present, macro one-vs-rest AUC and the
majority-class baselines. Limits: the labels come from synthetic template text (Faker names, one
condition per note, DOB literals), so numbers here say what *these* embeddings leak about *such* text,
not what they leak about real clinical notes; sex is the name's conventional gender, never the person's
own; age is read from a literal date of birth, which embeddings encode only roughly; authorship is
measured on synthetic writers whose only difference is style, which sentence embeddings keep weakly.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
from faker import Faker
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from vdbguard.attacks.base import Attack, Inference, Progress, l2_normalise, learned
from vdbguard.corpus import DEFAULT_LOCALES, LabelledText, synthetic_clean, synthetic_pii
from vdbguard.corpus.labels import ATTRIBUTES, NONE, labels_of
from vdbguard.pii import PiiType

_GREETINGS = (
    "Hi all,", "Hey team -", "Hello,", "Morning!", "Dear colleagues,", "Folks,", "Hiya,", "Good afternoon,", "Team,",
    "Hi everyone!", "Quick one:", "All -",
)  # fmt: skip
_SIGNED = ("Cheers, {first}", "Thanks! -{initial}", "Best regards, {first} {last}", "- {first}", "Regards, {last}")
_UNSIGNED = ("Cheers", "Thanks!", "Best regards", "Sent from my phone", "thx", "Talk soon", "Ta", "KR", "Rgds", "-")
_TICS = (
    "FWIW", "tbh", "as discussed", "just a heads up", "per my last email", "no rush", "ASAP", "if that makes sense",
    "let me know", "btw", "all good", "as always",
)  # fmt: skip


def synthetic_authors(
    n_authors: int = 10, per_author: int = 60, seed: int = 0, signed: bool = True
) -> tuple[list[str], list[str]]:
    """Short messages by ``n_authors`` synthetic writers and the author of each, for authorship tests.

    Content comes from one shared pool (vdbguard's clean synthetic notes), so only *style* tells the
    authors apart: each has a habitual greeting, sign-off, verbal tic, casing and punctuation, used with
    author-specific probabilities. ``signed`` sign-offs carry the author's name, as real e-mail does.
    """
    rng = random.Random(seed)
    fake = Faker("en_US")
    fake.seed_instance(seed)
    pool = [item.text for item in synthetic_clean(n_authors * per_author * 2, seed)]
    texts: list[str] = []
    authors: list[str] = []
    for _ in range(n_authors):
        first, last = fake.first_name(), fake.last_name()
        greeting, tic = rng.choice(_GREETINGS), rng.choice(_TICS)
        sign_off = rng.choice(_SIGNED if signed else _UNSIGNED).format(first=first, last=last, initial=first[0])
        p_greet, p_sign, p_tic = rng.uniform(0.3, 0.9), rng.uniform(0.3, 0.9), rng.uniform(0.2, 0.7)
        lower, exclaim, emoticon = rng.random() < 0.3, rng.random() < 0.3, rng.choice(("", "", ":)", ";)", "!!"))
        for _ in range(per_author):
            parts = [greeting] if rng.random() < p_greet else []
            body = " ".join(rng.sample(pool, rng.choice((1, 1, 2))))
            if rng.random() < p_tic:
                body = f"{tic} - {body}" if rng.random() < 0.5 else f"{body} ({tic})"
            if exclaim:
                body = re.sub(r"\.(?=\s|$)", "!", body)
            parts.append(body + (f" {emoticon}" if emoticon and rng.random() < 0.5 else ""))
            if rng.random() < p_sign:
                parts.append(sign_off)
            text = " ".join(parts)
            texts.append(text.lower() if lower else text)
            authors.append(f"{first} {last}")
    return texts, authors


class _Linear:
    """A fitted multinomial logistic regression kept as plain arrays (saved as npz, never pickled)."""

    def __init__(self, classes: Sequence[str], weights: np.ndarray, bias: np.ndarray) -> None:
        self.classes = list(classes)
        self.weights = np.asarray(weights, dtype=np.float32)
        self.bias = np.asarray(bias, dtype=np.float32)

    @classmethod
    def fit(cls, x: np.ndarray, labels: Sequence[str], regularisation: float) -> _Linear:
        model = LogisticRegression(C=regularisation, max_iter=3000).fit(x, np.asarray(labels))
        weights, bias = model.coef_, model.intercept_
        if len(model.classes_) == 2:  # sklearn keeps one row for two classes; softmax([0, z]) == sigmoid(z)
            weights = np.vstack([np.zeros_like(weights[0]), weights[0]])
            bias = np.array([0.0, bias[0]])
        return cls([str(c) for c in model.classes_], weights, bias)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        logits = x @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)


def _scores(model: _Linear, x: np.ndarray, truth: Sequence[str]) -> dict[str, float]:
    """Accuracy, accuracy given the attribute is present, macro OvR AUC, and majority baselines."""
    probabilities = model.probabilities(x)
    truth_array = np.asarray(truth)
    predicted = np.asarray(model.classes)[probabilities.argmax(axis=1)]
    out = {
        "n": float(len(truth_array)),
        "accuracy": float(np.mean(predicted == truth_array)),
        "majority_baseline": float(max(Counter(truth).values()) / len(truth)),
    }
    present = truth_array != NONE
    values = [i for i, c in enumerate(model.classes) if c != NONE]
    if present.any() and len(values) > 1:
        given = np.asarray(model.classes)[np.asarray(values)[probabilities[present][:, values].argmax(axis=1)]]
        out["n_present"] = float(present.sum())
        out["accuracy_given_present"] = float(np.mean(given == truth_array[present]))
        out["majority_baseline_given_present"] = float(
            max(Counter(truth_array[present].tolist()).values()) / present.sum()
        )
    if NONE in model.classes and 0 < present.sum() < len(present):
        presence = 1 - probabilities[:, model.classes.index(NONE)]
        out["presence_auc"] = float(roc_auc_score(present, presence))
    observed = [c for c in model.classes if c in set(truth)]
    if len(observed) > 1:
        columns = [model.classes.index(c) for c in observed]
        aucs = [roc_auc_score(truth_array == model.classes[c], probabilities[:, c]) for c in columns]
        out["macro_auc"] = float(np.mean(aucs))
    return {k: round(v, 4) for k, v in out.items()}


@dataclass(eq=False)
class AttributeProbe(Attack):
    """Song & Raghunathan (CCS 2020) attribute inference; see the module docstring."""

    name: ClassVar[str] = "attribute-probe"
    description: ClassVar[str] = "linear probes for condition family, sex, age band and (few-shot) authorship"
    version: ClassVar[int] = 1
    kind: ClassVar[str] = "probe"
    threshold: float = 0.5
    regularisation: float = 4.0
    min_pii_sentences: int = 3000
    min_examples: int = 5
    seed: int = 0
    models: dict[str, _Linear] = learned(factory=dict)
    _metrics: dict[str, float] = learned(factory=dict)

    # ----- training ----------------------------------------------------------------------------------

    def _augment(self, items: Sequence[LabelledText], embeddings: np.ndarray) -> tuple[list[LabelledText], np.ndarray]:
        """Top the PII sentences up to ``min_pii_sentences`` with freshly generated ones: the trainer's small
        corpus has too few dates of birth and conditions per family to learn from."""
        missing = self.min_pii_sentences - sum(item.source == "synthetic-pii" for item in items)
        if missing <= 0 or self.embedder is None:
            return list(items), embeddings
        seed = self.seed + 104_729  # a stream of its own, not the training corpus's
        extra = [*synthetic_pii(missing, seed, DEFAULT_LOCALES), *synthetic_clean(missing // 4, seed)]
        vectors = self.embedder.encode([item.text for item in extra])
        return [*items, *extra], np.concatenate([embeddings, vectors])

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        labelled = [i for i, item in enumerate(items) if item.source != "user"]  # user texts carry no labels
        items, embeddings = self._augment([items[i] for i in labelled], np.asarray(embeddings)[labelled])
        x = l2_normalise(embeddings)
        labels = [labels_of(item) for item in items]
        order = np.random.default_rng(self.seed).permutation(len(items))
        cut = int(len(items) * 0.8)
        train, test = order[:cut], order[cut:]
        self.models, self._metrics = {}, {}
        for attribute in ATTRIBUTES:
            rows_train = [i for i in train if labels[i][attribute] is not None]
            rows_test = [i for i in test if labels[i][attribute] is not None]
            counts = Counter(labels[i][attribute] for i in rows_train)
            usable = {label for label, n in counts.items() if n >= self.min_examples}
            rows_train = [i for i in rows_train if labels[i][attribute] in usable]
            rows_test = [i for i in rows_test if labels[i][attribute] in usable]
            if len(usable) < 2 or not usable - {NONE}:
                continue
            model = _Linear.fit(x[rows_train], [str(labels[i][attribute]) for i in rows_train], self.regularisation)
            self.models[attribute] = model
            if rows_test:
                truth = [str(labels[i][attribute]) for i in rows_test]
                for key, value in _scores(model, x[rows_test], truth).items():
                    self._metrics[f"{attribute}_{key}"] = value
            if progress:
                progress(1)

    def fit_authors(self, vectors: np.ndarray, labels: Sequence[str]) -> None:
        """Few-shot authorship: a linear classifier on labelled example vectors (10-50 per author); afterwards
        ``predict_attributes`` also names the likely author of each vector."""
        labels = [str(label) for label in labels]
        if len(labels) != len(vectors):
            raise ValueError(f"{len(vectors)} vectors but {len(labels)} labels")
        counts = Counter(labels)
        if len(counts) < 2 or min(counts.values()) < 2:
            raise ValueError("authorship needs at least two authors with at least two examples each")
        self.models["author"] = _Linear.fit(l2_normalise(vectors), labels, self.regularisation)

    # ----- inference ---------------------------------------------------------------------------------

    def distributions(self, vectors: np.ndarray) -> dict[str, tuple[list[str], np.ndarray]]:
        """Per attribute: its labels and an (n, labels) matrix of probabilities."""
        x = l2_normalise(vectors)
        return {attribute: (model.classes, model.probabilities(x)) for attribute, model in self.models.items()}

    def predict_attributes(self, vectors: np.ndarray) -> list[dict[str, tuple[str, float]]]:
        """Per vector: attribute -> (most likely label, its probability); "none" means not mentioned."""
        rows: list[dict[str, tuple[str, float]]] = [{} for _ in range(len(vectors))]
        for attribute, (classes, probabilities) in self.distributions(vectors).items():
            for row, column in enumerate(probabilities.argmax(axis=1)):
                rows[row][attribute] = (classes[column], round(float(probabilities[row, column]), 4))
        return rows

    def predict_authors(self, vectors: np.ndarray) -> list[tuple[str, float]]:
        if "author" not in self.models:
            raise ValueError("call fit_authors() first")
        return [row["author"] for row in self.predict_attributes(vectors)]

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        """The medical attribute maps onto a PII type: P(a condition is named) as the MEDICAL type score, and
        the likeliest condition family as a recovered MEDICAL value. Sex, age band and author go into
        ``attributes`` whenever the likeliest value is one (not "none")."""
        if len(vectors) == 0:
            return []
        predicted = self.predict_attributes(vectors)
        others = [{k: v for k, v in row.items() if k != "medical_family" and v[0] != NONE} for row in predicted]
        if "medical_family" not in self.models:
            return [Inference(attributes=row) for row in others]
        classes, probabilities = self.distributions(vectors)["medical_family"]
        families = [i for i, c in enumerate(classes) if c != NONE]
        presence = 1 - probabilities[:, classes.index(NONE)] if NONE in classes else probabilities.sum(axis=1)
        results = []
        for row in range(len(vectors)):
            best = max(families, key=lambda c: probabilities[row, c])
            recovered = ((PiiType.MEDICAL, f"{classes[best]} condition", round(float(probabilities[row, best]), 4)),)
            results.append(
                Inference(
                    type_scores={PiiType.MEDICAL: round(float(presence[row]), 4)},
                    recovered_pii=recovered,
                    attributes=others[row],
                )
            )
        return results

    def evaluate(self, items: Sequence[LabelledText], vectors: np.ndarray) -> dict[str, float]:
        """The fit-time metrics, on any labelled sentences and their vectors (e.g. held-out locales)."""
        labels = [labels_of(item) for item in items]
        x = l2_normalise(vectors)
        out: dict[str, float] = {}
        for attribute, model in self.models.items():
            if attribute == "author":
                continue
            rows = [i for i, row in enumerate(labels) if row[attribute] in model.classes]
            if rows:
                truth = [str(labels[i][attribute]) for i in rows]
                out |= {f"{attribute}_{k}": v for k, v in _scores(model, x[rows], truth).items()}
        return out

    # ----- persistence -------------------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        arrays = {}
        for attribute, model in self.models.items():
            arrays[f"{attribute}.weights"], arrays[f"{attribute}.bias"] = model.weights, model.bias
        np.savez(directory / "probes.npz", **arrays)
        self.write_config(
            directory, {"classes": {attribute: model.classes for attribute, model in self.models.items()}}
        )

    @classmethod
    def load(cls, directory: Path) -> AttributeProbe:
        attack, config = cls.from_config(directory)
        with np.load(directory / "probes.npz", allow_pickle=False) as arrays:
            for attribute, classes in config["classes"].items():
                attack.models[attribute] = _Linear(classes, arrays[f"{attribute}.weights"], arrays[f"{attribute}.bias"])
        return attack
