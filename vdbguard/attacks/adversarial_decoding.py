"""Zero-shot inversion by adversarial decoding (ZSInvert: Zhang, Morris & Shmatikov, "Universal Zero-shot
Embedding Inversion", 2025): a language model proposes, the target embedder chooses.

SmolLM2-135M-Instruct (offline, see :mod:`vdbguard.attacks.decoder`) is asked for a short sentence. At each
step every beam's ``top_k`` most likely next tokens are appended, all candidates are re-embedded by the
target embedder in one batch, and the ``beam_width`` closest to the target vector survive; the language
model's key/value cache is reordered with them, so a step costs one token per beam. The hypothesis with the
highest cosine at any step wins. Then ``refine_rounds`` rounds ask the model to rewrite the best hypothesis
and search again (ZSInvert's paraphrase refinement); a rewrite is kept only if it is closer.

Residual polish (``polish_rounds``): what the target holds that the best hypothesis lacks is the residual
``target - (target . h) h`` of the hypothesis vector ``h``. Every whole word of the embedder's own vocabulary is
embedded once (cached on disk per model), the ``polish_words`` words closest to the residual are tried at the
end of the hypothesis and in place of the ``polish_positions`` words whose removal costs least, and the closest
variant is kept while it gains. It puts back rare words the language model would not propose, names among
them (for "Lesley Stephenson" the residual ranks ``stephenson`` first), and uses only the embedder as a black
box plus its tokenizer's vocabulary. What it adds, and costs, is measured in BENCHMARKS.md ("Zero-shot
adversarial decoding").

Spelling (``spell_positions``, version 8; off by default): the polish can put back only whole words of the
embedder's vocabulary, so a name off every list comes back as its first piece ("bala" for "Balakrishnan"). For
the ``spell_positions`` words whose removal costs most, SmolLM2 writes the longer words that begin with the word
where it stands (its first tokens constrained to spell the word, so the prompt does not end on a token boundary
the name lacks); words it finds more than ``spell_plausibility`` nats less likely than the word itself are
dropped ("Renewalde"), the embedder scores the rest in the sentence, and the closest replaces the word if it
comes ``spell_margin`` closer. The language model spells, the embedder chooses, and no name list is involved.
Under a time budget it runs only in what the search leaves. It is off because it did not pay on held-out names
(BENCHMARKS.md, "Spelling names out"): the language model rarely proposes the rare name
itself, and holding a third of the scan's budget back for it cost the search more names than it found.

Universal correction (``correct_rounds``, off by default), after the polish: the corrector of
:mod:`vdbguard.attacks.corrector` (SmolLM2 + LoRA, trained once for every embedder; it reads only cosines and
per-word marks) rewrites the best guess ``correct_candidates`` ways per round; the target embedder scores the
rewrites and one is kept only if it is closer. ``corrector_path`` names weights that
``pipelines/train_corrector.py`` saved; empty means the ones packaged with vdbguard.

Conditioned proposals (``conditioned``, versions 4 and 5): when vdbguard packages a generative model for the
embedder (:meth:`~vdbguard.attacks.generative.GenerativeInversion.pretrained`, today MiniLM's), that model first
writes its own ``drafts`` best sentences for each record (one beam search batched over the records, Vec2Text's
base model), each a candidate. Then the first beam search takes its next tokens from the same model reading the
target vector: its proposals already say roughly what the vector says, and the embedder picks among them
(Vec2Text's base model driving ZSInvert's search). The prompted search follows, unseeded. The best draft is
polished at once and the gradient seeds are skipped: within the scan's 1.8 CPU-seconds a polished draft came
closer than the searches the budget leaves room for (re-embedding the hundred candidates of one token costs more
than the language model's step), and without a budget this order read the text better too (version 6). Drafting
pays only in batches, so under a budget a call with fewer than ``BUDGETED_DRAFT_BATCH`` records searches without
drafts, as version 4 did; a scan's deep tier hands its records over in chunks for this. Refinement rounds use
the prompted rewrite. What each order costs and buys is in BENCHMARKS.md, "How the settings were chosen
(development sets)".

The answer (``tolerance``, version 6) is the shortest hypothesis whose cosine is within ``tolerance`` of the
closest one found. Past about 0.9 cosine the search and the polish add words the embedder likes rather than the
text's own: a word that does not bring the vector 0.01 closer is, more often than not, not the text's. On the
development sets this cost about 0.005 cosine and bought token F1 (BENCHMARKS.md, "How the settings were chosen
(development sets)").

Seeds: when the embedder's weights are at hand and no generative model drafts, white-box gradient inversion
(:class:`~vdbguard.attacks.gradient.GradientInversion`) recovers a bag of words first, and the prompt asks for a
sentence using them; that bag is itself a candidate. Without the weights the search starts unseeded.
Nothing is trained for an embedder: ``fit`` does nothing.

Budgets per record: ``max_queries`` encoder queries and ``max_seconds`` CPU-seconds (0 = none), the record's
share of the batched gradient seeds included; no batch of candidates is larger than what is left (the cost
of a query is measured as the search goes). Under a budget the seed bag is polished before the beam search,
so a budget that ends early still has the polish's gain (on the development set of BENCHMARKS.md, at 2
CPU-seconds: token F1 0.31 and cosine 0.83, against 0.30 and 0.76 unpolished); unbudgeted, the beam search
comes first, which measured slightly better there (0.343 against 0.325). The queries each record cost are
counted in ``encoder_queries``. A scan's deep tier gives it ``--deep-record-seconds`` (1.8 by default, for 0.5
records per CPU-second; the language model's loading is not counted).

Word scores: each recovered word is scored by how much leaving it out lowers the recovery's cosine, mapped
through the calibration measured for gradient inversion's words (:func:`~vdbguard.attacks.gradient.word_score`),
which uses the same leave-one-out signal.
"""

from __future__ import annotations

import functools
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from vdbguard.attacks.base import Attack, Inference, Progress, l2_normalise, learned
from vdbguard.attacks.corrector import UniversalCorrector, refine
from vdbguard.attacks.decoder import EOS_ID, load_decoder, load_tokenizer, torch_threads
from vdbguard.attacks.generative import GenerativeInversion, InversionModel
from vdbguard.attacks.gradient import GradientInversion, word_score
from vdbguard.attacks.kv_cache import run_cached
from vdbguard.corpus import LabelledText
from vdbguard.corpus.embedded import embed_list
from vdbguard.embedders import Embedder
from vdbguard.errors import VdbguardError

_PROMPT = "<|im_start|>user\n{request}<|im_end|>\n<|im_start|>assistant\n"
# Under a budget, drafts only for this many records at once: one thread wrote 4 drafts in 2.66 CPU-s for a record
# alone, 0.79 each for 8 and 0.55 each for 24 (measured one thread at a time), against a scan's 1.8 a record.
BUDGETED_DRAFT_BATCH = 8
_VOCABULARY_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")


@functools.lru_cache(maxsize=1)
def _language_model():  # -> transformers.LlamaForCausalLM, all 30 layers
    from vdbguard.attacks.decoder import decoder_config

    return load_decoder(tuple(range(int(decoder_config()["num_hidden_layers"]))))


SEED_SHARE = 0.5  # of a budgeted search's CPU-seconds that its gradient seeds may take
PROBE_STEPS = 2  # gradient steps timed to learn what one costs on this embedder
MIN_SEED_STEPS = 20  # fewer steps leave the relaxed tokens near random: search unseeded instead


@functools.lru_cache(maxsize=2)
def vocabulary_table(embedder: Embedder) -> tuple[list[str], np.ndarray]:
    """The whole words of the embedder's tokenizer and their unit vectors, embedded once per model (on disk)
    and read once per process."""
    tokenizer = embedder.model.tokenizer
    tokens = (token.removeprefix("Ġ").removeprefix("▁") for token in tokenizer.get_vocab())
    words = sorted({token for token in tokens if _VOCABULARY_WORD.fullmatch(token)})
    return words, embed_list(embedder, words, stored=np.float16).astype(np.float32)  # numpy's float16 matmul is slow


@functools.lru_cache(maxsize=2)
def _generative(embedder: Embedder) -> GenerativeInversion | None:
    return GenerativeInversion.pretrained(embedder)


@functools.lru_cache(maxsize=2)
def _corrector(path: str | None) -> UniversalCorrector:
    return UniversalCorrector.load(Path(path) if path else None)


@dataclass(eq=False)
class AdversarialDecoding(Attack):
    """ZSInvert-style beam search guided by the target embedder; see the module docstring."""

    name: ClassVar[str] = "adversarial-decoding"
    description: ClassVar[str] = (
        "ZSInvert 2025 zero-shot inversion: SmolLM2 proposes, the target embedder keeps the closest beams"
    )
    # 2: residual polish; 3: budgets in CPU-seconds, seeds included; 4: the embedder's packaged generative model
    # proposes the first beam search's tokens; 5: and writes whole drafts first, polished first under a budget;
    # 6: the answer is the shortest hypothesis within ``tolerance`` of the closest, and every search (not only a
    # budgeted one) polishes the best draft first and takes no gradient seeds when drafts come; 7: under a time
    # budget, gradient seeds get only the steps half of it affords; 8: a stage that spells the words holding most
    # of the vector out into longer words (names off every list), off by default
    version: ClassVar[int] = 8
    kind: ClassVar[str] = "inversion"
    zero_shot: ClassVar[bool] = True
    rank: ClassVar[int] = 25  # the highest: it trains nothing, and read the most on MiniLM and mpnet
    beam_width: int = 5
    top_k: int = 20
    max_tokens: int = 24
    refine_rounds: int = 1
    polish_rounds: int = 15
    polish_words: int = 16
    polish_positions: int = 4
    spell_positions: int = 0
    spell_margin: float = 0.015
    spell_plausibility: float = 8.0
    correct_rounds: int = 0
    correct_candidates: int = 8
    corrector_path: str = ""
    seed_words: int = 8
    seed_steps: int = 100
    conditioned: bool = True
    drafts: int = 4
    tolerance: float = 0.01
    max_queries: int = 0
    max_seconds: float = 0.0
    threads: int = 0
    threshold: float = 0.5
    # measured: the language model's passes, kept out of budgets
    prompt_seconds: float = learned(0.0)
    step_seconds: float = learned(0.0)
    spell_seconds: float = learned(0.0)

    def __post_init__(self) -> None:
        if self.beam_width < 1 or self.top_k < 1 or self.max_tokens < 1:
            raise ValueError(
                f"beam_width, top_k and max_tokens must be >= 1, got {self.beam_width}, {self.top_k}, {self.max_tokens}"
            )

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        """Nothing to train: the language model proposes and the target embedder scores."""

    def metrics(self) -> dict[str, float]:
        return {
            "beam_width": self.beam_width,
            "top_k": self.top_k,
            "max_tokens": self.max_tokens,
            "polish_rounds": self.polish_rounds,
            "spell_positions": self.spell_positions,
            "conditioned": float(self.conditioned),
            "drafts": self.drafts,
            "tolerance": self.tolerance,
            "max_seconds": self.max_seconds,
            "max_queries": self.max_queries,
        }

    # ----- inference ---------------------------------------------------------------------------------

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        if len(vectors) == 0:
            return []
        if self.embedder is None:
            raise VdbguardError("adversarial decoding needs the target embedder bound before infer()")
        targets = l2_normalise(vectors)
        if targets.shape[1] != self.embedder.dimension:
            raise VdbguardError(
                f"vectors have {targets.shape[1]} dimensions but {self.embedder.name} makes {self.embedder.dimension}",
                "run the attack with the embedder that made the vectors (or through an alignment map)",
            )
        with torch_threads(self.threads or None):
            _language_model(), load_tokenizer()  # loaded once, not out of the first record's budget
            generative = _generative(self.embedder) if self.conditioned else None
            started = time.process_time()
            seeds = self._seeds(targets, generative)
            drafts = self._drafts(targets, generative)
            shared = (time.process_time() - started) / len(targets)
            return [
                self._invert(target, seed, draft, generative, shared)
                for target, seed, draft in zip(targets, seeds, drafts, strict=True)
            ]

    def _seeds(self, targets: np.ndarray, generative: GenerativeInversion | None) -> list[list[str]]:
        """Words from white-box gradient inversion, when the embedder's weights allow it and no conditioned
        model proposes (its drafts start closer, and the seeds would take 1.6 of the scan's 1.8 CPU-seconds).
        Under a time budget they get the optimisation steps that ``SEED_SHARE`` of it affords, or none: on
        mpnet the full 100 steps took three times the whole budget and left the search no time."""
        if not self.seed_words or generative is not None:
            return [[] for _ in targets]
        gradient = GradientInversion(steps=self.seed_steps, threads=self.threads)
        gradient.embedder = self.embedder
        try:
            gradient.steps = self.seed_steps_affordable(gradient, targets)
            found = gradient.infer(targets) if gradient.steps >= MIN_SEED_STEPS else []
        except VdbguardError:  # not a white-box model: search unseeded
            found = []
        return [inference.recovered_text.split()[: self.seed_words] for inference in found] or [[] for _ in targets]

    def seed_steps_affordable(self, gradient: GradientInversion, targets: np.ndarray) -> int:
        """``seed_steps``, or under a time budget what ``SEED_SHARE`` of it affords at the cost per step that a
        probe of ``PROBE_STEPS`` steps on these targets measures (the probe's fixed costs make it conservative)."""
        if not self.max_seconds:
            return self.seed_steps
        gradient.steps = PROBE_STEPS
        started = time.process_time()
        gradient.infer(targets)
        per_step = (time.process_time() - started) / PROBE_STEPS
        return min(self.seed_steps, int(SEED_SHARE * self.max_seconds * len(targets) / max(per_step, 1e-9)))

    def _drafts(self, targets: np.ndarray, generative: GenerativeInversion | None) -> list[list[str]]:
        """The generative model's own ``drafts`` best sentences per record, one batched beam search for all."""
        if generative is None or not self.drafts or (self._budgeted and len(targets) < BUDGETED_DRAFT_BATCH):
            return [[] for _ in targets]
        generative.threads = self.threads or None
        found = generative.hypotheses(targets, beam_width=self.drafts)
        return [[text for text, _, _ in hypotheses if text] for hypotheses in found]

    @property
    def _budgeted(self) -> bool:
        return bool(self.max_seconds or self.max_queries)

    def _invert(
        self,
        target: np.ndarray,
        seed: list[str],
        drafts: list[str],
        generative: GenerativeInversion | None,
        spent: float,
    ) -> Inference:
        search = _Search(self, target, spent)
        if drafts:
            search.consider(drafts)
            if self.polish_rounds:  # measured: a polished draft beats more searching, with a budget or without
                search.polish(*vocabulary_table(self.embedder))
        if generative is not None:
            search.decode(_Conditioned(generative.model, target))
        if seed:
            search.consider([" ".join(seed)])
            if self.polish_rounds and self._budgeted:
                # the cheapest gain first, so that a search the budget cuts short still has it
                search.polish(*vocabulary_table(self.embedder))
                seed = search.best_text.split()
        request = "Write a short sentence" + (f" that uses these words: {', '.join(seed)}." if seed else ".")
        search.decode(_Prompted(request))
        for _ in range(self.refine_rounds):
            if search.exhausted():
                break
            search.decode(_Prompted(f"Rewrite this sentence: {search.best_text}"))
        if self.polish_rounds:
            search.polish(*vocabulary_table(self.embedder))
        if self.spell_positions:
            search.spell()
        if self.correct_rounds and not search.exhausted():
            corrector = _corrector(self.corrector_path or None)
            refine(search.best_text, search.consider, corrector, self.correct_rounds, self.correct_candidates)
        search.settle()
        self.encoder_queries += search.queries
        return self._scored(search)

    def _scored(self, search: _Search) -> Inference:
        """The best hypothesis, each word scored by how much the cosine drops without it."""
        words = search.best_text.split()
        if not words:
            return Inference()
        if len(words) == 1:
            drops = [search.best_cosine]
        else:
            variants = [" ".join(words[:i] + words[i + 1 :]) for i in range(len(words))]
            drops = [search.best_cosine - float(c) for c in search.cosines(variants)]
            self.encoder_queries += len(variants)
        scored: dict[str, float] = {}
        for word, drop in zip(words, drops, strict=True):
            key = word.strip(".,;:!?\"'()").lower()
            if key:
                scored[key] = max(word_score(drop), scored.get(key, 0.0))
        tokens = tuple(sorted(scored.items(), key=lambda item: -item[1]))
        return Inference(recovered_text=search.best_text, recovered_tokens=tokens)


class _Search:
    """One record's search state: the best hypothesis so far and what it has cost."""

    def __init__(self, attack: AdversarialDecoding, target: np.ndarray, spent: float = 0.0) -> None:
        self.attack = attack
        self.target = target
        self.best_text = ""
        self.best_cosine = -2.0
        self.best_vector = np.zeros_like(target)
        self.near: dict[str, float] = {}  # every hypothesis within the tolerance of the best so far
        self.queries = 0
        self.query_seconds = 0.0
        self.started = time.process_time() - spent

    def seconds_left(self, keep: float = 0.0) -> float:
        """CPU-seconds the time budget leaves (infinite without one), less ``keep`` and what scoring the best
        guess's words will cost at the end."""
        if not self.attack.max_seconds:
            return math.inf
        scoring = self.query_seconds / max(self.queries, 1) * (len(self.best_text.split()) + 1)
        return self.attack.max_seconds - (time.process_time() - self.started) - scoring - keep

    def exhausted(self, keep: float = 0.0) -> bool:
        attack = self.attack
        over_queries = bool(attack.max_queries) and self.queries >= attack.max_queries
        return over_queries or self.seconds_left(keep) <= 0

    def cosines(self, texts: Sequence[str]) -> np.ndarray:
        assert self.attack.embedder is not None
        return self.attack.embedder.encode(list(texts)) @ self.target

    def affordable(self, count: int, keep: float = 0.0) -> int:
        """How many of ``count`` candidates the budgets still allow, ``keep`` seconds kept for what follows (at
        least one), so that one large batch does not overrun them."""
        attack, allowed = self.attack, count
        if attack.max_queries:
            allowed = min(allowed, attack.max_queries - self.queries)
        if attack.max_seconds and self.queries:
            allowed = min(allowed, int(self.seconds_left(keep) * self.queries / max(self.query_seconds, 1e-9)))
        return max(allowed, 1)

    def consider(self, texts: Sequence[str], keep: float = 0.0) -> np.ndarray:
        """Re-embed the candidates the budgets allow (the first ones), count the queries, and keep the closest
        as the best if it beats it. Returns the scores of the candidates embedded."""
        texts, vectors, scores = self._embedded(texts, keep)
        top = int(np.argmax(scores))
        if float(scores[top]) > self.best_cosine:
            self._accept(texts[top], float(scores[top]), vectors[top])
        for i in np.flatnonzero(scores >= self._floor):
            text = texts[i].replace("\ufffd", "").strip()
            if text:
                self.near[text] = max(float(scores[i]), self.near.get(text, -2.0))
        return scores

    def _embedded(self, texts: Sequence[str], keep: float = 0.0) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The candidates the budgets allow, their vectors and cosines to the target, the queries counted."""
        assert self.attack.embedder is not None
        texts = list(texts)[: self.affordable(len(texts), keep)]
        started = time.process_time()
        vectors = self.attack.embedder.encode(texts)
        self.query_seconds += time.process_time() - started
        self.queries += len(texts)
        return texts, vectors, vectors @ self.target

    def _accept(self, text: str, cosine: float, vector: np.ndarray) -> None:
        # a byte-level token that splits a character shows as U+FFFD until the next one completes it
        if text.replace("\ufffd", "").strip():
            self.best_text, self.best_cosine = text.replace("\ufffd", "").strip(), cosine
            self.best_vector = vector
            self.near = {text: cosine for text, cosine in self.near.items() if cosine >= self._floor}

    @property
    def _floor(self) -> float:
        return self.best_cosine - self.attack.tolerance

    def settle(self) -> None:
        """Make the shortest hypothesis within the tolerance of the closest the answer: words that do not bring
        the vector at least that much closer are, more often than not, not the text's (token F1 on the
        development sets of BENCHMARKS.md, "How the settings were chosen (development sets)")."""
        if self.attack.tolerance > 0 and self.near:
            near = ((text, cosine) for text, cosine in self.near.items() if cosine >= self._floor)
            self.best_text, self.best_cosine = min(near, key=lambda item: (len(item[0].split()), -item[1]))

    def polish(self, vocabulary: list[str], table: np.ndarray) -> None:
        """Add or swap in the vocabulary words closest to what the best hypothesis still misses."""
        attack = self.attack
        for _ in range(attack.polish_rounds):
            before, words = self.best_cosine, self.best_text.split()
            if self.exhausted() or not words:
                break
            residual = self.target - (self.target @ self.best_vector) * self.best_vector
            weak: list[int] = []
            if len(words) > 1:
                without = self.consider([" ".join(words[:i] + words[i + 1 :]) for i in range(len(words))])
                weak = np.argsort(-without, kind="stable")[: attack.polish_positions].tolist()
            present = {word.lower() for word in words}
            scores, wanted = table @ residual, attack.polish_words + len(present)
            nearest = np.argpartition(-scores, wanted)[:wanted]
            closest = (vocabulary[i] for i in nearest[np.argsort(-scores[nearest], kind="stable")])
            shortlist = [word for word in closest if word.lower() not in present][: attack.polish_words]
            variants = [" ".join([*words, new]) for new in shortlist]
            variants += [" ".join([*words[:at], new, *words[at + 1 :]]) for new in shortlist for at in weak]
            self.consider(variants)
            if self.best_cosine <= before + 1e-4:
                break

    def spell(self) -> None:
        """Spell out the words that hold most of the vector: the language model writes the longer words that
        begin with one of them where it stands (a polish word like ``jamie`` or ``bala`` is often a name's first
        piece), the embedder scores them in the sentence, and the closest replaces the word if it brings the
        vector ``spell_margin`` closer. Smaller gains were mostly misspellings of ordinary words."""
        attack = self.attack
        words = self.best_text.split()
        if len(words) < 2 or self.exhausted():
            return
        *_, without = self._embedded([" ".join(words[:i] + words[i + 1 :]) for i in range(len(words))])
        cores = {i: found.groups() for i, word in enumerate(words) if (found := _WORD_CORE.fullmatch(word))}
        order = [int(i) for i in np.argsort(without, kind="stable") if int(i) in cores]
        for at in order[: attack.spell_positions]:
            if self.exhausted(keep=attack.spell_seconds):
                break
            core, tail = cores[at]
            started = time.process_time()
            prefix = core[0].upper() + core[1:]
            written = spellings(" ".join(words[:at]), prefix)
            # as likely as the word itself, give or take ``spell_plausibility`` nats: "Jamie" -> "Jamieson" is
            # 6.4 nats less likely, "Renewal" -> "Renewalde" 12.6 (when the model never ends the word at the
            # prefix, the likeliest longer word stands in for it)
            own = written.pop(prefix, max(written.values(), default=0.0))
            longer = sorted(
                (word for word, log_p in written.items() if log_p >= own - attack.spell_plausibility),
                key=lambda word: -written[word],
            )
            attack.spell_seconds = time.process_time() - started
            if not longer:
                continue
            variants = [" ".join([*words[:at], word + tail, *words[at + 1 :]]) for word in longer]
            texts, vectors, scores = self._embedded(variants)
            top = int(np.argmax(scores))
            if float(scores[top]) >= self.best_cosine + attack.spell_margin:
                self._accept(texts[top], float(scores[top]), vectors[top])
                words = self.best_text.split()

    def decode(self, proposer: _Prompted | _Conditioned) -> None:
        """Beam search over ``proposer``'s next tokens, scored by cosine to the target."""
        attack = self.attack
        if self.exhausted(keep=attack.prompt_seconds):  # the prompt's forward pass alone costs tenths of a second
            return
        tokenizer = load_tokenizer()
        started = time.process_time()
        with torch.inference_mode():
            logits, cache = proposer.start()
        attack.prompt_seconds = time.process_time() - started
        beams: list[list[int]] = [[]]
        for _ in range(attack.max_tokens):
            if self.exhausted(keep=attack.step_seconds):
                break
            by_text: dict[str, tuple[list[int], int]] = {}
            for beam, (sequence, tokens) in enumerate(zip(beams, proposer.top(logits, attack.top_k), strict=True)):
                for token in tokens:
                    if token == EOS_ID:
                        continue
                    candidate = [*sequence, token]
                    by_text.setdefault(tokenizer.decode(candidate, skip_special_tokens=True), (candidate, beam))
            if not by_text:
                break
            texts = list(by_text)
            scores = self.consider(texts, keep=attack.step_seconds)
            keep = np.argsort(-scores, kind="stable")[: attack.beam_width]
            beams = [by_text[texts[i]][0] for i in keep]
            if self.exhausted(keep=attack.step_seconds):  # a step whose candidates would not be scored
                break
            cache.reorder_cache(torch.tensor([by_text[texts[i]][1] for i in keep]))
            started = time.process_time()
            with torch.inference_mode():
                logits, cache = proposer.step(torch.tensor([[sequence[-1]] for sequence in beams]), cache)
            attack.step_seconds = time.process_time() - started


_WORD_CORE = re.compile(r"([A-Za-z]{2,})([.,;:!?'\")]*)")
SPELL_WIDTH = 8  # beams of the language model's spelling search
SPELL_TOKENS = 4  # tokens it may add after the word it grows


@functools.lru_cache(maxsize=1)
def _token_texts() -> tuple[str, ...]:
    tokenizer = load_tokenizer()
    return tuple(tokenizer.decode([i]) for i in range(len(tokenizer)))


@functools.lru_cache(maxsize=4096)
def _tokens_that_begin(text: str) -> tuple[list[int], torch.Tensor]:
    """The tokens that can come first in ``text``: those it begins with, and those that begin with it."""
    ids = [i for i, token in enumerate(_token_texts()) if token and (token.startswith(text) or text.startswith(token))]
    return ids, torch.tensor(ids, dtype=torch.long)


def spellings(left: str, prefix: str) -> dict[str, float]:
    """The words beginning with ``prefix`` that SmolLM2 would write after ``left``, with their log-probabilities.

    The prompt stops before the prefix, whose characters the first tokens must spell (token healing): a prompt
    ending in "Jamie" would force a token boundary that "Jamieson" does not have, and the model would not
    write it."""
    tokenizer, texts = load_tokenizer(), _token_texts()
    prompt = tokenizer(_PROMPT.format(request="Write a short sentence.") + left, return_tensors="pt").input_ids
    with torch.inference_mode():
        output, cache = run_cached(_language_model(), prompt)
    logits = output.logits[:, -1]
    beams: list[tuple[list[int], float, str]] = [([], 0.0, (" " if left else "") + prefix)]  # tokens, log p, unspelt
    words: dict[str, float] = {}
    for _ in range(SPELL_TOKENS + 2):
        log_p = torch.log_softmax(logits.float(), dim=-1)
        grown: list[tuple[list[int], float, str, int]] = []
        for beam, (sequence, score, unspelt) in enumerate(beams):
            if unspelt:
                allowed, indices = _tokens_that_begin(unspelt)
                top = log_p[beam, indices].topk(min(SPELL_WIDTH, len(allowed)))
                choices = [
                    (value, allowed[i]) for value, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)
                ]
            else:
                top = log_p[beam].topk(SPELL_WIDTH)
                choices = list(zip(top.values.tolist(), top.indices.tolist(), strict=True))
            for value, token in choices:
                text = texts[token]
                if unspelt.startswith(text):
                    grown.append(([*sequence, token], score + value, unspelt[len(text) :], beam))
                elif text[len(unspelt) :].isalpha():
                    grown.append(([*sequence, token], score + value, "", beam))
                elif not unspelt and sequence:  # the word ends here
                    word = tokenizer.decode(sequence).strip()
                    words[word] = max(words.get(word, -math.inf), score + value)
        if not grown:
            break
        grown = sorted(grown, key=lambda item: -item[1])[:SPELL_WIDTH]
        beams = [(sequence, score, unspelt) for sequence, score, unspelt, _ in grown]
        cache.reorder_cache(torch.tensor([beam for *_, beam in grown]))
        with torch.inference_mode():
            last = torch.tensor([[sequence[-1]] for sequence, *_ in beams])
            output, cache = run_cached(_language_model(), last, cache=cache)
        logits = output.logits[:, -1]
    return words


class _Prompted:
    """SmolLM2 answering ``request``: fluent proposals that know nothing of the target but the request."""

    def __init__(self, request: str) -> None:
        self.request = request

    def start(self) -> tuple[torch.Tensor, Any]:
        prompt = load_tokenizer()(_PROMPT.format(request=self.request), return_tensors="pt").input_ids
        output, cache = run_cached(_language_model(), prompt)
        return output.logits[:, -1], cache

    def step(self, tokens: torch.Tensor, cache: Any) -> tuple[torch.Tensor, Any]:
        output, grown = run_cached(_language_model(), tokens, cache=cache)
        return output.logits[:, -1], grown

    @staticmethod
    def top(logits: torch.Tensor, k: int) -> list[list[int]]:
        return logits.float().topk(k, dim=-1).indices.tolist()


class _Conditioned:
    """The embedder's packaged generative model reading the target vector: it proposes what the vector says."""

    def __init__(self, model: InversionModel, target: np.ndarray) -> None:
        self.model = model
        self.target = torch.from_numpy(np.asarray(target, dtype=np.float32)[None])

    def start(self) -> tuple[torch.Tensor, Any]:
        output, cache = run_cached(self.model.decoder.model, inputs_embeds=self.model.prefix_embeds(self.target))
        return self.model.logits(output.last_hidden_state[:, -1]), cache

    def step(self, tokens: torch.Tensor, cache: Any) -> tuple[torch.Tensor, Any]:
        embeds = self.model.token_embeddings[tokens]
        output, grown = run_cached(self.model.decoder.model, inputs_embeds=embeds, cache=cache)
        return self.model.logits(output.last_hidden_state[:, -1]), grown

    def top(self, logits: torch.Tensor, k: int) -> list[list[int]]:
        return self.model.vocabulary[logits.float().topk(k, dim=-1).indices].tolist()
