"""Word lists the detectors and attacks read: Faker's person names (one walk over its locales), the detector's name
list, and the words that are evidence of nothing."""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from vdbguard.data.medical import CONDITIONS, DRUGS

_GIVEN = ("first_names", "first_names_male", "first_names_female")


@lru_cache(maxsize=8)
def faker_names(locales: tuple[str, ...] | None = None) -> tuple[frozenset[str], frozenset[str]]:
    """(given names, family names) as Faker's person providers spell them, of ``locales`` (None: every locale)."""
    import faker.providers.person as person_providers

    given: set[str] = set()
    family: set[str] = set()
    for module in pkgutil.iter_modules(person_providers.__path__):
        if locales is not None and module.name not in locales:
            continue
        provider = importlib.import_module(f"{person_providers.__name__}.{module.name}").Provider
        for attrs, out in ((_GIVEN, given), (("last_names",), family)):
            for attr in attrs:
                values = getattr(provider, attr, ())
                if isinstance(values, (list, tuple, dict)):  # a few locales compute names in a property
                    out.update(str(value) for value in values)
    return frozenset(given), frozenset(family)


def capitalised_names(locales: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """Sorted (first names, last names): ASCII, capitalised, one word, as slot search spells a name out."""
    shape = re.compile(r"^[A-Z][A-Za-z'-]*[a-z]$")
    given, family = faker_names(None if locales is None else tuple(locales))
    given, family = {n.strip() for n in given}, {n.strip() for n in family}
    return (
        sorted(n for n in given if n.isascii() and shape.match(n)),
        sorted(n for n in family if n.isascii() and shape.match(n)),
    )


@lru_cache(maxsize=1)
def name_gazetteer() -> frozenset[str]:
    """Lower-cased first and last names from every Faker locale (ASCII spellings), minus ordinary English words.

    Inversion output is lower-case word soup, where spaCy's NER sees no names; a closed list does.
    Names that are also common words ("will", "young") would flag clean text, so they are dropped. Kept on
    disk (0.6 s of every scan's and every detector worker's start), keyed by this module and the corpus's
    sources.
    """
    from vdbguard.corpus.labelled import cached_from_corpus

    module = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return frozenset(cached_from_corpus(f"name-gazetteer-{module}", lambda: sorted(gazetteer_names())))


def gazetteer_names() -> frozenset[str]:
    """``name_gazetteer`` computed afresh."""
    from spacy.lang.en.stop_words import STOP_WORDS

    given, family = faker_names()
    names = {name.lower() for name in given | family}
    plausible = {name for name in names if name.isascii() and name.isalpha() and len(name) > 2}
    return frozenset(plausible - common_words() - STOP_WORDS)


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """Words that are evidence of nothing: calendar names, lorem words, and every word of clean text."""
    import calendar

    from faker.providers.lorem.en_US import Provider as Lorem

    from vdbguard.corpus import human_sentences, synthetic_clean

    words = {w.lower() for w in [*calendar.month_name, *calendar.month_abbr, *calendar.day_name, *calendar.day_abbr]}
    words.update(Lorem.word_list)
    words.update(("com", "org", "net", "edu", "gov", "info", "biz"))
    for term in (*CONDITIONS, *DRUGS):  # medical words are MEDICAL evidence, not names
        words.update(re.findall(r"[a-z]+", term.lower()))
    clean = [*human_sentences("train"), *human_sentences("holdout")]
    clean += [item.text for item in synthetic_clean(3000, seed=0)]
    for sentence in clean:
        words.update(re.findall(r"[a-z]+", sentence.lower()))
    return frozenset(words)


@lru_cache(maxsize=1)
def ordinary_words() -> frozenset[str]:
    """Words that name nobody even capitalised: ``common_words``, honorifics and a few of chat's."""
    honorifics = {"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "dame"}  # counted before a capitalised word
    return common_words() | honorifics | {"i", "i'm", "i've", "i'll", "i'd", "ok", "okay"}
