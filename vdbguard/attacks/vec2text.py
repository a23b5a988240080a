"""Vec2Text-style iterative correction (Morris et al., EMNLP 2023, "Text Embeddings Reveal (Almost) As Much As
Text"): guess, re-embed the guess with the *target* embedder, correct, repeat, keeping the best guesses.

What is built here, exactly. Vec2Text trains a second model, the corrector, conditioned on (target embedding,
hypothesis embedding, their difference) and the hypothesis text. Training that needs hypotheses decoded by the
base model for the whole corpus plus a second fine-tuning run, which does not fit a CPU budget. This attack
keeps the Vec2Text loop and its black-box re-embedding, and replaces the trained corrector with an
embedding-guided search:

1. **Hypotheses**: the generative base model (:class:`~vdbguard.attacks.generative.GenerativeInversion`, trained
   with the same configuration, so its temp-folder checkpoint is reused) decodes ``candidates`` beams.
2. **Re-embed and score**: every guess goes through ``self.embedder.encode`` (the target model as a black box);
   the score is its cosine to the stored vector.
3. **Correct**, per hypothesis in the beam:
   - *re-conditioning* (training-free stand-in for the corrector's difference input): decode again from
     ``normalise(target + alpha * (target - embedding(hypothesis)))``, i.e. push past what the guess missed;
   - *word edits*: delete each word; at the ``edit_positions`` words whose deletion hurts least, substitute,
     and next to them insert, each of the ``edit_words`` words a linear probe (ridge regression from
     embeddings to words, Song & Raghunathan's bag-of-words attack) ranks highest for
     ``probe(target) - probe(embedding(hypothesis))``: words the target has and the guess lacks.
4. **Names** (``name_search``): where the PERSON probe of a slot-search model
   (:class:`~vdbguard.attacks.slot_search.SlotSearchAttack`, trained alongside) says the vector names someone, every
   run of gazetteer names in a guess is replaced by each of its top first x last name pairs, and re-embedding
   chooses. The decoder alone spells names it saw in training; this puts the names the embedding holds into the
   sentence the decoder wrote.
5. **Sequence-level beam**: keep the ``beam_width`` distinct texts closest to the target; stop after ``steps``
   rounds or once a guess reaches cosine ``stop_cosine``.

Limits: words outside the corpus vocabulary can only come from the decoder or the name gazetteer, so unseen numbers
are rarely recovered exactly, and a name goes in only where the guess already has one; each step costs ~``1 +
beam_width * (words + 3 * edit_positions * edit_words)`` embedder calls per record, so deep inversion is slow
(records/s is in ``metrics()`` after fit). The score of every recovered word is the final cosine, and the default
``threshold`` (0.9) means recovered text counts as evidence only when it re-embeds to within cosine 0.9 of the
stored vector.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from vdbguard.attacks.base import Attack, Inference, Progress, argument, l2_normalise, learned
from vdbguard.attacks.decoder import torch_threads
from vdbguard.attacks.generative import GenerativeInversion
from vdbguard.attacks.slot_search import SlotSearchAttack
from vdbguard.corpus import LabelledText

_EDGE = re.compile(r"^(\W*)(.*?)(\W*)$", re.DOTALL)


def _core(token: str) -> tuple[str, str, str]:
    """``"(Doe),"`` -> ``("(", "Doe", "),")``: edits swap the word and keep the punctuation around it."""
    match = _EDGE.match(token)
    assert match is not None
    return match.group(1), match.group(2), match.group(3)


class _Probe:
    """Ridge regression from unit embeddings to word indicators: scores which words a vector holds."""

    def __init__(self, vocabulary: list[str], weights: np.ndarray) -> None:
        self.vocabulary = vocabulary
        self.index = {word: i for i, word in enumerate(vocabulary)}
        self.weights = weights.astype(np.float32)  # (dim + 1, V)

    @classmethod
    def fit(cls, texts: Sequence[str], embeddings: np.ndarray, size: int, ridge: float = 1.0) -> _Probe:
        from scipy import sparse

        counts = Counter(core for text in texts for core in {_core(t)[1] for t in text.split()} if core)
        vocabulary = [word for word, _ in counts.most_common(size)]
        index = {word: i for i, word in enumerate(vocabulary)}
        rows, cols = [], []
        for row, text in enumerate(texts):
            for column in {index[c] for c in (_core(t)[1] for t in text.split()) if c in index}:
                rows.append(row)
                cols.append(column)
        y = sparse.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(len(texts), len(vocabulary)))
        x = np.hstack([embeddings.astype(np.float64), np.ones((len(texts), 1))])
        gram = x.T @ x + ridge * np.eye(x.shape[1])
        weights = np.linalg.solve(gram, np.asarray((y.T @ x).T))
        return cls(vocabulary, weights)

    def scores(self, vectors: np.ndarray) -> np.ndarray:
        return np.hstack([vectors, np.ones((len(vectors), 1), np.float32)]) @ self.weights


@dataclass(eq=False)
class Vec2TextInversion(Attack):
    """Vec2Text iterative correction (Morris et al., EMNLP 2023) with a search in place of the trained corrector.

    Guesses from the generative base model are re-embedded with the target embedder (black box), corrected by
    re-decoding from ``target + alpha * (target - guess)`` and by word deletions/substitutions/insertions that
    a bag-of-words probe proposes, and the ``beam_width`` texts closest in cosine are kept for ``steps`` rounds
    or until cosine ``stop_cosine``. Limits: it can only insert words seen in training (or that the decoder
    writes), it polishes rather than rewrites, and it costs hundreds of embedder calls per record.
    """

    name: ClassVar[str] = "vec2text"
    description: ClassVar[str] = "Vec2Text-style iterative correction: re-embed guesses, edit, keep the closest"
    version: ClassVar[int] = 2
    kind: ClassVar[str] = "inversion"
    rank: ClassVar[int] = 22  # below adversarial decoding, which read more on every embedder measured
    steps: int = 3
    beam_width: int = 3
    candidates: int = 4
    edit_positions: int = 2
    edit_words: int = 10
    alpha: float = 1.0
    stop_cosine: float = 0.99
    probe_vocabulary: int = 12000
    chunk_size: int = 16
    threshold: float = 0.9
    threads: int | None = argument()
    base: GenerativeInversion = argument(factory=GenerativeInversion)  # one trained already is used as it is
    names: SlotSearchAttack | None = argument()  # a slot-search model trained already is used as it is, like base
    name_search: bool = True
    name_locales: Sequence[str] | None = None
    _name_words: frozenset[str] = learned(frozenset())
    probe: _Probe | None = learned()
    _metrics: dict[str, float] = learned(factory=dict)

    def __post_init__(self) -> None:
        self.name_locales = list(self.name_locales) if self.name_locales is not None else None
        if self.names is not None:
            self._use_names(self.names)

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        self.base.embedder = self.embedder
        if self.base.model is None:  # a base passed in already trained (e.g. on a GPU) is used as it is
            self.base.fit(items, embeddings, progress)
        texts = [item.text for item in items]
        self.probe = _Probe.fit(texts, l2_normalise(embeddings), self.probe_vocabulary)
        if self.name_search and self.names is None:
            names = SlotSearchAttack(locales=self.name_locales)
            names.embedder = self.embedder
            names.fit(items, embeddings)
            self._use_names(names)
        self._metrics = {f"base_{k}": v for k, v in self.base.metrics().items()}
        if self.names is not None:
            self._metrics |= {f"names_{k}": v for k, v in self.names.metrics().items()}
        held = list(range(min(16, len(texts))))
        if self.embedder is not None and held:
            started = time.perf_counter()
            predictions = [i.recovered_text for i in self.infer(embeddings[held])]
            seconds = time.perf_counter() - started
            from vdbguard.text import token_f1

            self._metrics["records_per_second"] = round(len(held) / seconds, 3)
            # training rows, so an optimistic figure: it shows the search works, not how well it generalises
            self._metrics["train_sample_token_f1"] = round(
                float(np.mean([token_f1(p, texts[i]) for p, i in zip(predictions, held, strict=True)])), 4
            )

    def _use_names(self, names: SlotSearchAttack) -> None:
        self.names = names
        self._name_words = frozenset(names.first_names) | frozenset(names.last_names)

    # ------------------------------------------------------------------ the search

    def _name_edits(self, text: str, firsts: Sequence[str], lasts: Sequence[str]) -> list[str]:
        """The text with each run of capitalised gazetteer names replaced by every candidate "First Last"; a
        text without one gets the best pair inserted at every position (the next pass refines it)."""
        tokens = text.split()
        if not firsts or not lasts:
            return []
        is_name = [bool(core) and core[0].isupper() and core in self._name_words for _, core, _ in map(_core, tokens)]
        out = []
        start = 0
        while start < len(tokens):
            if not is_name[start]:
                start += 1
                continue
            end = start
            while end < len(tokens) and is_name[end] and end - start < 3:
                end += 1
            lead, trail = _core(tokens[start])[0], _core(tokens[end - 1])[2]
            for first in firsts:
                for last in lasts:
                    out.append(" ".join([*tokens[:start], f"{lead}{first} {last}{trail}", *tokens[end:]]))
            start = end
        if not out:
            best = f"{firsts[0]} {lasts[0]}"
            out = [" ".join([*tokens[:i], best, *tokens[i:]]) for i in range(len(tokens) + 1)]
        return out

    @staticmethod
    def _deletions(text: str) -> list[str]:
        words = text.split()
        return [" ".join(words[:i] + words[i + 1 :]) for i in range(len(words))]

    def _proposals(self, text: str, target_scores: np.ndarray, hypothesis_scores: np.ndarray) -> list[str]:
        assert self.probe is not None
        present = {_core(t)[1] for t in text.split()}
        ranking = np.argsort(-(target_scores - hypothesis_scores))
        words = []
        for column in ranking:
            word = self.probe.vocabulary[column]
            if word not in present:
                words.append(word)
            if len(words) >= self.edit_words:
                break
        return words

    def _substitutions(self, text: str, positions: list[int], words: list[str]) -> list[str]:
        tokens = text.split()
        out = []
        for i in positions:
            lead, _, trail = _core(tokens[i])
            for word in words:
                out.append(" ".join([*tokens[:i], lead + word + trail, *tokens[i + 1 :]]))
            for where in (i, i + 1):
                for word in words:
                    out.append(" ".join([*tokens[:where], word, *tokens[where:]]))
        return out

    def correct(self, targets: np.ndarray, hypotheses: Sequence[Sequence[str]]) -> list[tuple[str, float]]:
        """Run the correction loop from the given starting guesses; best text and its cosine per target row."""
        assert self.embedder is not None, "bind the target embedder first (the trainer does)"
        targets = l2_normalise(targets)
        n = len(targets)
        seen: list[dict[str, float]] = [{} for _ in range(n)]
        embedded: dict[str, np.ndarray] = {}  # every guess is embedded once, whichever row proposed it

        def score(candidates: list[list[str]]) -> None:
            fresh = sorted({t for texts in candidates for t in texts if t not in embedded})
            if fresh:
                vectors = self.embedder.encode([t if t.strip() else "." for t in fresh])
                embedded.update(zip(fresh, vectors, strict=True))
            for row, texts in enumerate(candidates):
                for t in texts:
                    if t not in seen[row]:
                        seen[row][t] = float(embedded[t] @ targets[row])

        def beam(row: int) -> list[str]:
            return sorted(seen[row], key=lambda t: -seen[row][t])[: self.beam_width]

        score([list(h) for h in hypotheses])
        named = [] if self.names is None else self.names.name_candidates(targets)
        gate = self.names.probe_gate if self.names is not None else 1.0

        def place_names(rows: list[int]) -> None:
            wanted = [row for row in rows if named and named[row][0] >= gate]
            for _ in range(2):  # a name inserted by the first pass is refined over the whole grid by the second
                candidates: list[list[str]] = [[] for _ in range(n)]
                for row in wanted:
                    candidates[row] = [e for text in beam(row) for e in self._name_edits(text, *named[row][1:])]
                score(candidates)

        place_names(list(range(n)))
        if self.steps:
            assert self.probe is not None, "fit() or load() first"
            target_scores = self.probe.scores(targets)
        for _ in range(self.steps):
            active = [row for row in range(n) if max(seen[row].values()) < self.stop_cosine]
            if not active:
                break
            beams = {row: beam(row) for row in active}
            # 1. re-conditioning: decode from the target pushed away from the best guess's embedding
            best = np.stack([embedded[beams[row][0]] for row in active])
            shifted = l2_normalise(targets[active] + self.alpha * (targets[active] - best))
            redecoded = self.base.decode(shifted)
            # 2. deletions, which also tell which words are least useful
            candidates: list[list[str]] = [[] for _ in range(n)]
            for k, row in enumerate(active):
                candidates[row].append(redecoded[k])
                for text in beams[row]:
                    candidates[row] += self._deletions(text)
            score(candidates)
            # 3. substitutions and insertions at the least useful positions, with the probe's missing words
            candidates = [[] for _ in range(n)]
            for row in active:
                for text in beams[row]:
                    tokens = text.split()
                    hypothesis_scores = self.probe.scores(embedded[text][None])[0]
                    words = self._proposals(text, target_scores[row], hypothesis_scores)
                    loss = [seen[row].get(" ".join(tokens[:i] + tokens[i + 1 :]), -1.0) for i in range(len(tokens))]
                    positions = list(np.argsort(loss)[::-1][: self.edit_positions]) if tokens else []
                    candidates[row] += self._substitutions(text, [int(p) for p in positions], words)
                    if not tokens:
                        candidates[row] += words
            score(candidates)
            place_names(active)
        return [max(seen[row].items(), key=lambda kv: kv[1]) for row in range(n)]

    def _search(self, targets: np.ndarray) -> list[tuple[str, float]]:
        beams = self.base.hypotheses(targets, beam_width=self.candidates)
        greedy = self.base.decode(targets, beam_width=1) if self.candidates > 1 else [""] * len(targets)
        starts = [[g, *(text for text, _, _ in found)] for g, found in zip(greedy, beams, strict=True)]
        return self.correct(targets, [[t for t in texts if t] or [""] for texts in starts])

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        targets = l2_normalise(vectors)
        results = []
        for start in range(0, len(targets), self.chunk_size):
            with torch_threads(self.threads):
                found = self._search(targets[start : start + self.chunk_size])
            for text, cosine in found:
                confidence = round(max(0.0, cosine), 4)
                words = tuple((w, confidence) for w in (_core(t)[1].lower() for t in text.split()) if w)
                results.append(Inference(recovered_text=text, recovered_tokens=words))
        return results

    # ------------------------------------------------------------------ persistence

    def save(self, directory: Path) -> None:
        assert self.probe is not None, "fit() first"
        directory.mkdir(parents=True, exist_ok=True)
        self.base.save(directory / "base")
        if self.names is not None:
            self.names.save(directory / "names")
        np.savez(directory / "probe.npz", weights=self.probe.weights.astype(np.float16))
        self.write_config(directory, {"vocabulary": self.probe.vocabulary})

    @classmethod
    def load(cls, directory: Path) -> Vec2TextInversion:
        attack, config = cls.from_config(directory, base=GenerativeInversion.load(directory / "base"))
        with np.load(directory / "probe.npz") as data:
            attack.probe = _Probe(config["vocabulary"], data["weights"].astype(np.float32))
        if (directory / "names").is_dir():
            attack._use_names(SlotSearchAttack.load(directory / "names"))
        return attack
