"""Synthetic sentences from the templates: Faker-filled PII with exact labels, and clean look-alikes.

Hard negatives: a probe for "contains a PHONE" must learn *a phone number is present*, not *this looks
like a support ticket*. Clean sentences therefore come from the very same templates as the PII ones, with
each PII slot filled by a non-PII phrase of the same role ("the customer", "the number on file", "DOB not
on file", "N/A"), drawn with the same template distribution. PII sentences also leave some of their slots
clean, so "SSN not provided" shows up on both sides of the boundary.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from faker import Faker

from vdbguard.corpus.labelled import DEFAULT_LOCALES, LabelledText
from vdbguard.corpus.templates import (
    CLEAN,
    EMAIL_DOMAINS,
    FLAVOUR,
    KIND_TYPE,
    MED_NP,
    MED_PRED,
    MED_V,
    MONTHS,
    TEMPLATES,
    TITLES_FEMALE,
    TITLES_MALE,
)
from vdbguard.data.medical import CONDITIONS, DRUGS
from vdbguard.pii import PROBED_TYPES, PiiType

MAX_TYPES_PER_SENTENCE = 3
CORPUS_DAY = date(2026, 1, 1)
"""The day dates are drawn relative to, not today: the corpus, and the models keyed by its hash (those vdbguard
ships among them), must be the same on every day."""
"""A sentence carries 1-3 PII types: enough co-occurrence to be realistic, few enough that each probe
still sees many sentences where only *its* type distinguishes positive from negative."""

_SLOT_RE = re.compile(r"\{([a-z_]+?)(\d*)(?:=([^{}]*))?\}")


def derive_seed(seed: int, salt: str) -> int:
    """A sub-seed: independent streams for each purpose, stable across Python runs (no ``hash()``)."""
    return int.from_bytes(hashlib.sha256(f"{salt}:{seed}".encode()).digest()[:8], "big")


def _flavour(text: str, rng: random.Random, depth: int = 0) -> str:
    """Expand non-PII placeholders (they may nest, e.g. a closer that names a team)."""
    if depth > 4:
        raise ValueError(f"flavour placeholders nest too deeply in {text!r}")

    def sub(match: re.Match[str]) -> str:
        kind = match.group(1) + match.group(2)  # "n4" is a flavour name, "sig2" is not
        if kind not in FLAVOUR:
            kind = match.group(1)
        if kind not in FLAVOUR:
            raise KeyError(f"unknown placeholder {{{kind}}} in {text!r}")
        return _flavour(str(rng.choice(FLAVOUR[kind])), rng, depth + 1)

    return _SLOT_RE.sub(sub, text)


def _ascii_slug(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", folded.lower())


@dataclass
class _Person:
    first: str
    last: str
    female: bool


@dataclass
class SentenceState:
    """Per-sentence state: one value per (type, index), reused wherever that slot appears twice."""

    rng: random.Random
    fake: Faker
    locale: str
    pii_keys: set[tuple[PiiType, str]]
    people: dict[str, _Person] = field(default_factory=dict)
    cache: dict[tuple[str, str], str] = field(default_factory=dict)
    values: dict[PiiType, list[str]] = field(default_factory=dict)

    def person(self, idx: str) -> _Person:
        if idx not in self.people:
            female = self.rng.random() < 0.5
            first = self.fake.first_name_female() if female else self.fake.first_name_male()
            self.people[idx] = _Person(first, self.fake.last_name(), female)
        return self.people[idx]

    def once(self, key: str, idx: str, make: Callable[[], str]) -> str:
        if (key, idx) not in self.cache:
            self.cache[(key, idx)] = make()
        return self.cache[(key, idx)]

    def record(self, pii: PiiType, *values: str) -> None:
        bucket = self.values.setdefault(pii, [])
        for value in values:
            if value not in bucket:
                bucket.append(value)


# ----- value makers ---------------------------------------------------------------------------------


def _title(s: SentenceState, person: _Person) -> str:
    """A title matching the person's gender (rarely "Mx"), dotted in North America as usual there."""
    title = "Mx" if s.rng.random() < 0.05 else s.rng.choice(TITLES_FEMALE if person.female else TITLES_MALE)
    return f"{title}." if s.locale in ("en_US", "en_CA") and title != "Miss" else title


def _full_name(s: SentenceState, idx: str) -> str:
    p, rng = s.person(idx), s.rng
    r = rng.random()
    if r < 0.6:
        return f"{p.first} {p.last}"
    if r < 0.75:
        return f"{_title(s, p)} {p.last}"
    if r < 0.85:
        return f"{_title(s, p)} {p.first} {p.last}"
    if r < 0.95:
        return f"{p.first} {rng.choice('ABCDEFGHJKLMNPRSTW')}. {p.last}"
    return p.first


def _email(s: SentenceState, idx: str) -> str:
    rng = s.rng
    if rng.random() < 0.5:  # derived from the sentence's person, like real address books
        p = s.person(idx)
        first, last = _ascii_slug(p.first) or "user", _ascii_slug(p.last) or "mail"
        local = rng.choice(
            (
                f"{first}.{last}",
                f"{first[0]}{last}",
                f"{first}_{last}",
                f"{first}{last}{rng.randint(1, 99)}",
                f"{last}.{first[0]}",
                first,
            )
        )
        domain = s.fake.free_email_domain() if rng.random() < 0.6 else rng.choice(EMAIL_DOMAINS)
        return f"{local}@{domain}"
    return str(s.fake.email())


def _phone(s: SentenceState) -> str:
    rng = s.rng
    if s.locale in ("en_US", "en_CA") and rng.random() < 0.7:
        a, b, c = rng.randint(201, 989), rng.randint(200, 999), rng.randint(0, 9999)
        fmt = rng.choice(("({a}) {b}-{c}", "{a}-{b}-{c}", "{a}.{b}.{c}", "+1 {a} {b} {c}", "+1-{a}-{b}-{c}"))
        return fmt.format(a=a, b=b, c=f"{c:04d}")
    return " ".join(str(s.fake.phone_number()).split())


def _ssn(s: SentenceState) -> str:
    rng = s.rng
    area = rng.randint(1, 898)
    area += area >= 666  # 666 is never issued
    group, serial = rng.randint(1, 99), rng.randint(1, 9999)
    sep = rng.choices(("-", "", " "), weights=(75, 15, 10))[0]
    return f"{area:03d}{sep}{group:02d}{sep}{serial:04d}"


def years_before(day: date, years: int) -> date:
    return day.replace(year=day.year - years)


def _dob(s: SentenceState) -> str:
    d = s.fake.date_between(years_before(CORPUS_DAY, 90), years_before(CORPUS_DAY, 18))
    rng, mon = s.rng, MONTHS[d.month - 1]
    us = s.locale in ("en_US", "en_CA")
    return rng.choice(
        (
            f"{d.month:02d}/{d.day:02d}/{d.year}" if us else f"{d.day:02d}/{d.month:02d}/{d.year}",
            f"{d.year}-{d.month:02d}-{d.day:02d}",
            f"{mon} {d.day}, {d.year}",
            f"{d.day} {mon} {d.year}",
            f"{d.day} {mon[:3]} {d.year}",
            f"{d.day:02d}.{d.month:02d}.{d.year}",
            f"{d.month}/{d.day}/{d.year % 100:02d}" if us else f"{d.day}/{d.month}/{d.year}",
        )
    )


def _address(s: SentenceState) -> str:
    raw = str(s.fake.address()) if s.rng.random() < 0.8 else f"{s.fake.street_address()}, {s.fake.city()}"
    return " ".join(raw.replace("\n", ", ").split())


def _account(s: SentenceState) -> str:
    rng = s.rng
    r = rng.random()
    if r < 0.4:
        return str(s.fake.iban())
    if r < 0.7:
        return "".join(str(rng.randint(0, 9)) for _ in range(rng.randint(8, 12)))
    return f"{rng.randint(10, 99)}-{rng.randint(1000, 9999)}-{rng.randint(1000000, 9999999)}"


def _card(s: SentenceState) -> str:
    number = str(s.fake.credit_card_number())
    if len(number) == 16 and s.rng.random() < 0.5:
        sep = s.rng.choice((" ", "-"))
        return sep.join(number[i : i + 4] for i in range(0, 16, 4))
    return number


def _medical(s: SentenceState, idx: str, patterns: tuple[str, ...]) -> tuple[str, list[str]]:
    cond = s.once("cond", idx, lambda: s.rng.choice(CONDITIONS))
    drug = s.once("drug", idx, lambda: s.rng.choice(DRUGS))
    pattern = s.rng.choice(patterns)
    used = [v for token, v in (("{c}", cond), ("{d}", drug)) if token in pattern]
    return pattern.replace("{c}", cond).replace("{d}", drug), used


def render_pii(kind: str, idx: str, s: SentenceState) -> tuple[str, list[str]]:
    """The surface text for a PII slot (value plus any lead-in such as "born") and the literal values."""
    rng = s.rng
    if kind in ("name", "name_v"):
        v = s.once("name", idx, lambda: _full_name(s, idx))
        return v, [v]
    if kind == "pt":
        v = s.once("name", idx, lambda: _full_name(s, idx))
        titled = v.split()[0].rstrip(".") in (*TITLES_FEMALE, *TITLES_MALE, "Mx")
        return ("{v}" if titled else rng.choice(("patient {v}", "Pt. {v}", "{v}"))).replace("{v}", v), [v]
    if kind == "first":
        v = s.person(idx).first
        return v, [v]
    if kind == "sig":
        p = s.person(idx)
        v = rng.choice((p.first, f"{p.first} {p.last}"))
        return rng.choice(("Best, ", "Thanks, ", "Cheers, ", "- ", "Regards, ", "Kind regards, ")) + v, [v]
    if kind in ("email", "email_v"):
        v = s.once("email", idx, lambda: _email(s, idx))
        return v, [v]
    if kind in ("phone", "phone_v"):
        v = s.once("phone", idx, lambda: _phone(s))
        return v, [v]
    if kind in ("ssn", "ssn_v"):
        v = s.once("ssn", idx, lambda: _ssn(s))
        if kind == "ssn_v":
            return v, [v]
        lead = rng.choice(("SSN {v}", "SSN: {v}", "social security number {v}", "SSN #{v}", "Social Security no. {v}"))
        return lead.replace("{v}", v), [v]
    if kind in ("dob", "dob_v"):
        v = s.once("dob", idx, lambda: _dob(s))
        if kind == "dob_v":
            return v, [v]
        lead = rng.choice(
            (
                "born {v}",
                "born on {v}",
                "DOB {v}",
                "DOB: {v}",
                "date of birth {v}",
                "d.o.b. {v}",
                "birth date {v}",
            )
        )
        return lead.replace("{v}", v), [v]
    if kind in ("addr", "addr_v"):
        v = s.once("addr", idx, lambda: _address(s))
        return v, [v]
    if kind in ("acct", "acct_v"):
        v = s.once("acct", idx, lambda: _account(s))
        if kind == "acct_v":
            return v, [v]
        leads = ("account {v}", "account number {v}", "acct {v}") + (("IBAN {v}",) if v[:2].isalpha() else ())
        return rng.choice(leads).replace("{v}", v), [v]
    if kind in ("card", "card_v"):
        v = s.once("card", idx, lambda: _card(s))
        if kind == "card_v":
            return v, [v]
        return rng.choice(("card {v}", "card number {v}", "credit card {v}")).replace("{v}", v), [v]
    if kind == "med":
        return _medical(s, idx, MED_PRED)
    if kind == "med_np":
        return _medical(s, idx, MED_NP)
    if kind == "med_v":
        return _medical(s, idx, MED_V)
    raise KeyError(kind)


# ----- sentence assembly -------------------------------------------------------------------------


@functools.cache
def _template_keys(template: str) -> tuple[tuple[PiiType, str], ...]:
    """The distinct (type, index) PII groups in a template: the unit we switch between PII and clean."""
    keys: list[tuple[PiiType, str]] = []
    for m in _SLOT_RE.finditer(template):
        if m.group(1) in KIND_TYPE and (KIND_TYPE[m.group(1)], m.group(2)) not in keys:
            keys.append((KIND_TYPE[m.group(1)], m.group(2)))
    return tuple(keys)


@functools.cache
def _templates_by_type() -> dict[PiiType, tuple[str, ...]]:
    out: dict[PiiType, list[str]] = {}
    for template in TEMPLATES:
        for pii in {t for t, _ in _template_keys(template)}:
            out.setdefault(pii, []).append(template)
    return {k: tuple(v) for k, v in out.items()}


_TARGETS: tuple[tuple[PiiType, float], ...] = (
    *((t, 1.0) for t in PROBED_TYPES if t not in (PiiType.ACCOUNT_NUMBER, PiiType.CREDIT_CARD)),
    (PiiType.ACCOUNT_NUMBER, 0.35),
    (PiiType.CREDIT_CARD, 0.35),
)
"""Sentences are drawn type-first so every probed type is common; account/card numbers are occasional."""


def _choose_template(rng: random.Random) -> tuple[str, PiiType]:
    target = rng.choices([t for t, _ in _TARGETS], weights=[w for _, w in _TARGETS])[0]
    return rng.choice(_templates_by_type()[target]), target


def _choose_pii_keys(template: str, target: PiiType, rng: random.Random) -> set[tuple[PiiType, str]]:
    """All of the target type's slots carry PII; each other slot does with p=0.7, capped at 3 types."""
    keys = _template_keys(template)
    chosen = {k for k in keys if k[0] is target or rng.random() < 0.7}
    types = sorted({t for t, _ in chosen} - {target}, key=lambda t: t.value)
    rng.shuffle(types)
    for extra in types[: max(0, len(types) + 1 - MAX_TYPES_PER_SENTENCE)]:
        chosen = {k for k in chosen if k[0] is not extra}
    return chosen


def _tidy(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r" +([,.;:!?)])", r"\1", text)
    return re.sub(r"\.\.(?=\s|$)", ".", text)


_ABBREVIATION_END = re.compile(r"\b(?:Pt|Dr|Mr|Mrs|Ms|Mx|tel|no|d\.o\.b)\.$")


def _sentence_case(pieces: list[tuple[str, bool]]) -> None:
    """Capitalise a non-value piece that starts a sentence ("the customer ..." -> "The customer ...");
    literal values are never touched, so labels stay verbatim."""
    so_far = ""
    for i, (text, is_value) in enumerate(pieces):
        stripped = text.lstrip()
        before = (so_far + text[: len(text) - len(stripped)]).rstrip()
        starts_sentence = not before or (before[-1] in ".?!" and not _ABBREVIATION_END.search(before))
        if stripped and not is_value and starts_sentence:
            text = text[: len(text) - len(stripped)] + stripped[0].upper() + stripped[1:]
            pieces[i] = (text, False)
        so_far += text


def _assemble(template: str, s: SentenceState) -> str:
    pieces: list[tuple[str, bool]] = []  # (text, carries a literal value)
    pos = 0
    for m in _SLOT_RE.finditer(template):
        pieces.append((template[pos : m.start()], False))
        pos = m.end()
        kind, idx, override = m.group(1), m.group(2), m.group(3)
        if kind not in KIND_TYPE:
            pieces.append((_flavour(m.group(0), s.rng), False))
            continue
        pii = KIND_TYPE[kind]
        if (pii, idx) in s.pii_keys:
            surface, values = render_pii(kind, idx, s)
            s.record(pii, *values)
            pieces.append((surface, surface.startswith(values[0])))
        else:
            pool = tuple(override.split("|")) if override is not None else CLEAN[kind]
            pieces.append((_flavour(s.rng.choice(pool), s.rng), False))
    pieces.append((template[pos:], False))
    _sentence_case(pieces)
    return _tidy("".join(t for t, _ in pieces))


# Word lists Faker builds from a set, so their order (and what a seeded Faker draws) follows PYTHONHASHSEED:
# faker.providers.address.it_IT.getcities.
_UNORDERED_FAKER_LISTS = {("it_IT", "cities")}


def seeded_fakers(locales: Sequence[str], seed: int, salt: str) -> dict[str, Faker]:
    """One Faker per locale, seeded from ``seed`` and ``salt``: the same values in every process."""
    if not locales:
        raise ValueError("locales must name at least one Faker locale")
    out: dict[str, Faker] = {}
    for loc in dict.fromkeys(locales):
        fake = Faker(loc)
        fake.seed_instance(derive_seed(seed, f"{salt}:faker:{loc}"))
        for provider in fake.providers:
            for attribute in (a for locale, a in _UNORDERED_FAKER_LISTS if locale == loc and hasattr(provider, a)):
                setattr(provider, attribute, sorted(getattr(provider, attribute)))
        out[loc] = fake
    return out


def _generate(n: int, seed: int, locales: Sequence[str], clean: bool) -> list[LabelledText]:
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    salt = "clean" if clean else "pii"
    rng = random.Random(derive_seed(seed, salt))
    fakers = seeded_fakers(locales, seed, salt)
    out: list[LabelledText] = []
    seen: set[str] = set()
    misses = 0  # consecutive duplicates; past a bound (a huge n for a small template space) allow repeats
    while len(out) < n:
        template, target = _choose_template(rng)
        locale = rng.choice(tuple(fakers))
        keys = set() if clean else _choose_pii_keys(template, target, rng)
        s = SentenceState(rng=rng, fake=fakers[locale], locale=locale, pii_keys=keys)
        text = _assemble(template, s)
        values = {t: tuple(v) for t, v in s.values.items()}
        if any(v not in text for vs in values.values() for v in vs):
            continue  # tidying touched a value: never emit a label we cannot point to in the text
        if text in seen and misses < 50:
            misses += 1
            continue
        seen.add(text)
        misses = 0
        out.append(
            LabelledText(
                text=text,
                pii=frozenset(values),
                values=values,
                source="synthetic-clean" if clean else "synthetic-pii",
            )
        )
    return out


def synthetic_pii(n: int, seed: int, locales: Sequence[str] = DEFAULT_LOCALES) -> list[LabelledText]:
    """``n`` Faker-filled sentences, each with 1-3 PII types and exact labels; deterministic per seed.

    Types are drawn first (each probed type equally often, account and card numbers occasionally), then a
    template containing that type, so no probe is starved of positives.
    """
    return _generate(n, seed, locales, clean=False)


def synthetic_clean(n: int, seed: int) -> list[LabelledText]:
    """``n`` sentences from the same templates, with the same template distribution, as ``synthetic_pii``
    but with every PII slot filled by a non-PII phrase of the same role: hard negatives, so a probe has to
    find the value itself rather than the sentence shape. No names, emails, 7+ digit runs or medical terms.
    """
    return _generate(n, seed, DEFAULT_LOCALES, clean=True)
