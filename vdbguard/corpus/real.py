"""Real human-written sentences with PII placed where real text carries it, and real hard negatives.

The base sentences are technical prose from the docstrings and comments of permissively licensed Python
packages (``vdbguard/data/real_text.jsonl.gz``, built by ``pipelines/build_real_text.py``, every named person
removed). A PII sentence is a real sentence with a value placed at a natural position: a credit ("Thanks to
..."), a sign-off, an attribution, a contact line, a record field. A clean sentence is either the real
sentence alone or the same frame filled with something that is not PII: a real capitalised identifier from
the same source ("Thanks to the SQLAlchemy team"), a place, a version, a release date, a hardware id. So a
probe has to find the value, not the frame.

Half the clean items, and half the items of each type other registers hold, come from those registers
(``vdbguard/data/real_registers.jsonl.gz``, built by ``pipelines/build_real_registers.py``): fortune cookies with
their attribution lines, sentences where a name stands in for "he" or "she", numbers in running text, product
lines and registrations, as frames whose slots take Faker values. Docstrings alone taught the probes that names
come in credits.

Sources split by package, never by sentence: ``train`` sources teach the attacks, ``calibration`` sources
(and other Faker locales) fit the fused verdict's cutoffs, so the cutoffs measure transfer to unseen text.
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import json
import random
import re
from collections.abc import Callable
from typing import Literal

from vdbguard.corpus.generator import CORPUS_DAY, SentenceState, derive_seed, render_pii, seeded_fakers, years_before
from vdbguard.corpus.human import faker_first_names, faker_name_lists, human_sentences
from vdbguard.corpus.labelled import LabelledText
from vdbguard.pii import PiiType

RealSplit = Literal["train", "calibration"]

TRAIN_SOURCES = frozenset(
    {"numpy", "pandas", "sympy", "networkx", "torch", "click", "pydantic", "pygments", "markdown", "httpx", "faker"}
)
CALIBRATION_SOURCES = frozenset({"scipy", "sklearn", "rich", "sqlalchemy", "jinja2", "requests", "transformers"})
REGISTER_SOURCES: dict[RealSplit, frozenset[str]] = {
    "train": frozenset({"fortunes-pypi", "pci-ids"}),
    "calibration": frozenset({"jargon", "ieee-other"}),
}
REGISTER_SHARE = 0.5
SLOT_TYPES = {
    "name": PiiType.PERSON, "email": PiiType.EMAIL, "phone": PiiType.PHONE, "ssn": PiiType.SSN,
    "card": PiiType.CREDIT_CARD, "acct": PiiType.ACCOUNT_NUMBER, "addr": PiiType.ADDRESS,
}  # fmt: skip
LOCALES: dict[RealSplit, tuple[str, ...]] = {
    "train": ("en_US", "en_GB", "en_CA", "en_AU", "en_IE", "de_DE", "fr_FR", "es_ES", "pt_BR", "pl_PL", "sv_SE"),
    "calibration": ("en_NZ", "en_IN", "it_IT", "nl_NL", "da_DK", "fi_FI", "cs_CZ", "hu_HU", "ro_RO"),
}
_ALL_LOCALES = ("en_US", *LOCALES["train"], *LOCALES["calibration"])  # whose first names are never places

TYPE_WEIGHTS: dict[PiiType, float] = {
    PiiType.PERSON: 0.42,
    PiiType.EMAIL: 0.12,
    PiiType.PHONE: 0.09,
    PiiType.DATE_OF_BIRTH: 0.07,
    PiiType.ADDRESS: 0.07,
    PiiType.MEDICAL: 0.08,
    PiiType.SSN: 0.05,
    PiiType.ACCOUNT_NUMBER: 0.05,
    PiiType.CREDIT_CARD: 0.05,
}

# Frames: "{s}" is the real sentence ("{l}" the same, first letter lowered); "{x}" the slot. Each PII frame
# list is paired with clean fillers for the same slot, so both sides of the boundary share the frames.
PERSON_FRAMES = (
    "{s} Thanks to {x}.", "{s} Thanks {x}!", "{s} (thanks to {x})", "{s} Reported by {x}.", "{s} Patch by {x}.",
    "{s} Suggested by {x}.", "{s} -- {x}", "{x}: {s}", "{x} wrote: {l}", "According to {x}, {l}",
    "{s} Reviewed-by: {x}", "{s} Ask {x} for details.", "{s} Assigned to {x}.", "{s} ({x})", "{s} Fixed by {x}.",
    "{s} Credit goes to {x}.", "{x} pointed out that {l}", "{s} Tested by {x}.", "{s} cc {x}",
)  # fmt: skip
PERSON_SIGN_OFFS = ("Hi {x}, {l}", "{s} Cheers, {x}", "{s} Regards, {x}", "Dear {x}, {l}", "{s} Best, {x}")
NOT_A_PERSON = (
    "the {P} team", "the {P} maintainers", "everyone who tested {P}", "the {P} developers", "upstream {P}",
    "the {C} sprint", "the {P} {V} release", "{P}", "{P} {V}", "the {P} project", "the mailing list",
)  # fmt: skip
CONTACT_FRAMES = ("{s} Contact: {x}", "{s} Send feedback to {x}.", "{s} Questions go to {x}.", "{s} Mail {x}.")
NOT_AN_EMAIL = ("the {P} mailing list", "https://{p}.org/docs", "the {P} issue tracker", "{p}-dev on the forum")
PHONE_FRAMES = ("{s} Call {x} if it happens again.", "{s} Hotline: {x}.", "{s} On call: {x}.", "{s} Phone {x}.")
NOT_A_PHONE = ("port {N}", "device {H}:{H}", "build {D8}", "extension {N}", "version {V}", "{P} {V}")
RECORD_FRAMES = ("{s} Note: {x}.", "{s} Record: {x}.", "{s} ({x})", "{s} Ref {x}.")
NOT_A_RECORD = (
    "issue #{N}", "commit {H}{H}", "checksum {H}{H}{H}", "released {DATE}", "since {P} {V}", "{C}",
    "founded in {Y}", "first built in {Y}", "{Y}-{Y}", "around {Y}",
)  # fmt: skip
ADDRESS_FRAMES = ("{s} Ship to {x}.", "{s} Office: {x}.", "{s} Send the form to {x}.")
NOT_AN_ADDRESS = (
    "the {C} office", "Building {N}, Room {N}", "{C}", "the {P} booth in {C}", "{C}, {K}", "{K}",
    "a city in {K}", "the capital of {K}", "the {R} region",
)  # fmt: skip
PLACE_FRAMES = (
    "{x}: {l}", "{s} Seen in {x}.", "{s} ({x})", "In {x}, {l}", "{s} First reported in {x}.", "{x}, {l}",
)  # fmt: skip
MEDICAL_FRAMES = ("{s} The reporter {x}.", "{s} {name} {x}.", "{s} Note: the user {x}.")
NOT_MEDICAL = (
    "ran the health check", "reported a memory leak", "found the diagnosis in the logs", "saw a fatal error",
    "ran the sanity checks", "hit the {P} regression", "needs a treatment of edge cases",
)  # fmt: skip

PERSON_KINDS = ("name", "name", "name", "first", "initials")
_CAPITALISED = re.compile(r"(?<=\s)([A-Z][A-Za-z0-9+]*[a-z0-9+][A-Za-z0-9+]*)\b")


@functools.cache
def _rows(name: str = "real_text.jsonl.gz") -> tuple[dict, ...]:
    """The lines of a packaged ``.jsonl.gz``, read once."""
    path = importlib.resources.files("vdbguard.data").joinpath(name)
    with gzip.open(path, "rt", encoding="utf-8") as fh:  # type: ignore[arg-type]
        return tuple(json.loads(line) for line in fh)


@functools.cache
def _register_rows(split: RealSplit) -> dict[PiiType | None, tuple[dict, ...]]:
    """The split's register rows by the PII type of a slot they hold (``None``: no slot, a hard negative)."""
    by_type: dict[PiiType | None, list[dict]] = {}
    for row in (r for r in _rows("real_registers.jsonl.gz") if r["source"] in REGISTER_SOURCES[split]):
        for pii_type in {SLOT_TYPES[kind] for _, kind in row["slots"]} or {None}:
            by_type.setdefault(pii_type, []).append(row)
    return {pii_type: tuple(found) for pii_type, found in by_type.items()}


def _register_item(row: dict, s: SentenceState) -> LabelledText:
    """The row's frame with a Faker value of each slot's kind in its slot."""
    text, values = row["frame"], {}
    for position, kind in reversed(row["slots"]):
        value = _person(s, s.rng.choice(PERSON_KINDS)) if kind == "name" else render_pii(f"{kind}_v", "0", s)[0]
        text = text[:position] + value + text[position:]
        values.setdefault(SLOT_TYPES[kind], []).append(value)
    pii = {pii_type: tuple(found) for pii_type, found in values.items()}
    return LabelledText(text=text, pii=frozenset(pii), values=pii, source=f"real:{row['source']}")


def _sources(split: RealSplit) -> frozenset[str]:
    if split not in LOCALES:
        raise ValueError(f"split must be 'train' or 'calibration', got {split!r}")
    return TRAIN_SOURCES if split == "train" else CALIBRATION_SOURCES


@functools.cache
def real_sentences(split: RealSplit) -> tuple[str, ...]:
    """The real prose sentences of ``split``'s sources (no person named in any of them). Packages vendor each
    other's code, so a calibration sentence that a training source also has is left out."""
    sources = _sources(split)
    own = tuple(dict.fromkeys(r["text"] for r in _rows() if r["kind"] == "prose" and r["source"] in sources))
    if split == "train":
        return own
    seen = set(real_sentences("train"))
    return tuple(s for s in own if s not in seen)


@functools.cache
def _credit_templates(split: RealSplit) -> tuple[str, ...]:
    sources = _sources(split)
    return tuple(r["text"] for r in _rows() if r["kind"] == "credit" and r["source"] in sources)


@functools.cache
def _identifiers(split: RealSplit) -> tuple[str, ...]:
    """Capitalised words inside the split's sentences that are not people's names: "NumPy", "Decord"."""
    first, last = faker_name_lists()
    found = {m.group(1) for s in real_sentences(split) for m in _CAPITALISED.finditer(s)}
    return tuple(sorted(w for w in found if w not in first and w not in last and len(w) > 2))


class _Filler:
    """Fills the non-PII placeholders of a clean slot with real identifiers, places, versions and ids."""

    def __init__(self, rng: random.Random, s: SentenceState, split: RealSplit) -> None:
        self.rng, self.s, self.identifiers = rng, s, _identifiers(split)

    def place(self) -> str:
        """A city whose name holds no first or last name: Faker makes towns of names ("Port Johnbury")."""
        names = faker_first_names(_ALL_LOCALES)
        for _ in range(10):
            city = str(self.s.fake.city())
            if not any(word in names for word in re.findall(r"\w+", city)):
                return city
        return str(self.s.fake.country())

    def __call__(self, pattern: str) -> str:
        rng = self.rng
        product = rng.choice(self.identifiers)
        date = self.s.fake.date_between(years_before(CORPUS_DAY, 15), CORPUS_DAY)
        values: dict[str, Callable[[], str]] = {
            "P": lambda: product,
            "p": lambda: product.lower(),
            "C": self.place,
            "V": lambda: ".".join(str(rng.randint(0, 12)) for _ in range(rng.randint(2, 3))),
            "N": lambda: str(rng.randint(2, 65535)),
            "H": lambda: f"{rng.randint(0, 0xFFFF):04x}",
            "D8": lambda: date.strftime("%Y%m%d"),
            "Y": lambda: str(rng.randint(1400, 2025)),
            "K": lambda: str(self.s.fake.country()),
            "R": lambda: rng.choice((self.place(), str(self.s.fake.country()))),
            "DATE": lambda: rng.choice((date.isoformat(), date.strftime("%B %d, %Y"), date.strftime("%d %b %Y"))),
        }
        return re.sub(r"\{(P|p|C|V|N|H|D8|DATE|Y|K|R)\}", lambda m: values[m.group(1)](), pattern)


def _place(frame: str, sentence: str, slot: str, **extra: str) -> str:
    lowered = sentence[0].lower() + sentence[1:] if sentence[:2] != sentence[:2].upper() else sentence
    text = frame.replace("{s}", sentence).replace("{l}", lowered).replace("{x}", slot)
    for key, value in extra.items():
        text = text.replace("{" + key + "}", value)
    return text


def _person(s: SentenceState, kind: str) -> str:
    if kind == "initials":
        person = s.person("0")
        return f"{person.first[0]}. {person.last}"
    return render_pii(kind, "0", s)[0]


def _pii_item(pii_type: PiiType, sentence: str, s: SentenceState, split: RealSplit) -> LabelledText | None:
    rng = s.rng
    name = render_pii("name", "1", s)[0]
    if pii_type is PiiType.PERSON:
        credits = _credit_templates(split)
        if credits and rng.random() < 0.1:
            value, email = _person(s, "name"), render_pii("email", "0", s)[0]
            template = rng.choice(credits)
            values = {PiiType.PERSON: (value,)} | ({PiiType.EMAIL: (email,)} if "{email}" in template else {})
            return _labelled(template.replace("{name}", value).replace("{email}", email), values)
        kind = rng.choice(PERSON_KINDS)
        value = _person(s, kind)
        frames = PERSON_SIGN_OFFS if kind == "first" else PERSON_FRAMES
        return _labelled(_place(rng.choice(frames), sentence, value), {PiiType.PERSON: (value,)})
    if pii_type is PiiType.EMAIL:
        value = render_pii("email", "0", s)[0]
        if rng.random() < 0.3:
            person = render_pii("name", "0", s)[0]
            slot = f"{person} <{value}>"
            text = _place(rng.choice(PERSON_FRAMES), sentence, slot)
            return _labelled(text, {PiiType.EMAIL: (value,), PiiType.PERSON: (person,)})
        return _labelled(_place(rng.choice(CONTACT_FRAMES), sentence, value), {PiiType.EMAIL: (value,)})
    if pii_type is PiiType.PHONE:
        value = render_pii("phone", "0", s)[0]
        return _labelled(_place(rng.choice(PHONE_FRAMES), sentence, value), {PiiType.PHONE: (value,)})
    if pii_type is PiiType.ADDRESS:
        value = render_pii("addr", "0", s)[0]
        return _labelled(_place(rng.choice(ADDRESS_FRAMES), sentence, value), {PiiType.ADDRESS: (value,)})
    if pii_type is PiiType.MEDICAL:
        surface, used = render_pii("med", "0", s)
        text = _place(rng.choice(MEDICAL_FRAMES), sentence, surface, name=name)
        values = {PiiType.MEDICAL: tuple(used)}
        if name in text:
            values[PiiType.PERSON] = (name,)
        return _labelled(text, values)
    kind = {
        PiiType.DATE_OF_BIRTH: "dob",
        PiiType.SSN: "ssn",
        PiiType.ACCOUNT_NUMBER: "acct",
        PiiType.CREDIT_CARD: "card",
    }[pii_type]
    surface, used = render_pii(kind, "0", s)
    if rng.random() < 0.4:
        surface = f"{name}, {surface}"
        values = {pii_type: tuple(used), PiiType.PERSON: (name,)}
    else:
        values = {pii_type: tuple(used)}
    return _labelled(_place(rng.choice(RECORD_FRAMES), sentence, surface), values)


def _clean_item(sentence: str, s: SentenceState, fill: _Filler) -> LabelledText:
    rng = s.rng
    if rng.random() < 0.4:
        return LabelledText(text=sentence, pii=frozenset(), values={}, source="real-clean")
    frames, fillers = rng.choice(
        (
            (PERSON_FRAMES, NOT_A_PERSON),
            (PERSON_FRAMES, NOT_A_PERSON),
            (PERSON_SIGN_OFFS, ("all", "everyone", "team", "folks", "{P} users")),
            (CONTACT_FRAMES, NOT_AN_EMAIL),
            (PHONE_FRAMES, NOT_A_PHONE),
            (RECORD_FRAMES, NOT_A_RECORD),
            (ADDRESS_FRAMES, NOT_AN_ADDRESS),
            (PLACE_FRAMES, NOT_AN_ADDRESS),
            (PERSON_FRAMES, NOT_AN_ADDRESS),
            (MEDICAL_FRAMES, NOT_MEDICAL),
        )
    )
    slot = fill(rng.choice(fillers))
    text = _place(rng.choice(frames), sentence, slot, name=fill("the {P} maintainer"))
    return LabelledText(text=text, pii=frozenset(), values={}, source="real-clean")


def _labelled(text: str, values: dict[PiiType, tuple[str, ...]]) -> LabelledText | None:
    values = {t: tuple(v for v in vs if v) for t, vs in values.items()}
    if any(not vs or any(v not in text for v in vs) for vs in values.values()):
        return None
    return LabelledText(text=text, pii=frozenset(values), values=values, source="real-pii")


def _base_sentences(split: RealSplit) -> tuple[str, ...]:
    """Prose, plus for training the conversational lines of chatterbot's training split: they otherwise appear
    only as clean text, which would teach that a chatty sentence never names anyone."""
    if split == "calibration":
        return real_sentences(split)
    return real_sentences(split) + tuple(human_sentences("train"))


def real_corpus(n_pii: int, n_clean: int, seed: int, split: RealSplit = "train") -> list[LabelledText]:
    """``n_pii`` real sentences with placed PII (exact labels) and ``n_clean`` real hard negatives from
    ``split``'s sources, deterministic per seed, in generation order (the caller shuffles)."""
    if n_pii < 0 or n_clean < 0:
        raise ValueError(f"n_pii and n_clean must be >= 0, got {n_pii} and {n_clean}")
    rng = random.Random(derive_seed(seed, f"real:{split}"))
    fakers = seeded_fakers(LOCALES[split], seed, f"real:{split}")
    sentences = _base_sentences(split)
    types, weights = list(TYPE_WEIGHTS), list(TYPE_WEIGHTS.values())

    def sentence_state() -> SentenceState:
        locale = rng.choice(tuple(fakers))
        return SentenceState(rng=rng, fake=fakers[locale], locale=locale, pii_keys=set())

    items: list[LabelledText] = []
    registers = _register_rows(split)
    while len(items) < n_pii:
        pii_type = rng.choices(types, weights)[0]
        if pii_type in registers and rng.random() < REGISTER_SHARE:
            items.append(_register_item(rng.choice(registers[pii_type]), sentence_state()))
        elif item := _pii_item(pii_type, rng.choice(sentences), sentence_state(), split):
            items.append(item)
    for _ in range(n_clean):
        s = sentence_state()
        if rng.random() < REGISTER_SHARE:
            items.append(_register_item(rng.choice(registers[None]), s))
        else:
            items.append(_clean_item(rng.choice(sentences), s, _Filler(rng, s, split)))
    return items
