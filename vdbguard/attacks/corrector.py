"""A universal corrector (ZSInvert's stage 3, Vec2Text's corrector) that works for any embedder.

Vec2Text's corrector reads the target and hypothesis vectors, so it is tied to one embedder. This one never sees
a vector: what it reads of (target, hypothesis, hypothesis vector) is what any embedder, API models included,
yields as black-box scores: the hypothesis's cosine to the target (bucketed to 0.05) and, per word, how much
leaving that word out lowers that cosine, as marks: ``[word]`` matters (the cosine drops by ``strong`` or more
without it), ``word?`` does not help (it drops by ``weak`` or less). The prompt is

    <|im_start|>user
    Draft (cosine 0.80): [bucket] paper bags? [christine]
    Fix it.<|im_end|>
    <|im_start|>assistant

and SmolLM2-135M-Instruct (all 30 layers, frozen; see :mod:`vdbguard.attacks.decoder`) with LoRA adapters on
all its linear layers answers with the sentence (rank 8 on all seven linears is 2.4M parameters and measured
~10% slower per step than on q/v alone). It is trained on real sentences (``real_corpus(split="train")``)
paired with hypotheses that look like inversion output (:func:`corrupt`: words dropped, spans reordered, words
swapped for a neighbour in the embedder's space or a random word, names broken or replaced, junk inserted,
lower-cased; the closest of a few such corruptions is kept, as a search would; plus real gradient-inversion
outputs in ``pipelines/train_corrector.py``), with marks computed by the real embedder. Only the LoRA matrices
are saved (safetensors + a JSON config).

:func:`refine` is the loop an attack calls: marks by leave-one-out queries, proposals from the corrector, each
scored by the target embedder as a black box; a proposal (or a leave-one-out variant, already scored) replaces
the best text only if it is closer, so refinement never returns anything farther than it was given.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from torch import nn

from vdbguard.attacks.decoder import EOS_ID, decoder_config, load_decoder, load_tokenizer, torch_threads
from vdbguard.attacks.generative import LoRALinear, save_checkpoint
from vdbguard.attacks.kv_cache import run_cached
from vdbguard.cache import cache_root
from vdbguard.data import packaged_file
from vdbguard.embedders.bert import native_bf16
from vdbguard.errors import VdbguardError

PROMPT = "<|im_start|>user\nDraft (cosine {cosine}): {draft}\nFix it.<|im_end|>\n<|im_start|>assistant\n"
PACKAGED = "corrector-lora.safetensors"
_WORD = re.compile(r"[A-Za-z][a-z]+")
KINDS, WEIGHTS = ("salad", "bag", "prefix", "edit"), (0.35, 0.2, 0.15, 0.3)


@dataclass
class CorrectorConfig:
    """What shapes the adapters and the prompt; saved with them and part of the checkpoint key."""

    layers: tuple[int, ...] = ()  # () = all of SmolLM2's layers
    lora_rank: int = 8
    lora_alpha: float = 16.0
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    strong: float = 0.04  # a word whose removal lowers the cosine this much is marked [word]
    weak: float = 0.005  # one whose removal lowers it this little (or raises it) is marked word?
    max_tokens: int = 48  # longest answer, in tokens

    @classmethod
    def from_dict(cls, values: dict[str, object]) -> CorrectorConfig:
        known = {k: v for k, v in values.items() if k in cls.__dataclass_fields__}
        for key in ("layers", "lora_targets"):
            if key in known:
                known[key] = tuple(known[key])  # type: ignore[arg-type]
        return cls(**known)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Pair:
    """One training or evaluation example: the true ``text`` and a scored ``hypothesis`` of it."""

    text: str
    hypothesis: str
    cosine: float
    drops: tuple[float, ...]
    embedder: str = ""
    kind: str = ""


def read_pairs(path: Path) -> list[Pair]:
    """Pairs saved one JSON object a line (``.jsonl``, or gzipped ``.jsonl.gz``)."""
    with gzip.open(path, "rt") if Path(path).suffix == ".gz" else open(path) as handle:
        return [Pair(**{**row, "drops": tuple(row["drops"])}) for row in map(json.loads, handle)]


class Proposer(Protocol):
    def correct(
        self, hypothesis: str, cosine: float, drops: list[float], candidates: int, seed: int = 0
    ) -> list[str]: ...


# ----- what the corrector reads ------------------------------------------------------------------------------


def leave_one_out(words: Sequence[str]) -> list[str]:
    """The hypothesis without each of its words in turn (none for a single word)."""
    if len(words) < 2:
        return []
    return [" ".join([*words[:i], *words[i + 1 :]]) for i in range(len(words))]


def prompt(hypothesis: str, cosine: float, drops: Sequence[float], config: CorrectorConfig) -> str:
    """The corrector's input: bucketed cosine and per-word marks, nothing that depends on the embedder."""
    words = hypothesis.split()
    if len(drops) != len(words):
        raise ValueError(f"{len(words)} words but {len(drops)} drops")
    marked = []
    for word, drop in zip(words, drops, strict=True):
        if drop >= config.strong:
            marked.append(f"[{word}]")
        elif drop <= config.weak:
            marked.append(f"{word}?")
        else:
            marked.append(word)
    bucket = min(1.0, max(-1.0, round(cosine * 20) / 20))
    return PROMPT.format(cosine=f"{bucket:.2f}", draft=" ".join(marked))


def score_pairs(
    texts: Sequence[str], hypotheses: Sequence[str], embedder, kinds: Sequence[str] | None = None
) -> list[Pair]:
    """Cosines and leave-one-out drops measured with the real ``embedder``, in one batched encode."""
    batch: list[str] = []
    spans = []
    for text, hypothesis in zip(texts, hypotheses, strict=True):
        words = hypothesis.split()
        spans.append((len(batch), len(words)))
        batch += [text, " ".join(words), *leave_one_out(words)]
    vectors = embedder.encode(batch)
    pairs = []
    for index, ((start, n), text, hypothesis) in enumerate(zip(spans, texts, hypotheses, strict=True)):
        target = vectors[start]
        cosine = float(vectors[start + 1] @ target)
        if n > 1:
            drops = tuple(round(cosine - float(v @ target), 4) for v in vectors[start + 2 : start + 2 + n])
        else:
            drops = (round(cosine, 4),) * n
        kind = kinds[index] if kinds else ""
        pairs.append(Pair(text, " ".join(hypothesis.split()), round(cosine, 4), drops, embedder.name, kind))
    return pairs


# ----- hypotheses that look like inversion output -------------------------------------------------------------


@dataclass
class Lexicon:
    """Corpus words with their nearest neighbours in one embedder's space, for realistic word swaps."""

    words: list[str]
    neighbours: dict[str, list[str]]
    names: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, texts: Sequence[str], embedder, size: int = 3000, k: int = 8) -> Lexicon:
        counts = Counter(w.lower() for t in texts for w in _WORD.findall(t))
        words = [w for w, _ in counts.most_common(size)]
        vectors = embedder.encode(words)
        similar = vectors @ vectors.T
        np.fill_diagonal(similar, -1.0)
        nearest = np.argsort(-similar, axis=1)[:, :k]
        names = sorted({w for t in texts for w in re.findall(r"\b[A-Z][a-z]{2,}\b", t)})
        return cls(words, {w: [words[j] for j in row] for w, row in zip(words, nearest, strict=True)}, names)


def _bare(word: str) -> str:
    return word.strip(".,;:!?\"'()[]<>{}")


def _swap(word: str, rng: random.Random, lexicon: Lexicon) -> str:
    """A neighbour in the embedder's space (most often), a random corpus word, or a broken/replaced name."""
    core = _bare(word)
    options = lexicon.neighbours.get(core.lower())
    if core[:1].isupper() and lexicon.names and rng.random() < 0.5:
        if rng.random() < 0.5 and len(core) > 4:
            cut = rng.randint(2, len(core) - 2)
            return rng.choice((f"{core[:cut]} {core[cut:].lower()}", core[:cut].lower(), core.lower()[cut:]))
        return rng.choice(lexicon.names)
    if options and rng.random() < 0.75:
        return rng.choice(options[:4])
    return rng.choice(lexicon.words)


def _junk(rng: random.Random, lexicon: Lexicon) -> str:
    """What beam search pads a hypothesis with: a random corpus word, a number or a name."""
    roll = rng.random()
    if roll < 0.2:
        return str(rng.randint(1, 999))
    if roll < 0.35 and lexicon.names:
        return rng.choice(lexicon.names).lower()
    return rng.choice(lexicon.words)


def corrupt(text: str, rng: random.Random, lexicon: Lexicon, kind: str | None = None) -> tuple[str, str]:
    """A hypothesis of ``text`` shaped like inversion output, and its kind: ``salad`` (adversarial decoding's
    typical output: most of the words, spans out of order, junk mixed in), ``bag`` (a gradient-inversion keyword
    bag), ``prefix`` (a beam-search sentence that stops early) or ``edit`` (a near miss)."""
    words = text.split()
    kind = kind or rng.choices(KINDS, WEIGHTS)[0]
    if kind == "salad":
        keep = rng.uniform(0.6, 0.95)
        out = [w for w in words if rng.random() < keep] or words[:1]
        out = [_swap(w, rng, lexicon) if rng.random() < 0.1 else w for w in out]
        cuts = sorted(rng.sample(range(1, len(out)), min(len(out) - 1, rng.randint(1, 3)))) if len(out) > 1 else []
        spans = [out[a:b] for a, b in zip([0, *cuts], [*cuts, len(out)], strict=True)]
        rng.shuffle(spans)
        out = [w for span in spans for w in span]
        for _ in range(rng.randint(1, 5)):
            out.insert(rng.randrange(len(out) + 1), _junk(rng, lexicon))
        out = [w.lower() if rng.random() < 0.5 else w for w in out][:18]
    elif kind == "bag":
        content = [_bare(w) for w in words if len(_bare(w)) > 2 or any(c.isdigit() for c in w)]
        keep = rng.uniform(0.3, 0.8)
        out = [w for w in content if rng.random() < keep] or content[:1] or words[:1]
        out = [_swap(w, rng, lexicon) if rng.random() < 0.25 else w for w in out]
        out += [_junk(rng, lexicon) for _ in range(rng.choice((0, 0, 1, 1, 2, 3)))]
        rng.shuffle(out)
        out = [w.lower() for w in out[:10]]
    elif kind == "prefix":
        out = words[: rng.randint(3, 12)]
        out = [_swap(w, rng, lexicon) if rng.random() < 0.2 else w for w in out]
        if rng.random() < 0.3:
            out += [_junk(rng, lexicon) for _ in range(rng.randint(1, 3))]
    else:
        drop = rng.uniform(0.05, 0.3)
        out = [w for w in words if rng.random() > drop] or words[:1]
        out = [_swap(w, rng, lexicon) if rng.random() < 0.15 else w for w in out]
        for _ in range(rng.choice((0, 1, 1, 2))):
            i = rng.randrange(len(out))
            j = min(len(out) - 1, i + rng.randint(1, 3))
            out[i], out[j] = out[j], out[i]
        for _ in range(rng.choice((0, 0, 1, 2))):
            out.insert(rng.randrange(len(out) + 1), _junk(rng, lexicon))
    hypothesis = " ".join(out)
    if kind in ("prefix", "edit") and rng.random() < 0.3:
        hypothesis = hypothesis.lower()
    return " ".join(hypothesis.split()[:24]), kind


def make_pairs(texts: Sequence[str], embedder, lexicon: Lexicon, seed: int = 0, best_of: int = 4) -> list[Pair]:
    """One corrupted, embedder-scored hypothesis per text: the closest of ``best_of`` corruptions of one kind, as
    an attack's search would keep (its errors are the ones the embedder cannot see)."""
    rng = random.Random(seed)
    options, kinds = [], []
    for text in texts:
        kinds.append(rng.choices(KINDS, WEIGHTS)[0])
        options.append([corrupt(text, rng, lexicon, kinds[-1])[0] for _ in range(max(1, best_of))])
    chosen = [variants[0] for variants in options]
    if best_of > 1 and texts:
        vectors = embedder.encode([*texts, *(v for variants in options for v in variants)])
        targets, guesses = vectors[: len(texts)], vectors[len(texts) :].reshape(len(texts), best_of, -1)
        best = np.einsum("nd,nkd->nk", targets, guesses).argmax(axis=1)
        chosen = [variants[int(i)] for variants, i in zip(options, best, strict=True)]
    return score_pairs(texts, chosen, embedder, kinds)


# ----- the model ----------------------------------------------------------------------------------------------


def _digest(values: object) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:20]


class UniversalCorrector:
    """SmolLM2 + LoRA that rewrites a marked draft toward the sentence it came from; see the module docstring."""

    def __init__(
        self,
        config: CorrectorConfig | None = None,
        threads: int | None = 1,
        bf16: bool | None = None,
        device: str = "cpu",
    ):
        self.config = config or CorrectorConfig()
        if not self.config.layers:
            self.config.layers = tuple(range(int(decoder_config()["num_hidden_layers"])))
        self.threads = threads
        self.device = torch.device(device)
        self.bf16 = (native_bf16() if self.device.type == "cpu" else True) if bf16 is None else bf16
        self.tokenizer = load_tokenizer()
        self.model = load_decoder(self.config.layers)  # our own copy: LoRA wrapping mutates its modules
        for layer in self.model.model.layers:
            for parent in (layer.self_attn, layer.mlp):
                for name, child in list(parent.named_children()):
                    if isinstance(child, nn.Linear) and name in self.config.lora_targets:
                        lora = LoRALinear(child, self.config.lora_rank, self.config.lora_alpha)
                        setattr(parent, name, lora)
        self.model.to(self.device)
        self.facts: dict[str, object] = {}

    # ----- persistence

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {n: p.detach().cpu().clone().contiguous() for n, p in self.model.named_parameters() if p.requires_grad}

    def load_trainable_state(self, state: dict[str, torch.Tensor]) -> None:
        expected = {n for n, p in self.model.named_parameters() if p.requires_grad}
        if set(state) != expected:
            raise VdbguardError(f"corrector weights do not fit its config: {sorted(set(state) ^ expected)[:4]}")
        self.model.load_state_dict(state, strict=False)

    def save(self, path: Path, facts: dict[str, object] | None = None, dtype: torch.dtype = torch.float32) -> None:
        """``path`` (.safetensors, the LoRA matrices, in ``dtype``: float16 halves the file) and
        ``path.with_suffix('.json')`` (config and facts)."""
        from safetensors.torch import save_file

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        config = asdict(self.config)
        state = {name: tensor.to(dtype) for name, tensor in self.trainable_state().items()}
        staging = path.with_suffix(".tmp")
        save_file(state, str(staging), metadata={"config": json.dumps(config)})
        staging.replace(path)
        info = {"config": config, **({"training": facts} if facts else {})}
        path.with_suffix(".json").write_text(json.dumps(info, indent=2) + "\n")

    @classmethod
    def load(cls, path: Path | None = None, threads: int | None = 1) -> UniversalCorrector:
        """Weights saved by :meth:`save`; ``None``: the ones packaged in ``vdbguard/data``, if any."""
        from safetensors import safe_open
        from safetensors.torch import load_file

        if path is None:
            path = packaged_file(PACKAGED)
            if not path.is_file():
                raise VdbguardError(
                    "no trained corrector is packaged with this vdbguard",
                    "train one (python pipelines/train_corrector.py --out DIR) and load DIR/corrector.safetensors",
                )
        path = Path(path)
        if not path.is_file():
            raise VdbguardError(f"no corrector weights at {path}", "pass the .safetensors file that save() wrote")
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        if "config" not in metadata:
            raise VdbguardError(f"{path} has no corrector config in its metadata", "save it with save()")
        corrector = cls(CorrectorConfig.from_dict(json.loads(metadata["config"])), threads=threads)
        corrector.load_trainable_state(load_file(str(path)))
        sidecar = path.with_suffix(".json")
        if sidecar.is_file():
            corrector.facts = json.loads(sidecar.read_text()).get("training", {})
        return corrector

    # ----- training

    def _encode(self, pair: Pair) -> tuple[list[int], list[int]]:
        text = prompt(pair.hypothesis, pair.cosine, pair.drops, self.config)
        prompt_ids = self.tokenizer(text, add_special_tokens=False).input_ids
        answer = self.tokenizer(pair.text, add_special_tokens=False).input_ids[: self.config.max_tokens]
        return prompt_ids, [*answer, EOS_ID]

    def loss(self, encoded: Sequence[tuple[list[int], list[int]]]) -> torch.Tensor:
        """Teacher forcing; cross-entropy on the answer tokens only (logits computed only there)."""
        sequences = [p + a for p, a in encoded]
        width = max(len(s) for s in sequences) - 1
        inputs = torch.full((len(sequences), width), EOS_ID, dtype=torch.long)
        attention = torch.zeros((len(sequences), width), dtype=torch.long)
        targets = torch.full((len(sequences), width), -100, dtype=torch.long)
        for row, ((p, a), s) in enumerate(zip(encoded, sequences, strict=True)):
            inputs[row, : len(s) - 1] = torch.tensor(s[:-1])
            attention[row, : len(s) - 1] = 1
            targets[row, len(p) - 1 : len(s) - 1] = torch.tensor(a)
        inputs, attention, targets = (t.to(self.device) for t in (inputs, attention, targets))
        hidden = self.model.model(input_ids=inputs, attention_mask=attention).last_hidden_state
        picked = targets >= 0
        logits = hidden[picked] @ self.model.model.embed_tokens.weight.T
        return nn.functional.cross_entropy(logits.float(), targets[picked])

    def train(
        self,
        pairs: Sequence[Pair],
        max_steps: int,
        max_seconds: float | None = None,
        batch_size: int = 8,
        learning_rate: float = 1e-3,
        checkpoint_dir: Path | None = None,
        checkpoint_seconds: float = 120.0,
        seed: int = 0,
        log: Callable[[str], None] | None = None,
        validation: Sequence[Pair] = (),
        on_best: Callable[[UniversalCorrector, dict[str, float]], None] | None = None,
    ) -> dict[str, float]:
        """Train for ``max_steps`` or ``max_seconds``, whichever comes first; resumable from a checkpoint keyed by
        the pairs and every setting, written atomically every ``checkpoint_seconds``. With ``validation`` pairs,
        their loss is measured at each checkpoint and the weights of the lowest one are kept (and handed to
        ``on_best`` as they are found), so a long run on few pairs cannot end overfitted."""
        with torch_threads(self.threads):
            return self._train(
                pairs,
                max_steps,
                max_seconds,
                batch_size,
                learning_rate,
                checkpoint_dir,
                checkpoint_seconds,
                seed,
                log,
                [self._encode(pair) for pair in validation],
                on_best,
            )

    def validation_loss(self, encoded: Sequence[tuple[list[int], list[int]]], batch_size: int = 64) -> float:
        """Answer-token loss over ``encoded`` pairs (each batch's mean, weighted by its pairs), without gradients."""
        self.model.eval()
        total, count = 0.0, 0
        with torch.no_grad(), torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            for start in range(0, len(encoded), batch_size):
                batch = encoded[start : start + batch_size]
                total += float(self.loss(batch)) * len(batch)
                count += len(batch)
        self.model.train()
        return total / max(1, count)

    def _train(
        self,
        pairs: Sequence[Pair],
        max_steps: int,
        max_seconds: float | None,
        batch_size: int,
        learning_rate: float,
        checkpoint_dir: Path | None,
        checkpoint_seconds: float,
        seed: int,
        log: Callable[[str], None] | None,
        validation: Sequence[tuple[list[int], list[int]]],
        on_best: Callable[[UniversalCorrector, dict[str, float]], None] | None,
    ) -> dict[str, float]:
        torch.manual_seed(seed)
        encoded = [self._encode(pair) for pair in pairs]
        key = _digest(
            [
                asdict(self.config),
                [asdict(p) for p in pairs],
                [max_steps, max_seconds, batch_size, learning_rate, seed, self.bf16],
            ]
        )
        root = checkpoint_dir or cache_root() / "checkpoints" / "corrector"
        checkpoint = Path(root) / f"corrector-{key}.pt"
        parameters = [p for p in self.model.parameters() if p.requires_grad]
        optimiser = torch.optim.AdamW(parameters, lr=learning_rate, weight_decay=0.0)
        step, elapsed, losses, done = 0, 0.0, [], False
        if checkpoint.exists():
            saved = torch.load(checkpoint, weights_only=True, map_location="cpu")
            self.load_trainable_state(saved["model"])
            step, elapsed, losses = int(saved["step"]), float(saved["elapsed"]), list(saved["losses"])
            done = bool(saved["done"])
            if not done:
                optimiser.load_state_dict(saved["optimiser"])
            if log:
                log(f"resumed {checkpoint.name} at step {step} ({elapsed:.0f} s){' (finished)' if done else ''}")
        batches_per_epoch = max(1, -(-len(encoded) // batch_size))
        warmup = min(30, max(1, max_steps // 10))
        started, last_save = time.monotonic() - elapsed, time.monotonic()
        done = done or step >= max_steps
        best: tuple[float, int, dict[str, torch.Tensor]] | None = None
        self.model.train()
        while not done:
            epoch, index = divmod(step, batches_per_epoch)
            order = np.random.default_rng([seed, epoch]).permutation(len(encoded))
            batch = [encoded[i] for i in order[index * batch_size : (index + 1) * batch_size]]
            fraction = max(step / max_steps, (time.monotonic() - started) / max_seconds if max_seconds else 0.0)
            rate = learning_rate * min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, fraction)))
            for group in optimiser.param_groups:
                group["lr"] = rate
            optimiser.zero_grad()
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                loss = self.loss(batch)
            loss.backward()
            nn.utils.clip_grad_norm_(parameters, 1.0)
            optimiser.step()
            losses.append(round(float(loss.detach()), 4))
            step += 1
            elapsed = time.monotonic() - started
            done = step >= max_steps or (max_seconds is not None and elapsed >= max_seconds)
            if done or time.monotonic() - last_save >= checkpoint_seconds:
                save_checkpoint(checkpoint, self.trainable_state(), optimiser, step, elapsed, losses, done)
                last_save = time.monotonic()
                held_out = self.validation_loss(validation) if validation else float("nan")
                if log:
                    log(f"step {step}  {elapsed:.0f} s  loss {np.mean(losses[-20:]):.3f}  validation {held_out:.3f}")
                if validation and (best is None or held_out < best[0]):
                    best = (held_out, step, self.trainable_state())
                    if on_best:
                        on_best(self, {"step": step, "seconds": round(elapsed, 1), "validation_loss": held_out})
        if best is not None:
            self.load_trainable_state(best[2])
        self.model.eval()
        return {
            "steps": step,
            "seconds": round(elapsed, 1),
            "initial_loss": round(float(np.mean(losses[:10])), 4) if losses else float("nan"),
            "final_loss": round(float(np.mean(losses[-50:])), 4) if losses else float("nan"),
            **({"validation_loss": round(best[0], 4), "kept_step": best[1]} if best else {}),
        }

    # ----- inference

    def correct(self, hypothesis: str, cosine: float, drops: list[float], candidates: int, seed: int = 0) -> list[str]:
        """Up to ``candidates`` distinct rewrites: the greedy one first, then samples (temperature 0.8, top 40),
        deterministic for the same inputs and ``seed``."""
        text = prompt(hypothesis, cosine, drops, self.config)
        ids = torch.tensor([self.tokenizer(text, add_special_tokens=False).input_ids], device=self.device)
        generator = torch.Generator(self.device).manual_seed(int(_digest([text, seed])[:12], 16))
        autocast = torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16)
        with torch_threads(self.threads), torch.inference_mode(), autocast:
            rows = self._generate(ids, max(1, candidates), generator)
        texts = [self.tokenizer.decode(row, skip_special_tokens=True).strip() for row in rows]
        return [t for t in dict.fromkeys(texts) if t]

    def _generate(self, ids: torch.Tensor, n: int, generator: torch.Generator) -> list[list[int]]:
        self.model.eval()
        output, cache = run_cached(self.model, ids)
        cache.batch_repeat_interleave(n)
        logits = output.logits[:, -1].float().expand(n, -1)
        rows: list[list[int]] = [[] for _ in range(n)]
        finished = torch.zeros(n, dtype=torch.bool, device=self.device)
        for _ in range(self.config.max_tokens + 1):
            top, index = (logits / 0.8).topk(40, dim=-1)
            sampled = index.gather(1, torch.multinomial(top.softmax(-1), 1, generator=generator)).squeeze(1)
            sampled[0] = logits[0].argmax()
            sampled[finished] = EOS_ID
            finished = finished | (sampled == EOS_ID)
            for row, token in enumerate(sampled.tolist()):
                if token != EOS_ID:
                    rows[row].append(token)
            if bool(finished.all()):
                break
            output, cache = run_cached(self.model, sampled[:, None], cache=cache)
            logits = output.logits[:, -1].float()
        return rows


def refine(
    best_text: str, score: Callable[[list[str]], np.ndarray], corrector: Proposer, rounds: int = 3, candidates: int = 8
) -> tuple[str, float, int]:
    """Improve ``best_text`` against a black-box ``score`` (cosine to the target of each text): each round marks
    its words by leave-one-out, asks ``corrector`` for ``candidates`` rewrites and keeps the closest text if it
    beats the best. Returns (best text, its cosine, the number of texts scored)."""
    best_text = " ".join(best_text.split())
    best = float(score([best_text])[0])
    queries = 1
    scored = {best_text}  # never pay twice for the same text
    drops: list[float] | None = None
    for round_index in range(rounds):
        words = best_text.split()
        if not words:
            break
        tried: list[str] = []
        scores: list[float] = []
        if drops is None:  # the marks change only when the best text does
            variants = leave_one_out(words)
            if variants:
                found = [float(s) for s in score(variants)]
                queries += len(variants)
                scored.update(variants)
                drops = [best - s for s in found]
                tried, scores = variants, found
            else:
                drops = [best]
        proposals = corrector.correct(best_text, best, drops, candidates, seed=round_index)
        proposals = [p for p in dict.fromkeys(" ".join(p.split()) for p in proposals) if p and p not in scored]
        if proposals:
            scores += [float(s) for s in score(proposals)]
            queries += len(proposals)
            scored.update(proposals)
            tried += proposals
        if not tried:
            continue
        top = int(np.argmax(scores))
        if scores[top] > best:
            best_text, best, drops = tried[top], scores[top], None
    return best_text, best, queries
