"""Redaction before embedding: the one defense that removes a name from a vector is never embedding it.

``"Call Jane Doe at 555-0100"`` becomes ``"Call <PERSON> at <PHONE>"`` (or, with keyed pseudonyms,
``"Call Brandon Russell at +1-785-550-2258"``) before the text reaches the embedding model, and no
inversion attack can recover from the vector what was never in it. It is the baseline SPARSE (Tsai
et al., arXiv:2602.07090, 2026) compares vector-side defences against.

Where it runs (it needs the text, so never on a vector-DB client, which sees vectors only):

* LangChain / LlamaIndex: ``GuardedEmbeddings(inner, TextRedaction())`` /
  ``GuardedEmbedding(inner, TextRedaction())`` redact every document before the inner model sees it.
* Pipelines that embed themselves: ``vdbguard.hooks.redact_then_embed(texts, model.encode)``.
* ``redact+gaussian`` (:mod:`vdbguard.transforms.chain`) redacts, embeds, then adds noise.

Policy: ``types`` are the PII types redacted (default: all of :class:`~vdbguard.pii.PiiType`: people,
contact details, identifiers, birth dates, medical terms), ``keep`` the ones left in. Organisations
and place names outside a postal address are not PII types, so they always stay (``keep`` accepts
``"ORGANIZATION"`` and ``"LOCATION"`` to say so). Queries are not
redacted unless ``redact_queries=True``: a search for "Jane Doe" still matches the parts of the
corpus that never mentioned her by name. With pseudonyms and the same key, a redacted query for
"Jane Doe" becomes the same fake name her documents got, so searching by name keeps working.

Limits: whatever the detector misses goes into the vector verbatim (on 200 of vdbguard's synthetic
PII sentences, 22 of 413 inserted values survived, mostly phone and account numbers), and it also
edits clean text (27 of 346 human-written lines, mostly place names taken for addresses), which
removes words a user might search for. Only the vector is protected: a store that keeps the raw
text next to it still holds the name (store ``redact_many(texts)`` instead, or no text).
Detection is vdbguard's offline Presidio analyzer (:class:`~vdbguard.detectors.presidio.PresidioDetector`);
replacement is Presidio's anonymizer, which also resolves overlapping detections. A text with something redacted is
read again with its placeholders in, as a scan of the copy reads it, where the tagger nearly found a name in it: the
names it finds only once a number beside them is gone go too, and now and then a capitalised word before a placeholder
("Ref <PERSON>").
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import date
from functools import lru_cache, partial
from typing import Any, ClassVar

import numpy as np

from vdbguard.detectors.base import Detection, Detector
from vdbguard.errors import VdbguardError
from vdbguard.pii import PiiType
from vdbguard.text import TITLES
from vdbguard.transforms.base import Transform
from vdbguard.transforms.keyed import _KEY_HINT, KEY_ENV, key_id, load_key

__all__ = ["Redactor", "TextRedaction", "redact", "redact_many"]

MODES = ("placeholder", "pseudonym")
NOT_PII = ("ORGANIZATION", "LOCATION")  # never redacted; accepted in keep= to state the intent
_TEXT_SIDE_HINT = (
    "wrap the embedding model instead (vdbguard.hooks.langchain.GuardedEmbeddings, "
    "vdbguard.hooks.llamaindex.GuardedEmbedding), or embed with "
    "vdbguard.hooks.redact_then_embed(texts, embed)"
)


def _date(day: date) -> str:
    return f"{day:%B} {day.day}, {day.year}"


# Fakes that read like the real thing, so the embedder sees a natural sentence. MEDICAL has none
# that keeps the meaning (another condition would be a false fact), so it gets the placeholder.
_FAKES: dict[PiiType, Callable[[Any], str]] = {
    PiiType.PERSON: lambda f: f.name(),
    PiiType.EMAIL: lambda f: f.email(safe=True),
    PiiType.PHONE: lambda f: f.phone_number(),
    PiiType.SSN: lambda f: f.ssn(),
    PiiType.ADDRESS: lambda f: f.street_address(),
    PiiType.DATE_OF_BIRTH: lambda f: _date(f.date_of_birth(minimum_age=18, maximum_age=90)),
    PiiType.CREDIT_CARD: lambda f: f.credit_card_number(),
    PiiType.ACCOUNT_NUMBER: lambda f: f.iban(),
    PiiType.SECRET: lambda f: f.password(length=24),
}


def pii_types(values: Iterable[PiiType | str], what: str = "types") -> frozenset[PiiType]:
    """PII type names (any case) as PiiTypes, or an error listing the valid ones."""
    out = set()
    for value in values:
        try:
            out.add(PiiType(str(value).upper()))
        except ValueError:
            raise VdbguardError(
                f"unknown PII type {value!r} in {what}",
                f"choose from {', '.join(PiiType)}; organisations and place names are not PII types "
                "and are never redacted",
            ) from None
    return frozenset(out)


# a capitalised word (any script) or an initial, joined to a detected name by one space
_NAME_WORD_BEFORE = re.compile(r"(?:\b[^\W\d_][.]|\b[^\W\d_a-z][^\W\d_]*) $")
_NAME_WORD_AFTER = re.compile(r" (?:[^\W\d_][.](?!\w)|[^\W\d_a-z][^\W\d_'-]*(?:[-'][^\W\d_]+)?\b)")


def _name_span(text: str, start: int, end: int, pii_type: PiiType) -> tuple[int, int]:
    """A PERSON span grown over the capitalised words and initials right next to it: the detector often
    finds "Csilla" or "Erzsébet" and misses the surname beside it ("Csilla Horváth" -> "<PERSON> Horváth"),
    and the surname is what identifies someone. A title beside the name goes too."""
    if pii_type is not PiiType.PERSON:
        return start, end
    while (match := _NAME_WORD_BEFORE.search(text, 0, start)) and match.end() == start:
        word = match.group().strip(" .").casefold()
        sentence_start = not text[: match.start()].rstrip() or text[: match.start()].rstrip()[-1] in ".!?"
        if sentence_start and word not in TITLES and len(word) > 1:  # "Ask", "Ref": capitalised by position
            break
        start = match.start()
    while match := _NAME_WORD_AFTER.match(text, end):
        end = match.end()
    return start, end


def _placeholders(text: str, spans: Sequence[tuple[str, int, int, float]]) -> tuple[str, Callable[[int, bool], int]]:
    """``text`` with each span (overlapping ones merged) replaced by ``<TYPE>``, and the map from an offset in it back
    to ``text``: an offset inside a placeholder goes to its span's start, or with ``start`` False to its end."""
    merged: list[list[Any]] = []
    for kind, start, end, _ in sorted(spans, key=lambda span: span[1]):
        if merged and start < merged[-1][2]:
            merged[-1][2] = max(merged[-1][2], end)
        else:
            merged.append([kind, start, end])
    pieces, moved, length, at = [], [], 0, 0  # moved: each placeholder's start and end, then its span's
    for kind, start, end in merged:
        placeholder = f"<{kind}>"
        pieces += [text[at:start], placeholder]
        length += start - at
        moved.append((length, length + len(placeholder), start, end))
        length, at = length + len(placeholder), end
    pieces.append(text[at:])

    def back(offset: int, start: bool) -> int:
        shift = 0
        for begin, finish, old_start, old_end in moved:
            if offset <= begin:
                break
            if offset < finish:
                return old_start if start else old_end
            shift = old_end - finish
        return offset + shift

    return "".join(pieces), back


def _words(text: str) -> list[str]:
    return " ".join(text.split()).casefold().split()


class Redactor:
    """Replace each detected PII span with ``placeholder.format(type=...)``, e.g. ``<EMAIL>``.

    ``types`` limits which PII types are redacted (default: all vdbguard knows); ``min_score``
    is the detector's confidence cut-off. With ``pseudonym_key``, spans get a fake value instead,
    the same for the same value (ignoring case and spacing) under one key.
    """

    # the tagger's doubt (``Reading.doubt``) past which a redacted text is read again: on dev (4,000 train-split real
    # sentences with placed PII) it keeps 23 of the 25 names only a second reading finds, reading 16% of the texts
    # redacted again rather than all of them (the demo's notes, a smoke test: all 7 people, 26%)
    read_again_above: ClassVar[float] = 0.04

    def __init__(
        self,
        min_score: float = 0.4,
        types: Iterable[PiiType | str] | None = None,
        placeholder: str = "<{type}>",
        pseudonym_key: bytes | None = None,
    ) -> None:
        try:
            from presidio_anonymizer import AnonymizerEngine
        except ImportError as exc:
            raise VdbguardError("text redaction needs presidio-anonymizer", "pip install presidio-anonymizer") from exc
        from vdbguard.detectors.presidio import PresidioDetector

        try:
            placeholder.format(type="PERSON")
        except (KeyError, IndexError, ValueError) as exc:
            raise VdbguardError(
                f"placeholder {placeholder!r} is not a valid format string", "use {type} for the type, e.g. '<{type}>'"
            ) from exc
        self.detector: Detector = PresidioDetector(min_score=min_score)
        self.types = None if types is None else pii_types(types)
        self.placeholder = placeholder
        self._engine = AnonymizerEngine()
        self._key = pseudonym_key
        self._faker: Any = None
        self._lock = threading.Lock()  # one Faker, reseeded per value
        if pseudonym_key is not None:
            from faker import Faker

            self._faker = Faker("en_US")

    def redact(self, text: str) -> str:
        return self.redact_many([text])[0]

    def redact_many(self, texts: Sequence[str]) -> list[str]:
        """Each text with its PII replaced; the texts go through the detector's batched path together. A text with
        something redacted is read once more with its placeholders in where the detector nearly found a name in it
        (``read_again_above``): the tagger can miss a name beside a number it has not seen replaced ("Record: Rudolf
        Szalai, SSN 409213082"), and a scan of the copy reads it that way."""
        readings = self.detector.read_whole_many(texts)
        found = [self._wanted(reading.detections) for reading in readings]
        redacted = {
            i: _placeholders(texts[i], self._spans(texts[i], found[i]))
            for i, reading in enumerate(readings)
            if found[i] and reading.doubt >= self.read_again_above
        }
        again = self.detector.detect_whole_many([text for text, _ in redacted.values()]) if redacted else []
        for (i, (_, back)), detections in zip(redacted.items(), again, strict=True):
            for d in self._wanted(detections):
                start, end = back(d.start, True), back(d.end, False)
                found[i].append(replace(d, value=texts[i][start:end], start=start, end=end))
        return [self._replaced(text, detections) for text, detections in zip(texts, found, strict=True)]

    def _wanted(self, detections: Sequence[Detection]) -> list[Detection]:
        return [d for d in detections if self.types is None or d.pii_type in self.types]

    def _spans(self, text: str, detections: Sequence[Detection]) -> list[tuple[str, int, int, float]]:
        return [(d.pii_type.value, *_name_span(text, d.start, d.end, d.pii_type), d.score) for d in detections]

    def _replaced(self, text: str, detections: Sequence[Detection]) -> str:
        from presidio_anonymizer.entities import RecognizerResult

        if not detections:
            return text
        results = [RecognizerResult(*span) for span in self._spans(text, detections)]
        operators = {t.value: self._operator(t) for t in {d.pii_type for d in detections}}
        return self._engine.anonymize(text=text, analyzer_results=results, operators=operators).text

    def pseudonym(self, pii_type: PiiType, value: str) -> str:
        """A fake ``pii_type`` seeded by an HMAC of ``value``: consistent under one key, unguessable without
        it, and sharing no word with ``value`` (else the placeholder)."""
        if self._key is None or pii_type not in _FAKES:
            return self.placeholder.format(type=pii_type.value)
        words = _words(value)
        for attempt in range(8):
            message = f"vdbguard/pseudonym/{pii_type.value}/{attempt}\0{' '.join(words)}".encode()
            seed = int.from_bytes(hmac.new(self._key, message, hashlib.sha256).digest()[:16], "big")
            with self._lock:
                self._faker.seed_instance(seed)
                fake = _FAKES[pii_type](self._faker)
            if not set(words) & set(_words(fake)):
                return fake
        return self.placeholder.format(type=pii_type.value)

    def _operator(self, pii_type: PiiType) -> Any:
        from presidio_anonymizer.entities import OperatorConfig

        if self._key is not None and pii_type in _FAKES:
            return OperatorConfig("custom", {"lambda": partial(self.pseudonym, pii_type)})
        return OperatorConfig("replace", {"new_value": self.placeholder.format(type=pii_type.value)})


class TextRedaction(Transform):
    """The ``redact`` transform: PII out of the text before the embedder sees it (see the module docstring).

    ``mode="pseudonym"`` needs a secret key (``key=`` or ``$VDBGUARD_TRANSFORM_KEY``): without one,
    anyone could compute the pseudonym of a guessed name and undo the mapping.
    """

    name: ClassVar[str] = "redact"
    description: ClassVar[str] = (
        "replace PII in the text with typed placeholders or keyed pseudonyms before it is embedded (text-side)"
    )
    strength_meaning: ClassVar[str] = (
        "detector confidence a span needs to be redacted, 0-1 (smaller is stronger; at 0.4 everything "
        "vdbguard's scanner flags is redacted)"
    )
    default_strength: ClassVar[float] = 0.4
    default_strengths: ClassVar[tuple[float, ...]] = (0.85, 0.6, 0.4)
    text_side: ClassVar[bool] = True

    def __init__(
        self,
        strength: float | None = None,
        seed: int | None = None,
        key: bytes | str | None = None,
        *,
        types: Iterable[PiiType | str] | None = None,
        keep: Iterable[PiiType | str] = (),
        mode: str = "placeholder",
        placeholder: str = "<{type}>",
        redact_queries: bool = False,
    ) -> None:
        strength = self.default_strength if strength is None else strength
        if not 0.0 <= float(strength) <= 1.0:
            raise VdbguardError(
                f"redact strength is a detector confidence in [0, 1], got {strength!r}",
                "0.85 redacts only sure detections, 0.4 everything vdbguard's scanner flags",
            )
        if mode not in MODES:
            raise VdbguardError(f"unknown redaction mode {mode!r}", f"use one of {', '.join(MODES)}")
        super().__init__(float(strength), seed)
        kept = pii_types((t for t in keep if str(t).upper() not in NOT_PII), "keep")
        self.types = (pii_types(types) if types is not None else frozenset(PiiType)) - kept
        if not self.types:
            raise VdbguardError("no PII type is left to redact (types minus keep is empty)", "keep fewer types")
        self.mode = mode
        self.redact_queries = redact_queries
        self._key: bytes | None = None
        self._last: tuple[bytes, list[str]] | None = None
        if mode == "pseudonym":
            if key is None and not os.environ.get(KEY_ENV):
                raise VdbguardError(
                    "redaction with mode='pseudonym' needs a secret key: without one, anyone could compute "
                    "the pseudonym of a guessed name",
                    _KEY_HINT,
                )
            self._key = load_key(key)
        self.redactor = Redactor(self.strength, self.types, placeholder, pseudonym_key=self._key)

    def __repr__(self) -> str:  # never show the key
        return f"TextRedaction(strength={self.strength!r}, mode={self.mode!r})"

    def transform_texts(self, texts: Sequence[str]) -> list[str]:
        """The texts redacted. The last call's answer is kept: measuring a defense redacts its training corpus once
        for the alignment map and again for the adaptive attacker (over a minute each for 3,200 texts)."""
        digest = hashlib.sha256(json.dumps(list(texts)).encode()).digest()
        if self._last is None or self._last[0] != digest:
            self._last = digest, self.redactor.redact_many(texts)
        return list(self._last[1])

    def expect(self, texts: int) -> None:
        """About ``texts`` texts are coming (a copy of a collection): the detector shares its work with a worker
        process per further core, at its own cut-off only, where the workers find exactly these spans."""
        from vdbguard.detectors import DEFAULT_DETECTOR, load_detector
        from vdbguard.detectors.presidio import PresidioDetector
        from vdbguard.detectors.shared import detector_cores

        detector = self.redactor.detector
        if isinstance(detector, PresidioDetector) and detector.min_score == detector.cutoff and detector_cores() > 1:
            self.redactor.detector = load_detector(DEFAULT_DETECTOR, detector_cores())
            self.redactor.detector.expect(texts)

    def write_path(self, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Redact, then embed: there is no vector stage."""
        return np.asarray(embed(self.transform_texts(texts)), dtype=np.float32)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        raise VdbguardError(
            "transform 'redact' works on text before it is embedded; it cannot protect vectors already made",
            _TEXT_SIDE_HINT,
        )

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "strength": self.strength,
            "types": sorted(t.value for t in self.types),
            "mode": self.mode,
            "placeholder": self.redactor.placeholder,
            "redact_queries": self.redact_queries,
        }
        if self._key is not None:
            import faker

            out.update(key_id=key_id(self._key), faker=faker.VERSION)  # another Faker draws other fakes
        return out


@lru_cache(maxsize=1)
def _default_redactor() -> Redactor:
    return Redactor()


def redact(text: str) -> str:
    """``text`` with detected PII replaced by type placeholders (``<PERSON>``, ``<EMAIL>``, ...)."""
    return _default_redactor().redact(text)


def redact_many(texts: Sequence[str]) -> list[str]:
    return _default_redactor().redact_many(texts)
