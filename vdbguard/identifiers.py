"""Identifiers users define: their own patterns, deny lists and allow lists, in Presidio's ad-hoc recognizer shape.

A job file's ``[detector]``, ``[[identifiers]]`` and ``[[allow_lists]]``, or the same keys in the file that
``scan --identifiers FILE`` reads (YAML, JSON or TOML). Field names are Presidio's (``supported_entity``,
``patterns`` of ``name``/``regex``/``score``, ``context``, ``deny_list``, ``deny_list_score``, ``allow_list``,
``allow_list_match``), so a recognizer written for Presidio's ad-hoc API reads here as it is. Each identifier is a
type of its own in reports, ``CUSTOM:<supported_entity>``, with its own base severity.

Validated by pydantic, so a regex that does not compile or an unknown validator stops the job before it scans,
named with its place in the file. The detector reads English only: ``language`` refuses anything else rather
than scan German text with English models and call it clean.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from vdbguard.pii import CUSTOM_PREFIX, CustomType, PiiType
from vdbguard.reports.schema import Severity

SUPPORTED_LANGUAGES = ("en",)
LANGUAGE_HINT = (
    "vdbguard's PII detector reads English only (spaCy's English pipeline, English context words and name lists); "
    "text in another language would be scanned with English models and mostly called clean"
)
VALIDATORS = ("luhn", "iban", "aba_routing", "verhoeff")  # checksums a pattern's match must pass
_ENTITY = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
# Presidio compiles patterns and deny lists with these flags; a pattern is checked here as it will run there
PRESIDIO_FLAGS = ("IGNORECASE", "MULTILINE", "DOTALL")


def check_language(language: str) -> str:
    """``language`` if the detector reads it, else a ValueError that says which it reads."""
    if language.strip().lower() not in SUPPORTED_LANGUAGES:
        raise ValueError(f"language {language!r} is not supported: supported languages: en. {LANGUAGE_HINT}")
    return language.strip().lower()


def _compiled(pattern: str) -> Any:
    """The pattern as Presidio compiles it (the ``regex`` module, its flags), or a ValueError naming the fault."""
    import regex

    flags = 0
    for flag in PRESIDIO_FLAGS:
        flags |= getattr(regex, flag)
    try:
        compiled = regex.compile(pattern, flags)
    except regex.error as exc:
        raise ValueError(f"regex {pattern!r} does not compile: {exc}") from None
    if compiled.search("") is not None:
        raise ValueError(f"regex {pattern!r} matches the empty text, so it would match everywhere")
    return compiled


def _entity(value: str) -> str:
    """A user's entity name as the detector and reports key it: upper case, without the ``CUSTOM:`` prefix."""
    name = value.strip().upper().removeprefix(CUSTOM_PREFIX)
    if not _ENTITY.match(name):
        raise ValueError(f"{value!r} is not a type name: capitals, digits and _, starting with a letter (EMPLOYEE_ID)")
    return name


def _words(values: list[str], what: str) -> list[str]:
    blank = [i for i, value in enumerate(values) if not value.strip()]
    if blank:
        raise ValueError(f"{what} entry {blank[0]} is blank")
    return values


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PatternEntry(_Strict):
    """One regex of an identifier, as Presidio's ``Pattern``."""

    name: str | None = Field(default=None, description="Label for the pattern (default: the identifier's name).")
    regex: str = Field(description="Regular expression (Python `regex` syntax; matched case-insensitively).")
    score: float = Field(
        ge=0.0,
        le=1.0,
        description="Confidence of a match without context. Reported from 0.4; a context word among the 5 words "
        "before a match adds 0.35 (and lifts it to at least 0.4), so 0.1 means: only with context.",
    )

    @field_validator("regex")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        _compiled(pattern)
        return pattern


class Identifier(_Strict):
    """A recognizer of the user's own: regexes with context words and an optional checksum, or a deny list."""

    supported_entity: str = Field(description="Its type: reported as CUSTOM:<supported_entity>, e.g. EMPLOYEE_ID.")
    name: str | None = Field(default=None, description="Recognizer name shown in evidence (default from the type).")
    supported_language: str = Field(default="en", description="Only en: the detector reads English only.")
    patterns: list[PatternEntry] | None = Field(default=None, description="Regexes, each with a name and score.")
    context: list[str] = Field(default_factory=list, description="Words that raise a pattern's score when near.")
    validator: str | None = Field(
        default=None, description=f"Checksum a pattern's match must pass: one of {', '.join(VALIDATORS)}."
    )
    deny_list: list[str] | None = Field(
        default=None, description="Words or phrases that are this type wherever they occur (case-insensitive)."
    )
    deny_list_score: float = Field(default=1.0, gt=0.0, le=1.0, description="Confidence of a deny-list match.")
    allow_list: list[str] = Field(default_factory=list, description="Matches that are not this type after all.")
    allow_list_match: Literal["exact", "regex"] = Field(
        default="exact", description="exact: the whole match as written; regex: any match of one (case-insensitive)."
    )
    severity: Severity = Field(default=Severity.MEDIUM, description="Base severity of a finding of this type.")

    _entity = field_validator("supported_entity")(lambda value: _not_built_in(_entity(value)))
    _language = field_validator("supported_language")(check_language)

    @field_validator("validator")
    @classmethod
    def _known_validator(cls, validator: str | None) -> str | None:
        if validator is not None and validator not in VALIDATORS:
            raise ValueError(f"unknown validator {validator!r}; one of {', '.join(VALIDATORS)}")
        return validator

    @field_validator("context")
    @classmethod
    def _context_words(cls, context: list[str]) -> list[str]:
        return _words(context, "context")

    @field_validator("deny_list")
    @classmethod
    def _deny_words(cls, deny_list: list[str] | None) -> list[str] | None:
        if deny_list is None:
            return None
        if not deny_list:
            raise ValueError("deny_list is empty: give the words or phrases, or leave deny_list out")
        unreadable = [value for value in _words(deny_list, "deny_list") if not re.search(r"\w", value)]
        if unreadable:
            raise ValueError(f"deny_list entry {unreadable[0]!r} holds no letter or digit to match")
        return deny_list

    @field_validator("patterns")
    @classmethod
    def _some_patterns(cls, patterns: list[PatternEntry] | None) -> list[PatternEntry] | None:
        if patterns is not None and not patterns:
            raise ValueError("patterns is empty: give at least one, or leave patterns out")
        return patterns

    @model_validator(mode="after")
    def _recognizes_something(self) -> Identifier:
        if self.patterns is None and self.deny_list is None:
            raise ValueError("give patterns (regexes) or a deny_list, or both")
        if self.validator is not None and self.patterns is None:
            raise ValueError("a validator checks what patterns match: give patterns, or drop the validator")
        _check_allow_list(self.allow_list, self.allow_list_match)
        return self

    @property
    def pii_type(self) -> CustomType:
        return CustomType.named(self.supported_entity)

    @property
    def recognizer_name(self) -> str:
        return self.name or "".join(part.title() for part in self.supported_entity.split("_")) + "Recognizer"


def _not_built_in(entity: str) -> str:
    if entity in PiiType.__members__:
        raise ValueError(
            f"{entity} is a built-in type: name yours otherwise (its values can be allowed under [[allow_lists]])"
        )
    return entity


def _check_allow_list(allow_list: list[str], match: str) -> None:
    _words(allow_list, "allow_list")
    if match == "regex":
        for pattern in allow_list:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"allow_list regex {pattern!r} does not compile: {exc}") from None


class AllowListEntry(_Strict):
    """Values the detector never reports as one type, as Presidio's analyzer ``allow_list``, but per type."""

    supported_entity: str = Field(description="A built-in type (EMAIL) or an identifier's supported_entity.")
    allow_list: list[str] = Field(min_length=1, description="Values that are not a leak of this type.")
    allow_list_match: Literal["exact", "regex"] = Field(
        default="exact", description="exact: the whole value as written; regex: any match of one (case-insensitive)."
    )

    @model_validator(mode="after")
    def _compiles(self) -> AllowListEntry:
        _check_allow_list(self.allow_list, self.allow_list_match)
        return self


class DetectorOptions(_Strict):
    name: str = Field(
        default="presidio",
        description="The PII detector plugin: presidio (version 17: a learned tagger judges names and addresses), "
        "presidio-ner (version 6: spaCy's NER trained for names and a name list) or presidio-sm (version 5: spaCy's "
        "own NER).",
    )
    language: str = Field(default="en", description="Language of the stored text; the detector reads en only.")

    @field_validator("name")
    @classmethod
    def _installed(cls, name: str) -> str:
        from vdbguard import plugins

        known = plugins.names("detectors")
        if name not in known:
            hint = plugins.did_you_mean(name, known)
            raise ValueError(f"unknown detector {name!r}; {hint}installed: {sorted(known)}")
        return name

    _language = field_validator("language")(check_language)


class IdentifierTables(BaseModel):
    """``[detector]``, ``[[identifiers]]`` and ``[[allow_lists]]``: in a job file and in an identifiers file."""

    detector: DetectorOptions = Field(default_factory=DetectorOptions)
    identifiers: list[Identifier] = Field(
        default_factory=list, description="Your own types: regexes with context and a checksum, or deny lists."
    )
    allow_lists: list[AllowListEntry] = Field(
        default_factory=list, description="Per type, values the detector never reports as that type."
    )

    @field_validator("identifiers")
    @classmethod
    def _one_entry_per_type(cls, identifiers: list[Identifier]) -> list[Identifier]:
        first: dict[str, int] = {}
        for i, identifier in enumerate(identifiers):
            entity = identifier.supported_entity
            if entity in first:
                raise ValueError(
                    f"identifiers[{first[entity]}] and identifiers[{i}] both define {entity}: "
                    "put its patterns and deny_list in one entry"
                )
            first[entity] = i
        return identifiers

    @field_validator("allow_lists")
    @classmethod
    def _known_types(cls, allow_lists: list[AllowListEntry], info: ValidationInfo) -> list[AllowListEntry]:
        defined = {identifier.supported_entity for identifier in info.data.get("identifiers") or []}
        for i, entry in enumerate(allow_lists):
            name = entry.supported_entity.strip().upper()
            if name not in PiiType.__members__ and name.removeprefix(CUSTOM_PREFIX) not in defined:
                raise ValueError(
                    f"allow_lists[{i}].supported_entity {entry.supported_entity!r} is neither a built-in type "
                    f"({', '.join(PiiType)}) nor a supported_entity of [[identifiers]]"
                )
        return allow_lists

    def detector_settings(self) -> DetectorSettings:
        return DetectorSettings(detector=self.detector, identifiers=self.identifiers, allow_lists=self.allow_lists)


class DetectorSettings(_Strict, IdentifierTables):
    """What the PII detector is built with beyond its defaults: the file ``scan --identifiers`` reads.

    Its ``digest`` goes into every key on the detector's labels (a scan's verdicts, an owner calibration), so
    a re-scan with other identifiers or allow lists judges every record again."""

    @property
    def is_default(self) -> bool:
        return not self.identifiers and not self.allow_lists

    def digest(self) -> str:
        return _digest(self.model_dump(mode="json"))

    def built_in_digest(self) -> str | None:
        """What changes the detector's findings of built-in types (their allow lists); None when nothing does."""
        built_in = [e.model_dump(mode="json") for e in self.allow_lists if self._type_of(e) in PiiType.__members__]
        return _digest(built_in) if built_in else None

    def severities(self) -> dict[str, Severity]:
        return {identifier.pii_type: identifier.severity for identifier in self.identifiers}

    def allows(self, pii_type: str, value: str) -> bool:
        """Whether ``value`` is on an allow list of ``pii_type`` (a PiiType's value or ``CUSTOM:NAME``)."""
        return any(matches(value) for matches in self._allowed.get(pii_type, ()))

    @cached_property
    def _allowed(self) -> dict[str, list[Any]]:
        allowed: dict[str, list[Any]] = {}
        entries = [(self._type_of(entry), entry.allow_list, entry.allow_list_match) for entry in self.allow_lists]
        entries += [(i.pii_type, i.allow_list, i.allow_list_match) for i in self.identifiers if i.allow_list]
        for pii_type, values, match in entries:
            allowed.setdefault(str(pii_type), []).append(_allow_matcher(values, match))
        return allowed

    def _type_of(self, entry: AllowListEntry) -> str:
        name = entry.supported_entity.strip().upper()
        return name if name in PiiType.__members__ else CustomType.named(name.removeprefix(CUSTOM_PREFIX))


@dataclass(frozen=True)
class _AllowMatcher:
    """Presidio's rule: ``exact`` is the whole value as written, ``regex`` a search with any one, ignoring case.
    A class, not a closure: a detector and its settings are pickled to a distributed scan's workers."""

    exact: frozenset[str]
    pattern: re.Pattern[str] | None

    def __call__(self, value: str) -> bool:
        return value in self.exact or (self.pattern is not None and self.pattern.search(value) is not None)


def _allow_matcher(values: list[str], match: str) -> _AllowMatcher:
    if match == "exact":
        return _AllowMatcher(frozenset(values), None)
    return _AllowMatcher(frozenset(), re.compile("|".join(f"(?:{value})" for value in values), re.IGNORECASE))


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
