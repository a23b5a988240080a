"""White-box gradient inversion (Song & Raghunathan, CCS 2020, "relaxed optimisation"): the text behind a
vector, recovered by gradient descent through the embedding model itself.

For an open model whose weights the scanner holds (the sentence-transformers model loaded by
``vdbguard.embedders.Embedder``), each input position of a relaxed sentence (one per entry of ``lengths``) gets a
vector of logits over the vocabulary. The soft input at a position is ``softmax(logits / T) @ word_embeddings``;
the model's own transformer, pooling and normalisation turn the soft sequence into a sentence vector, and Adam pushes
the logits so that vector's cosine with the target rises. ``T`` is annealed from ``start_temperature``
to ``end_temperature`` so the soft tokens harden into one-hot ones. Each position is then projected to
its argmax token. Optionally (``refine_rounds``) a greedy discrete search swaps a position for one of its
``candidates`` runners-up, or drops it, re-embedding every variant with real token ids, to close the
gap the relaxation leaves (on MiniLM it raised cosine ~0.02 but not token F1, so it is off by default).
With several ``lengths`` the recovery whose re-embedding is closest to the target wins.

Output: a bag of recovered words (``recovered_text``; mean pooling is nearly order-blind, so word order
means little) and ``recovered_tokens`` scored by how much the recovery's cosine drops when the word is
left out, mapped through a measured calibration (``word_score``) to the share of such words that were
really in the text. Words whose removal lowers the cosine by ``min_importance`` or less are dropped:
only ~4 % of them were in the text.

Limits: it needs the model's weights (white-box); it is slow on CPU (the cost grows with
``steps`` x length x vocabulary); it restricts itself to whole-word tokens of a WordPiece / BPE
vocabulary, so names that the tokenizer splits into pieces are found, at best, by their first piece;
it finds *a* word bag the model maps close to the target, often with topic words right and rare
tokens (digits, surnames) wrong, so it is weaker than the trained bag-of-words inverter on text like
the training corpus, but needs no training and no corpus at all. ``fit`` trains nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from vdbguard.attacks.base import Attack, Inference, Progress, l2_normalise, learned
from vdbguard.corpus import LabelledText
from vdbguard.embedders import Embedder
from vdbguard.errors import VdbguardError

_WORDLIKE = re.compile(r"[A-Za-z0-9]+")


@dataclass
class _WhiteBox:
    """The parts of a sentence-transformers model that gradient inversion needs."""

    model: Any  # the Hugging Face transformer (accepts inputs_embeds)
    after: list[Any]  # sentence-transformers modules after the transformer (pooling, dense, normalise)
    tokenizer: Any
    word_embeddings: torch.Tensor  # (V, H) rows for the allowed vocabulary
    vocabulary_ids: torch.Tensor  # (V,) token ids of those rows
    prefix_ids: list[int]  # special tokens before the text, e.g. [CLS]
    suffix_ids: list[int]  # and after it, e.g. [SEP]
    pad_id: int

    @classmethod
    def of(cls, embedder: Embedder) -> _WhiteBox:
        modules = list(embedder.model)
        first = modules[0]
        model, tokenizer = getattr(first, "auto_model", None), getattr(first, "tokenizer", None)
        if model is None or tokenizer is None or not hasattr(model, "get_input_embeddings"):
            raise VdbguardError(
                f"gradient inversion needs a transformer sentence-transformers model; {embedder.name} is not one",
                "use a white-box sentence-transformers model or another attack",
            )
        model.eval()
        table = model.get_input_embeddings().weight.detach()
        marker = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("x"))
        wrapped = tokenizer("x")["input_ids"]
        at = wrapped.index(marker[0])
        tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        ids = [i for i, token in enumerate(tokens) if _word(token)]
        ids = [i for i in ids if i < table.shape[0] and i not in tokenizer.all_special_ids]
        vocabulary = torch.tensor(ids, dtype=torch.long)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        return cls(
            model=model,
            after=modules[1:],
            tokenizer=tokenizer,
            word_embeddings=table[vocabulary].contiguous(),
            vocabulary_ids=vocabulary,
            prefix_ids=wrapped[:at],
            suffix_ids=wrapped[at + len(marker) :],
            pad_id=pad,
        )

    def pooled(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        mask = features["attention_mask"]
        output = self.model(**features).last_hidden_state
        state: dict[str, Any] = {"token_embeddings": output, "attention_mask": mask}
        for module in self.after:
            state = module(state)
        return torch.nn.functional.normalize(state["sentence_embedding"], dim=-1)

    def embed_soft(self, soft: torch.Tensor) -> torch.Tensor:
        """Sentence vectors for soft inputs (B, L, H): special tokens wrapped around as the tokenizer would."""
        table = self.model.get_input_embeddings().weight
        batch = soft.shape[0]
        prefix = table[self.prefix_ids].expand(batch, -1, -1)
        suffix = table[self.suffix_ids].expand(batch, -1, -1)
        inputs = torch.cat([prefix, soft, suffix], dim=1)
        mask = torch.ones(inputs.shape[:2], dtype=torch.long)
        return self.pooled({"inputs_embeds": inputs, "attention_mask": mask})

    def embed_ids(self, sequences: Sequence[Sequence[int]], chunk: int = 256) -> torch.Tensor:
        """Sentence vectors for token-id sequences (content only; special tokens are added here)."""
        outputs = []
        for start in range(0, len(sequences), chunk):
            part = [[*self.prefix_ids, *s, *self.suffix_ids] for s in sequences[start : start + chunk]]
            width = max(len(s) for s in part)
            ids = torch.full((len(part), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(part), width), dtype=torch.long)
            for row, s in enumerate(part):
                ids[row, : len(s)] = torch.tensor(s)
                mask[row, : len(s)] = 1
            with torch.inference_mode():
                outputs.append(self.pooled({"input_ids": ids, "attention_mask": mask}))
        return torch.cat(outputs)

    def words(self, token_ids: Sequence[int]) -> list[str]:
        return [
            self.tokenizer.convert_tokens_to_string([t]).strip()
            for t in self.tokenizer.convert_ids_to_tokens(list(token_ids))
        ]


def _word(token: str) -> bool:
    """Whole-word tokens only: no WordPiece continuations (##x), BPE/SentencePiece word starts kept."""
    return bool(_WORDLIKE.fullmatch(token.removeprefix("Ġ").removeprefix("▁")))


# How often a recovered word is in the source text, by how much leaving it out lowers the recovery's cosine.
# Measured with MiniLM and the defaults on 48 synthetic notes of the training locales (384 words, bins
# <=0.01: 4 % in the text, 0.01-0.02: 23 %, 0.02-0.05: 28 %, 0.05-0.075: 48 %, 0.075-0.1: 74 %, >0.1: 85 %).
_CALIBRATION: tuple[tuple[float, float], ...] = (
    (0.0, 0.04),
    (0.01, 0.05),
    (0.02, 0.25),
    (0.04, 0.3),
    (0.065, 0.5),
    (0.09, 0.75),
    (0.12, 0.85),
)


def word_score(importance: float) -> float:
    """A recovered word's score: the measured share of words with this leave-one-out importance that
    really were in the text (piecewise linear between calibration points)."""
    xs, ys = zip(*_CALIBRATION, strict=True)
    return round(float(np.interp(importance, xs, ys)), 4)


@dataclass(eq=False)
class GradientInversion(Attack):
    """Song & Raghunathan (CCS 2020) white-box relaxed-optimisation inversion; see the module docstring."""

    name: ClassVar[str] = "gradient"
    description: ClassVar[str] = "Song & Raghunathan 2020 white-box inversion: gradient descent on soft input tokens"
    version: ClassVar[int] = 1
    kind: ClassVar[str] = "inversion"
    zero_shot: ClassVar[bool] = True
    rank: ClassVar[int] = 5

    steps: int = 100
    lengths: tuple[int, ...] = (8,)  # of the relaxed sentences tried per record; the closest wins
    learning_rate: float = 0.3
    start_temperature: float = 1.0
    end_temperature: float = 0.05
    refine_rounds: int = 0
    candidates: int = 4
    min_importance: float = 0.01
    batch_size: int = 16
    threads: int = 0
    threshold: float = 0.5
    seed: int = 0
    _box: _WhiteBox | None = learned()
    _box_of: Embedder | None = learned()

    def __post_init__(self) -> None:
        self.lengths = tuple(self.lengths)
        if self.steps < 1 or not self.lengths or min(self.lengths) < 1:
            raise ValueError(f"steps and lengths must be >= 1, got {self.steps} and {self.lengths}")

    # ----- training: nothing to learn --------------------------------------------------------------

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        """Nothing to train: the attack uses the target model's own weights at inference time."""

    def metrics(self) -> dict[str, float]:
        return {"steps": self.steps, "max_length": max(self.lengths)}

    # ----- inference ---------------------------------------------------------------------------------

    def _white_box(self) -> _WhiteBox:
        if self.embedder is None:
            raise VdbguardError("gradient inversion needs the target embedder bound before infer()")
        if self._box is None or self._box_of is not self.embedder:
            self._box, self._box_of = _WhiteBox.of(self.embedder), self.embedder
        return self._box

    def _relaxed(self, box: _WhiteBox, targets: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Optimise soft tokens; return the final logits (B, L, V) and the argmax token rows (B, L)."""
        generator = torch.Generator().manual_seed(self.seed)
        logits = 0.01 * torch.randn(targets.shape[0], length, len(box.vocabulary_ids), generator=generator)
        logits.requires_grad_(True)
        optimiser = torch.optim.Adam([logits], lr=self.learning_rate)
        ratio = self.end_temperature / self.start_temperature
        for step in range(self.steps):
            temperature = self.start_temperature * ratio ** (step / max(self.steps - 1, 1))
            soft = torch.softmax(logits / temperature, dim=-1) @ box.word_embeddings
            loss = (1 - (box.embed_soft(soft) * targets).sum(-1)).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        logits = logits.detach()
        return logits, logits.argmax(-1)

    def _refine(
        self, box: _WhiteBox, target: torch.Tensor, rows: list[int], logits: torch.Tensor
    ) -> tuple[list[int], float]:
        """Greedy discrete search from the argmax projection: per round, the best single swap or drop."""
        runners_up = logits.topk(self.candidates, dim=-1).indices.tolist()  # (L, k) rows into the vocabulary
        current = list(zip(rows, runners_up, strict=True))  # (chosen row, its position's runners-up)
        best = float(box.embed_ids([self._ids(box, rows)])[0] @ target)
        for _ in range(self.refine_rounds):
            variants: list[list[tuple[int, list[int]]]] = []
            for position, (chosen, others) in enumerate(current):
                if len(current) > 1:
                    variants.append(current[:position] + current[position + 1 :])
                variants += [
                    [*current[:position], (row, others), *current[position + 1 :]] for row in others if row != chosen
                ]
            if not variants:
                break
            scores = box.embed_ids([self._ids(box, [row for row, _ in v]) for v in variants]) @ target
            top = int(scores.argmax())
            if float(scores[top]) <= best + 1e-4:
                break
            best, current = float(scores[top]), variants[top]
        return [row for row, _ in current], best

    @staticmethod
    def _ids(box: _WhiteBox, rows: Sequence[int]) -> list[int]:
        return box.vocabulary_ids[list(rows)].tolist()

    def _importance(self, box: _WhiteBox, target: torch.Tensor, rows: list[int], cosine: float) -> list[float]:
        """How much the recovery's cosine drops when each position is left out."""
        if len(rows) == 1:
            return [cosine]
        without = [rows[:i] + rows[i + 1 :] for i in range(len(rows))]
        scores = box.embed_ids([self._ids(box, v) for v in without]) @ target
        return [cosine - float(s) for s in scores]

    def invert(self, vectors: np.ndarray) -> list[tuple[list[str], list[float], float]]:
        """Per vector: recovered words (in position order), their importance, and the re-embedded cosine."""
        box = self._white_box()
        previous = torch.get_num_threads()
        parameters = [*box.model.parameters(), *(p for module in box.after for p in module.parameters())]
        trainable = [p.requires_grad for p in parameters]
        if self.threads:  # on a busy machine one thread can be 10x faster than two fighting for cores
            torch.set_num_threads(self.threads)
        try:
            for parameter in parameters:  # gradients flow to the soft tokens only; the shared model is untouched
                parameter.requires_grad_(False)
            return self._invert(box, vectors)
        finally:
            for parameter, flag in zip(parameters, trainable, strict=True):
                parameter.requires_grad_(flag)
            torch.set_num_threads(previous)

    def _invert(self, box: _WhiteBox, vectors: np.ndarray) -> list[tuple[list[str], list[float], float]]:
        targets_all = torch.from_numpy(l2_normalise(vectors))
        expected = self.embedder.dimension if self.embedder is not None else None
        if targets_all.shape[1] != expected:
            raise VdbguardError(
                f"vectors have {targets_all.shape[1]} dimensions but the embedder makes {expected}",
                "gradient inversion only works against the model that produced the vectors",
            )
        results: list[tuple[list[str], list[float], float]] = []
        for start in range(0, len(targets_all), self.batch_size):
            targets = targets_all[start : start + self.batch_size]
            best: list[tuple[list[int], float]] = [([], -2.0)] * len(targets)
            for length in self.lengths:
                logits, rows = self._relaxed(box, targets, length)
                for i in range(len(targets)):
                    found = self._refine(box, targets[i], rows[i].tolist(), logits[i])
                    if found[1] > best[i][1]:
                        best[i] = found
            for i, (rows_i, cosine) in enumerate(best):
                importance = self._importance(box, targets[i], rows_i, cosine)
                results.append((box.words(self._ids(box, rows_i)), importance, cosine))
        return results

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        if len(vectors) == 0:
            return []
        inferences = []
        for words, importance, _cosine in self.invert(vectors):
            scored: dict[str, float] = {}
            for word, drop in zip(words, importance, strict=True):
                if drop > self.min_importance:  # measured: words that matter less are almost never in the text
                    scored[word] = max(word_score(drop), scored.get(word, 0.0))
            tokens = tuple(sorted(scored.items(), key=lambda item: -item[1]))
            text = " ".join(word for word in dict.fromkeys(words) if word in scored)
            inferences.append(Inference(recovered_text=text, recovered_tokens=tokens))
        return inferences
