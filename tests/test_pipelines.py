"""Every file vdbguard ships has a pipeline, and the data files a pipeline rebuilds are as built from today's inputs.

Hashes only (``pipelines/inputs.json``): nothing is rebuilt here."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import re
import zlib
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = ROOT / "pipelines"


def _script(monkeypatch: pytest.MonkeyPatch, folder: Path, name: str) -> ModuleType:
    monkeypatch.syspath_prepend(str(folder))
    return importlib.import_module(name)


@pytest.fixture
def tagger_trainer(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return _script(monkeypatch, PIPELINES, "train_person_tagger")


@pytest.fixture
def address_trainer(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return _script(monkeypatch, PIPELINES, "train_address_tagger")


@pytest.fixture
def silver_data(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``benchmarks/detector_real.py``, which writes the tagger's silver training data."""
    return _script(monkeypatch, ROOT / "benchmarks", "detector_real")


@pytest.fixture(scope="module")
def inputs():
    spec = importlib.util.spec_from_file_location("pipelines_inputs", PIPELINES / "inputs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_shipped_data_file_is_built_from_todays_inputs(inputs) -> None:
    stale = inputs.stale()
    assert not stale, "\n".join(stale)


def test_a_changed_input_fails_naming_the_commands_that_rebuild_the_file(inputs, tmp_path: Path) -> None:
    (tmp_path / "build.py").write_text("print('v1')\n")
    (tmp_path / "out.txt").write_text("built\n")
    manifest = {"files": {"out.txt": {"commands": ["python build.py"], "inputs": {"build.py": ""}, "sha256": ""}}}
    manifest = inputs.record(manifest, root=tmp_path)
    assert inputs.stale(manifest, root=tmp_path) == []
    (tmp_path / "build.py").write_text("print('v2')\n")
    [message] = inputs.stale(manifest, root=tmp_path)
    assert message.startswith("build.py changed since out.txt was built") and "python build.py" in message
    (tmp_path / "out.txt").write_text("edited by hand\n")
    assert any(m.startswith("out.txt is not the file") for m in inputs.stale(manifest, root=tmp_path))


def test_the_manifest_names_only_repository_files_that_exist(inputs) -> None:
    manifest = json.loads(inputs.MANIFEST.read_text())
    for output, entry in manifest["files"].items():
        assert output.startswith("vdbguard/data/"), output
        assert entry["commands"] and entry["rebuild"], output
        assert all((ROOT / name).is_file() for name in entry["inputs"]), output


def test_every_shipped_file_has_a_row_in_the_pipelines_readme() -> None:
    """A new file in ``vdbguard/data`` comes with the command that rebuilds it (or says why there is none)."""
    readme = (PIPELINES / "README.md").read_text()
    shipped = [p.name for p in (ROOT / "vdbguard" / "data").iterdir() if p.name not in {"__init__.py", "__pycache__"}]
    missing = [name for name in shipped if f"`{name}" not in readme]
    assert not missing, f"pipelines/README.md has no row for {missing}"


def test_the_tagger_trainer_reads_conll_corpora_by_document(tagger_trainer: ModuleType, tmp_path: Path) -> None:
    """Wikigold's articles (IOB1, a space between columns, ``-DOCSTART-``) and the Broad Twitter Corpus's tweets (BIO,
    a tab) read alike: a person is gold, another entity a mention; the dev split keys an article by its document, so
    its sentences fall on one side together."""
    wiki = tmp_path / "wikigold.conll.txt"
    article = "Frederick I-PER\nH. I-PER\nCollier I-PER\nled O\nit O\n. O\n\nHe O\nleft O\nPittsburgh I-LOC\n. O\n"
    wiki.write_text(f"-DOCSTART- O\n\n{article}\n-DOCSTART- O\n\nThe O\nAtlantic I-LOC\nCity I-LOC\ncrash O\n")
    btc = tmp_path / "btc.dev"
    btc.write_text("Ana\tB-PER\nSouza\tI-PER\nin\tO\nLisbon\tB-LOC\n\nhi\tO\n")
    rows = tagger_trainer.public_rows([wiki, btc])
    assert [row["text"] for row in rows] == [
        "Frederick H. Collier led it .", "He left Pittsburgh .", "The Atlantic City crash", "Ana Souza in Lisbon", "hi"
    ]  # fmt: skip
    assert [[row["text"][s["start"] : s["end"]] for s in row["spans"]] for row in rows] == [
        ["Frederick H. Collier"], [], [], ["Ana Souza"], []
    ]  # fmt: skip
    assert [row["text"][m["start"] : m["end"]] for row in rows for m in row["mentions"]] == [
        "Pittsburgh", "Atlantic City", "Lisbon"
    ]  # fmt: skip
    documents = [row["document"] for row in rows]
    assert documents[0] == documents[1] != documents[2] and rows[0]["dev"] == rows[1]["dev"]
    assert documents[3:] == ["Ana Souza in Lisbon", "hi"]


def test_the_tagger_trainer_reads_crossner_occupations_as_people_and_can_hold_out_named_sentences(
    tagger_trainer: ModuleType,
    tmp_path: Path,
) -> None:
    """CrossNER tags people by occupation ("writer", "politician") beside works and awards; ``held_out`` drops a
    sentence naming any held-out value, as a person or as a mention, and keeps the rest."""
    crossner = tmp_path / "crossner.literature"
    crossner.write_text(
        "Sara\tB-writer\nTeasdale\tI-writer\nwrote\tO\nRains\tB-poem\n\n"
        "Ada\tB-politician\nMoss\tI-politician\nwon\tO\nthe\tO\nHugo\tB-award\nAward\tI-award\n\n"
        "They\tO\nmet\tO\nin\tO\nParis\tB-location\n"
    )
    rows = tagger_trainer.public_rows([crossner])
    assert [[row["text"][s["start"] : s["end"]] for s in row["spans"]] for row in rows] == [
        ["Sara Teasdale"], ["Ada Moss"], []
    ]  # fmt: skip
    assert [[m["label"] for m in row["mentions"]] for row in rows] == [["work"], ["work"], ["place"]]
    kept = tagger_trainer.public_rows([crossner], held_out={"sara teasdale", "paris"})
    assert [row["text"] for row in kept] == ["Ada Moss won the Hugo Award"]


def test_the_public_corpora_kept_here_are_the_ones_their_readme_names_and_read_as_people_and_mentions(
    tagger_trainer: ModuleType,
) -> None:
    """The tagger rebuilds from a clone: every corpus it learns is kept in pipelines/corpora, unchanged (the digest
    its README records), and reads into rows with gold people and other mentions."""
    folder = PIPELINES / "corpora"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for path in sorted(folder.glob("*.gz")):
        digest = hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()[:16]
        assert f"`{path.name}`" in readme and digest in readme, f"{path.name} is not the file the README names"
        read = tagger_trainer.given_rows if path.name.endswith(".jsonl.gz") else tagger_trainer.public_rows
        rows = read([path])
        assert sum(len(row["spans"]) for row in rows) > 100 and sum(len(row["mentions"]) for row in rows) > 100


EMAIL_THREAD = """#begin document (lokey_t_1)
To\tTeb\t-\t-
:\tTeb\t-\t-
Lokey\tTeb\t(P0*\t(0
,\tTeb\t-\t-
Teb\tTeb\tP0*)\t0)
;\tTeb\t-\t-
teb.lokey@enron.com\tTeb\t(P0)\t(0)

Perry\tTeb\t(P1*)\t(1)
's\tTeb\t-\t-
team\tTeb\t-\t-
at\tTeb\t-\t-
SoCalGas\tTeb\t(O0*)\t(2)
and\tTeb\t-\t-
the\tTeb\t-\t-
Team\tTeb\t(P2*)\t(3)
sent\tTeb\t-\t-
it\tTeb\t-\t-
to\tTeb\t-\t-
me\tTeb\t(P0)\t(0)
.\tTeb\t-\t-
"""


def test_the_email_corpus_marks_named_people_not_pronouns_roles_or_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line's named people are gold; an organisation is a mention; a person's address is an ``email`` mention (no
    name, no clean line); a role the annotators counted as a person ("Team") and a pronoun ("me") are neither."""
    build = _script(monkeypatch, PIPELINES, "build_email_corpus")
    lines = [build.row(line, "lokey_t_1") for line in build.threads_of(EMAIL_THREAD)]
    named = [
        [(row["text"][s["start"] : s["end"]], s["label"]) for s in row["spans"] + row["mentions"]] for row in lines
    ]
    assert [row["text"] for row in lines] == [
        "To: Lokey, Teb; teb.lokey@enron.com",
        "Perry's team at SoCalGas and the Team sent it to me.",
    ]
    assert named == [[("Lokey, Teb", "PERSON"), ("teb.lokey@enron.com", "email")],
                     [("Perry", "PERSON"), ("SoCalGas", "organisation")]]  # fmt: skip


LITBANK_TEXT = (
    "Then the poet Shelley met Mr. Bennet in Lincoln 's Inn .\n"
    "God help old Mr Pontifex , Margaret dear .\n"
    "Pink and The Happy Family met the Irish .\n"
)


def _brat(mentions: list[tuple[str, str]]) -> str:
    return "\n".join(
        f"T{i}\t{kind} {LITBANK_TEXT.index(words)} {LITBANK_TEXT.index(words) + len(words)}\t{words}"
        for i, (kind, words) in enumerate(mentions)
    )


def test_the_novel_corpus_marks_a_proper_persons_name_without_its_title_describing_words_or_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """LitBank's proper person mentions become names, their titles and describing words outside ("the poet Shelley"
    is "Shelley", "Mr. Bennet" "Bennet"), a god no one; its proper places are places; nominal mentions stay out. A
    person the coreference layer left out is a name where the entity layer writes every word capitalised ("Pink"),
    not a group ("The Happy Family") or a people ("the Irish")."""
    build = _script(monkeypatch, PIPELINES, "build_litbank_corpus")
    coreference = _brat([("PROP_PER", "the poet Shelley"), ("PROP_PER", "Mr. Bennet"), ("PROP_FAC", "Lincoln 's Inn"),
                         ("PROP_PER", "God"), ("PROP_PER", "old Mr Pontifex"), ("PROP_PER", "Margaret dear"),
                         ("NOM_PER", "poet")])  # fmt: skip
    entities = _brat([("PER", "Shelley"), ("PER", "Pink"), ("PER", "The Happy Family"), ("PER", "Irish")])
    sentences = build.novel(LITBANK_TEXT, coreference, entities)
    tagged = [[(token, tag) for token, tag in sentence if tag != "O"] for sentence in sentences]
    assert tagged == [
        [("Shelley", "B-PER"), ("Bennet", "B-PER"), ("Lincoln", "B-LOC"), ("'s", "I-LOC"), ("Inn", "I-LOC")],
        [("Pontifex", "B-PER"), ("Margaret", "B-PER")],
        [("Pink", "B-PER")],
    ]


def test_the_email_benchmark_counts_headers_apart_and_an_address_line_neither_named_nor_clean(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bench = _script(monkeypatch, ROOT / "benchmarks", "email_people")
    lines = [
        bench.Line("To: Lokey, Teb", [(4, 14)], [], []),
        bench.Line("Perry's team at SoCalGas", [(0, 5)], [(16, 24)], []),
        bench.Line("Thanks", [], [], []),
        bench.Line("teb.lokey@enron.com", [], [], [(0, 19)]),
    ]
    result = bench.score(lines, [[], [(0, 5), (16, 24)], [(0, 6)], [(0, 3)]], misses=0)
    assert result["header"] == {
        "names found": 0.0, "names": 1, "things called people": 0.0, "things": 0, "clean lines given one": 0.0,
        "clean lines": 0,
    }  # fmt: skip
    assert result["body"] == {
        "names found": 1.0, "names": 1, "things called people": 1.0, "things": 1, "clean lines given one": 1.0,
        "clean lines": 1,
    }  # fmt: skip
    assert result["names found"] == 0.5


def test_renamed_copies_keep_each_names_form_and_one_new_word_per_word_in_a_row(tagger_trainer: ModuleType) -> None:
    """``--renamed-copies``: "Last, First M." stays that form, initials stay initials, a word named twice in a row gets
    the same new word both times, and the offsets after each name move with it."""
    from types import SimpleNamespace

    fill = SimpleNamespace(firsts=[f"Given{i}" for i in range(30)], surnames=[f"Family{i}" for i in range(30)])
    text = "X-To: Lokey, Teb K.; TK; Doug Leach < Doug Leach/HOU/ECT@ECT >"
    names = ["Lokey, Teb K.", "TK", "Doug Leach", "Doug Leach"]
    at = [text.index("Lokey"), text.index("TK"), text.index("Doug"), text.rindex("Doug")]
    spans = [{"start": a, "end": a + len(n), "label": "PERSON"} for a, n in zip(at, names, strict=True)]
    row = {"text": text, "spans": spans, "mentions": [], "register": "email", "dev": False}
    (copy,) = tagger_trainer.with_renamed_copies([row], 1, fill, 0)
    values = [copy["text"][s["start"] : s["end"]] for s in copy["spans"]]
    assert re.fullmatch(r"Family\d+, Given\d+ K\.", values[0]) and re.fullmatch(r"[A-Z]{2}", values[1])
    assert re.fullmatch(r"Given\d+ Family\d+", values[2]) and values[3] == values[2]
    assert copy["text"].endswith(f"< {values[3]}/HOU/ECT@ECT >") and "Lokey" not in copy["text"]


def test_vocative_copies_address_or_sign_a_real_sentence_and_keep_its_spans_aligned(tagger_trainer: ModuleType) -> None:
    """``--vocatives``: a sentence's copy opens with a given name of the row's side of the dev split ("Olu, and he
    said ...") or ends signed by one; the sentence's own name keeps its words."""
    text = "And he said to Olga Berg, see olga@example.org."
    spans = [{"start": 15, "end": 24, "label": "PERSON"}, {"start": 30, "end": 46, "label": "EMAIL"}]
    rows = [{"text": text, "spans": spans, "mentions": [], "register": "placed-in-sentence", "dev": i % 2 == 1}
            for i in range(40)]  # fmt: skip
    copies = tagger_trainer.with_vocatives(rows, 1.0, [f"Name{i}" for i in range(40)], 0)
    assert len(copies) == 40 and {c["register"] for c in copies} == {"vocative"}
    openings = 0
    for copy in copies:
        values = [copy["text"][s["start"] : s["end"]] for s in copy["spans"]]
        (first,) = [value for value in values if value.startswith("Name")]
        assert sorted(values) == sorted([first, "Olga Berg", "olga@example.org"])
        assert (zlib.crc32(first.encode()) % 10 == 0) == copy["dev"]
        openings += copy["text"].find("and he said") > 0
        assert "and he said" in copy["text"] or copy["text"].startswith("And he said")
    assert 0 < openings < 40


def test_the_tagger_trainers_gloss_frames_are_registers_of_people_and_of_clean_text(tagger_trainer: ModuleType) -> None:
    """``--gloss-frames``: people's glosses carry a gold name, things' glosses none and count as clean text on dev;
    without the flag neither register is made."""
    import random
    from types import SimpleNamespace

    fill = object.__new__(tagger_trainer.Fill)  # the real filler over a small pool, without the train sources' packages
    fill.rng, fill.things = random.Random(0), ["Lisbon", "Acme Corp", "the Rhine"]
    fill.names, fill.firsts = ["Ana Souza", "Li Wei", "Bo Lind"], ["Ana", "Li"]
    fill.surnames = ["Souza", "Okafor", "Lind"]
    fill.values = SimpleNamespace(email=lambda: ("ana@example.org",))
    rows = tagger_trainer.framed_rows(fill, 30, seed=0, glosses=True)
    people = [row for row in rows if row["register"] == "frame-gloss"]
    things = [row for row in rows if row["register"] == "frame-negative-gloss"]
    assert people and things and all(row["spans"] for row in people) and not any(row["spans"] for row in things)
    assert not any("gloss" in row["register"] for row in tagger_trainer.framed_rows(fill, 30, seed=0))
    scores = tagger_trainer.dev_scores([[(0, 3)], []], [{"row": things[0]}, {"row": things[1]}])
    assert scores["clean text with a PERSON"] == 0.5


def test_the_tagger_trainers_record_frames_add_initials_and_records_only_when_asked(tagger_trainer: ModuleType) -> None:
    """``--record-frames``: "B. Souza" is one name, a record's number stays outside it; without the flag the frames
    are FRAMES' alone, so a tagger trained without it is not stale against the file."""
    import random
    from types import SimpleNamespace

    fill = object.__new__(tagger_trainer.Fill)
    fill.rng, fill.things = random.Random(0), ["Lisbon", "Acme Corp"]
    fill.names, fill.firsts, fill.surnames = ["Ana Souza", "Li Wei"], ["Ana", "Li"], ["Souza", "Okafor", "Lind"]
    fill.values = SimpleNamespace(email=lambda: ("ana@example.org",))
    rows = tagger_trainer.framed_rows(fill, 60, seed=0, records=True)
    records = [row for row in rows if row["register"] == "frame-record"]
    assert records and all(row["spans"] for row in records)
    initialed = [row["text"][s["start"] : s["end"]] for row in rows for s in row["spans"] if ". " in row["text"]]
    assert any(re.fullmatch(r"(\w+ )?([A-Z]\. )+(Souza|Okafor|Lind)", name) for name in initialed), initialed
    named = [row["text"][s["start"] : s["end"]] for row in records for s in row["spans"]]
    assert not any(c.isdigit() for name in named for c in name)
    assert not any(row["register"] == "frame-record" for row in tagger_trainer.framed_rows(fill, 60, seed=0))


def test_the_tagger_trainers_placeholder_copies_write_values_as_redaction_does_and_keep_the_rest_aligned(
    tagger_trainer: ModuleType,
) -> None:
    """``--placeholders``: a redacted copy's "<PHONE>" and "<PERSON>" are outside; a name left in and a mention keep
    their words after the text before them has shrunk or grown; a copy naming nobody counts as clean text on dev."""
    text = "Call Jane Doe at 555-0134, Ref Acme."
    spans = [{"start": 5, "end": 13, "label": "PERSON"}, {"start": 17, "end": 25, "label": "PHONE"}]
    row = {"text": text, "spans": spans, "mentions": [{"start": 31, "end": 35, "label": "organisation"}],
           "unsure": [[31, 35]], "register": "attribution", "source": "fortunes-pypi", "dev": False}  # fmt: skip

    def words(copy: dict, key: str) -> list[str]:
        return [copy["text"][s["start"] : s["end"]] for s in copy[key]]

    phone = tagger_trainer.placeheld(row, [spans[1]])
    assert phone["text"] == "Call Jane Doe at <PHONE>, Ref Acme." and phone["register"] == "placeholders"
    assert words(phone, "spans") == ["Jane Doe"] and words(phone, "mentions") == ["Acme"]
    both = tagger_trainer.placeheld(row | {"unsure": []}, spans)
    assert both["text"] == "Call <PERSON> at <PHONE>, Ref Acme." and both["spans"] == []
    assert words(both, "mentions") == ["Acme"] and both["register"] == "placeholders-only"
    _, _, labels = tagger_trainer.word_labels(both["text"], both["spans"])
    assert set(labels) == {0}
    copies = tagger_trainer.with_placeholders([row] * 200, share=0.1, seed=0)
    assert 5 <= len(copies) <= 40 and all("<" in copy["text"] for copy in copies)


def test_the_silver_datas_old_registers_leave_out_unlabelled_names_and_sentences_an_eval_text_holds(
    silver_data: ModuleType,
) -> None:
    """``detector_real.py --old-registers``: a Bible verse naming someone it does not label would teach that a name is
    no person, so it is left out, while capitals the source also writes in lower case, a deity and the labelled name
    pass; a sentence sharing eight words in a row with an eval text is dropped, one sharing seven is kept."""
    lower = {"and", "said", "unto", "the", "ass", "so", "minister", "spake", "of", "peter"}
    assert silver_data.unlabelled_name("And Balaam said unto the ass", [], lower)
    assert not silver_data.unlabelled_name("So the Minister said unto the LORD", [], lower)
    verse = "And Simon Peter said unto the ass"
    assert not silver_data.unlabelled_name(verse, [(4, 15)], lower)
    assert silver_data.unlabelled_name(verse, [], lower), "Simon is written in lower case nowhere"
    held = silver_data.eval_shingles({silver_data.norm("one two three four five six seven eight nine")})
    assert not held.isdisjoint(silver_data.eight_words("Zero one two three four five six seven eight."))
    assert held.isdisjoint(silver_data.eight_words("Zero one two three four five six seven, and more besides."))


def test_reviewed_gold_leaves_out_a_name_where_readers_found_no_person_and_the_names_placed_there(
    silver_data: ModuleType,
) -> None:
    """``gold_review.json``'s names stand where its rows say; the named sentence and a name placed in its slot are left
    out of the reviewed score, the same slot in another source and another sentence are not."""
    rows = json.loads((ROOT / "benchmarks" / "gold_review.json").read_text(encoding="utf-8"))["not_a_person"]
    assert rows and all(row["text"][row["start"] : row["end"]] == row["name"] for row in rows)
    row = next(r for r in rows if r["name"] == "King Lear")
    item, span = silver_data.Item, silver_data.person
    named = item(row["text"], row["source"], "named-in-sentence", "eval", (span(row["start"], row["name"]),))
    text, start, _ = silver_data.swap(row["text"], row["start"], row["end"], "Agáta Horáková")
    placed = item(text, row["source"], "placed-in-sentence", "eval", (span(start, "Agáta Horáková"),))
    assert silver_data.reviewed_out(named) and silver_data.reviewed_out(placed)
    elsewhere = item(text, "fortunes", "placed-in-sentence", "eval", placed.gold)
    other = item("He met Agáta Horáková", row["source"], "placed-in-sentence", "eval", (span(7, "Agáta Horáková"),))
    assert not silver_data.reviewed_out(elsewhere) and not silver_data.reviewed_out(other)


def test_the_pii_free_sentences_readers_found_a_person_in_are_left_out_of_the_reviewed_redaction_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``gold_review.json``'s second list: each sentence names the person it says, once, and the redaction benchmark
    reads them as the sentences its reviewed row leaves out."""
    review = json.loads((ROOT / "benchmarks" / "gold_review.json").read_text(encoding="utf-8"))["names_a_person"]
    rows = review["sentences"]
    assert rows and all(row["name"].split(";")[0].split()[-1] in row["text"] for row in rows)
    bench = _script(monkeypatch, ROOT / "benchmarks", "redact_existing")
    assert bench.names_a_person() == {row["text"] for row in rows} and len(rows) == len(bench.names_a_person())


def test_the_bible_people_are_the_words_the_bible_puts_where_only_a_person_stands(silver_data: ModuleType) -> None:
    """``--bible-people``: a name the King James Bible uses as a begetter, a son or a speaker is a person; one it
    also puts where a land, a city or a people stands ("the land of Judah") is not, nor is a word it writes in lower
    case or the devil; one it puts only there is a place; every name of a verse is labelled, the full name first."""
    verses = [
        "And Enos begat Cainan.", "And Cainan begat Mahalaleel.", "Enos said unto them, Go.",
        "Judah begat Phares.", "Judah said, Nay.", "And they went into the land of Judah.", "Judah spake.",
        "Satan answered the LORD.", "Satan said, Skin for skin.", "Job answered.", "Job said, Lo.",
        "Then Mark said unto him.", "Mark begat none.", "Mark the spot.", "They went into Egypt.", "The land of Egypt.",
    ]  # fmt: skip
    lower = {w.rstrip(".,") for verse in verses for w in verse.split() if w.islower()} | {"mark"}
    people, places = silver_data.kjv_names(verses, lower)
    assert people == {"Enos", "Cainan", "Job"}, people
    assert places == {"Egypt"}, places
    verse = "And Job the son of Enos and Jesus Christ said"
    spans = silver_data.labelled_people(verse, {"Jesus Christ", "Job"}, people)
    assert [verse[s:e] for s, e in spans] == ["Job", "Enos", "Jesus Christ"]
    assert silver_data.deity("Holy Ghost") and silver_data.deity("God Almighty") and not silver_data.deity("James I")


def test_every_script_keeps_a_name_in_other_letters_unless_eval_holds_that_name(silver_data: ModuleType) -> None:
    """``--every-script``: ``norm`` turns a name in Cyrillic or Chinese letters into nothing, as it does every eval
    name in such letters, so train dropped them all as shared with eval; compared in every script, only the same
    name is shared."""

    def item(text: str, name: str, split: str) -> object:
        start = text.index(name)
        return silver_data.Item(text, "kjv", "placed-in-sentence", split, (silver_data.person(start, name),))

    evaluation = [item("So said Нікасій Сірченко to the king.", "Нікасій Сірченко", "eval")]
    train = [
        item(f"And {name} went up to the city.", name, "train") for name in ("Олег Бойко", "王小明", "Нікасій Сірченко")
    ]
    assert silver_data.disjoint_from(train, evaluation) == []
    kept = silver_data.disjoint_from(train, evaluation, silver_data.letters)
    assert [i.text for i in kept] == ["And Олег Бойко went up to the city.", "And 王小明 went up to the city."]


def test_a_placed_name_is_renamed_as_a_ruler_with_every_offset_after_it_moved(tagger_trainer: ModuleType) -> None:
    """``--rulers``: a sentence's one placed name becomes a ruler's or a saint's, of a first name on the row's side of
    the dev split; the values after it keep their words."""
    text = "And he said to Olga Berg, see olga@example.org."
    spans = [{"start": 15, "end": 24, "label": "PERSON"}, {"start": 30, "end": 46, "label": "EMAIL"}]
    rows = [{"text": text, "spans": spans, "mentions": [], "register": "placed-in-sentence", "dev": dev}
            for dev in (False, True)]  # fmt: skip
    firsts = [f"Name{i}" for i in range(40)]
    copies = tagger_trainer.with_rulers(rows, 1.0, firsts, 0)
    assert [c["dev"] for c in copies] == [False, True] and {c["register"] for c in copies} == {"ruler-placed"}
    for copy in copies:
        ruler, email = (copy["text"][s["start"] : s["end"]] for s in copy["spans"])
        assert email == "olga@example.org" and copy["text"].startswith(f"And he said to {ruler}, see ")
        first = next(w for w in ruler.replace(".", " ").split() if w.startswith("Name"))
        assert (zlib.crc32(first.encode()) % 10 == 0) == copy["dev"]


def test_ruler_titles_add_titled_and_ordinal_forms_only_when_asked(tagger_trainer: ModuleType) -> None:
    """``--ruler-titles`` adds forms ("King Olaf", "Olaf the Second"); without it, none of them."""
    text = "And he said to Olga Berg, see you."
    rows = [{"text": text, "spans": [{"start": 15, "end": 24, "label": "PERSON"}], "mentions": [],
             "register": "placed-in-sentence", "dev": False} for _ in range(300)]  # fmt: skip
    firsts = [f"Name{i}" for i in range(40)]

    def rulers(titled: bool) -> list[str]:
        return [c["text"][15 : c["spans"][0]["end"]] for c in tagger_trainer.with_rulers(rows, 1.0, firsts, 0, titled)]

    plain, titled = rulers(False), rulers(True)
    titles = ("King ", "Queen ", "Pope ", "Emperor ", "Prince ")
    assert not any(r.startswith(titles) or r.split()[-1] in tagger_trainer.ORDINALS for r in plain)
    assert any(r.startswith("King ") for r in titled) and any(r.split()[-1] in tagger_trainer.ORDINALS for r in titled)
    assert "{" not in "".join(titled)


def test_a_tagger_trained_on_from_another_ships_the_lower_layers_it_was_trained_over(
    tagger_trainer: ModuleType,
    tmp_path: Path,
) -> None:
    """``--init`` with frozen layers: they are the init's, not the installed encoder's the tagger loads under its
    weights, so they ship beside the trained ones (a tagger without them lost a fifth of its dev names)."""
    from argparse import Namespace

    from safetensors.torch import load_file

    from vdbguard.detectors import tagger as T
    from vdbguard.detectors.lexicon import name_gazetteer

    name = [{"start": 10, "end": 19, "label": "PERSON"}]
    rows = [{"text": "Thanks to Ana Souza for the patch.", "register": "frame-credit", "mentions": [], "dev": dev,
             "source": "frames", "spans": name} for dev in (True, False)]  # fmt: skip
    tagger_trainer.save_examples(
        tmp_path / "ex", tagger_trainer.encode_rows(rows, T.Tokens(), name_gazetteer()), {}, layers=4
    )
    args = Namespace(seed=0, threads=1, examples=tmp_path / "ex", layers=4, trained=2, device="cpu", lower=0.0,
                     init=T.TAGGER_DIR, init_layers=None, score=None, learn_rate=1e-5, name_weight=2.0, average=0.0,
                     decay=False, out=tmp_path / "out", minutes=5.0, steps=1, batch=1, eval_every=1,
                     outside_biases=[0.0])  # fmt: skip
    tagger_trainer.train(args)
    shipped = load_file(str(tmp_path / "out" / "tagger.safetensors"))
    init = load_file(str(T.TAGGER_DIR / "tagger.safetensors"))
    lower = [key for key in init if key.startswith("encoder.layer.0.")]
    assert lower and all(key in shipped and shipped[key].equal(init[key]) for key in lower)
    assert any(not shipped[key].equal(init[key]) for key in shipped if key.startswith("encoder.layer.3."))


def test_the_tagger_trainer_scores_the_shipped_tagger_at_each_outside_bias(tagger_trainer: ModuleType) -> None:
    """``--score``: the shipped tagger's own weights decode its dev rows; a large outside bias leaves no name. They are
    loaded before the frozen states: its lower layers were trained too, and the installed encoder's under its top ones
    scored a fifth fewer dev names."""
    from safetensors.torch import load_file

    from vdbguard.detectors import tagger as T
    from vdbguard.detectors.lexicon import name_gazetteer

    text = "Thanks to Ana Souza for the patch to the parser."
    rows = [{"text": text, "register": "frame-credit", "mentions": [], "dev": True,
             "spans": [{"start": 10, "end": 19, "label": "PERSON"}]}]  # fmt: skip
    examples = tagger_trainer.encode_rows(rows, T.Tokens(), name_gazetteer())
    training = json.loads((T.TAGGER_DIR / "training.json").read_text(encoding="utf-8"))
    model = tagger_trainer.installed_model(training["layers"], frozen=training["frozen"])
    tagger_trainer.load_tagger(model, [T.TAGGER_DIR])
    shipped = load_file(str(T.TAGGER_DIR / "tagger.safetensors"))
    lower = [key for key in shipped if key.startswith("encoder.layer.0.")]
    assert lower and all(model.state_dict()[key].equal(shipped[key].float()) for key in lower)
    tagger_trainer.lower_states(model, examples)
    scored = tagger_trainer.score(model, [T.TAGGER_DIR], examples, [0.0, 50.0])["by_bias"]
    assert scored[0.0]["PERSON"] == 1.0 and scored[50.0]["PERSON"] == 0.0
    assert scored[0.0]["objective"] > scored[50.0]["objective"]


def test_the_tagger_trainer_scores_several_taggers_as_one_with_their_weights_averaged(
    tagger_trainer: ModuleType, tmp_path: Path
) -> None:
    """``--score A B``: taggers trained from one start, read as one whose every weight is their mean."""
    import torch
    from safetensors.torch import load_file, save_file

    from vdbguard.detectors import tagger as T

    shipped = load_file(str(T.TAGGER_DIR / "tagger.safetensors"))
    (tmp_path / "zeros").mkdir()
    save_file({k: torch.zeros_like(v) for k, v in shipped.items()}, str(tmp_path / "zeros" / "tagger.safetensors"))
    training = json.loads((T.TAGGER_DIR / "training.json").read_text(encoding="utf-8"))
    model = tagger_trainer.installed_model(training["layers"], frozen=training["frozen"])
    tagger_trainer.load_tagger(model, [T.TAGGER_DIR, tmp_path / "zeros"])
    state = model.state_dict()
    assert all(state[k].equal(v.float() / 2) for k, v in shipped.items())
    save_file({"head.weight": shipped["head.weight"]}, str(tmp_path / "zeros" / "tagger.safetensors"))
    with pytest.raises(SystemExit, match="ship different layers"):
        tagger_trainer.load_tagger(model, [T.TAGGER_DIR, tmp_path / "zeros"])


def test_the_tagger_trainer_starts_a_smaller_tagger_from_chosen_layers_of_a_trained_one(
    tagger_trainer: ModuleType,
) -> None:
    """``--init-layers 0 2``: a two-layer tagger whose layers are the trained one's first and third, head kept."""
    from safetensors.torch import load_file

    from vdbguard.detectors import tagger as T

    shipped = load_file(str(T.TAGGER_DIR / "tagger.safetensors"))
    model = tagger_trainer.installed_model(2, frozen=1)
    tagger_trainer.load_tagger(model, [T.TAGGER_DIR], [0, 2])
    state = model.state_dict()
    for kept, source in ((0, 0), (1, 2)):
        keys = [k for k in shipped if k.startswith(f"encoder.layer.{source}.")]
        assert keys and all(state[k.replace(f".{source}.", f".{kept}.", 1)].equal(shipped[k].float()) for k in keys)
    assert state["head.weight"].equal(shipped["head.weight"].float())
    assert tagger_trainer.renumbered("encoder.layer.1.output.dense.weight", [0, 2]) == ""


def test_the_tagger_trainer_saves_what_a_gpu_trains_on(tagger_trainer: ModuleType, tmp_path: Path) -> None:
    """``--save-examples`` then ``--examples``: the encoded examples come back as written, and the encoder's fp16
    copy gives the installed weights' frozen states to fp16's precision; a copy of fewer layers is refused."""
    import torch

    from vdbguard.detectors import tagger as T
    from vdbguard.detectors.lexicon import name_gazetteer

    rows = [{"text": "Thanks to Ana Souza for the patch.", "register": "frame-credit", "mentions": [], "dev": True,
             "source": "frames", "spans": [{"start": 10, "end": 19, "label": "PERSON"}]},
            {"text": "The parser was rewritten.", "register": "clean-sentence", "mentions": [], "dev": False,
             "source": "frames", "spans": []}]  # fmt: skip
    examples = tagger_trainer.encode_rows(rows, T.Tokens(), name_gazetteer())
    tagger_trainer.save_examples(tmp_path, examples, {"silver": "x"}, layers=4)
    loaded = tagger_trainer.loaded_examples(tmp_path)
    for before, after in zip(examples, loaded, strict=True):
        assert torch.equal(before["ids"], after["ids"]) and torch.equal(before["features"], after["features"])
        assert before["target"] == after["target"] and list(before["first"]) == after["first"]
    assert loaded[0]["offsets"] == examples[0]["offsets"] and loaded[1]["offsets"] == []  # dev rows only
    copied, installed = (
        tagger_trainer.installed_model(4, 2, tmp_path / "encoder.safetensors"),
        tagger_trainer.installed_model(4, 2),
    )
    tagger_trainer.lower_states(copied, loaded)
    tagger_trainer.lower_states(installed, examples)
    for after, before in zip(loaded, examples, strict=True):
        assert torch.allclose(after["state"].float(), before["state"].float(), rtol=0.02, atol=0.02)
    with pytest.raises(SystemExit, match="--layers 6"):
        tagger_trainer.installed_model(6, 4, tmp_path / "encoder.safetensors")


def test_the_address_trainer_labels_an_addresss_words_begin_then_inside_in_the_texts_order(
    address_trainer: ModuleType,
) -> None:
    """The tagger reads windows grouped by length, not in order; each word's label must still meet its own states,
    and two addresses side by side stay two."""
    from vdbguard.detectors.tagger import PersonTagger

    first, second = "12 Oak Lane, Leeds", "4 Elm Road"
    long_text = f"Ship to {first} and {second} please, with the long note about the crate repeated twice over"
    rows = [  # the first and last texts are read together, before the second
        {"text": "no address here", "addresses": []},
        {"text": long_text, "addresses": [[8, 8 + len(first)], [13 + len(first), 13 + len(first) + len(second)]]},
        {"text": "no address there", "addresses": []},
    ]
    tagger = PersonTagger()
    assert [index for index, *_ in tagger.read([row["text"] for row in rows])] == [0, 2, 1]
    states, labels, offsets, lengths = address_trainer.word_data(tagger, rows)
    assert len(states) == len(labels) == sum(len(words) for words in offsets) == sum(lengths)
    assert states.shape[1] == 768
    words = [long_text[s:e] for s, e in offsets[1]]
    assert words[:10] == ["Ship", "to", "12", "Oak", "Lane", ",", "Leeds", "and", "4", "Elm"]
    assert labels.tolist()[3 : 3 + 12] == [0, 0, 1, 2, 2, 2, 2, 0, 1, 2, 2, 0]
    assert labels.tolist()[:3] == labels.tolist()[3 + len(words) :] == [0, 0, 0]
    (_, _, _, alone), *_ = tagger.read([long_text], with_states=True)
    assert np.allclose(states[3 : 3 + len(words)], alone.numpy()), "each text's words meet their own states"


def test_the_address_trainer_gives_each_word_its_neighbours_as_the_head_reads_them(address_trainer: ModuleType) -> None:
    """Training gathers neighbours by index over all windows at once; the shipped head pads each window with zeros.
    Both must give a word the same inputs, and never a word of the next window."""
    import torch

    from vdbguard.detectors.tagger import with_neighbours

    windows = [torch.arange(1, 7, dtype=torch.float32).reshape(3, 2), torch.tensor([[10.0, 20.0]])]
    index = address_trainer.neighbour_index([3, 1], context=1)
    assert index.tolist() == [[-1, 0, 1], [0, 1, 2], [1, 2, -1], [-1, 3, -1]]
    padded = torch.cat([*windows, torch.zeros(1, 2)])
    gathered = padded[torch.from_numpy(index)].flatten(1)
    assert torch.equal(gathered, torch.cat([with_neighbours(w, 1) for w in windows]))
    assert torch.equal(with_neighbours(windows[0], 0), windows[0])


def test_the_address_trainers_dev_counts_the_characters_of_an_address_it_found(address_trainer: ModuleType) -> None:
    """A head that finds only the house number leaves the street and the postcode to be embedded: dev must see it."""

    text = "meet me at 9 Pamela Row, Lake Adam, S5 3WH instead"
    address = (11, 11 + len("9 Pamela Row, Lake Adam, S5 3WH"))
    assert address_trainer.coverage(text, address, [(11, 12, 0.9)]) == pytest.approx(1 / 23)
    assert address_trainer.coverage(text, address, [(11, 23, 0.9), (25, address[1], 0.9)]) == 1.0
    assert address_trainer.coverage(text, address, [(0, 4, 0.9)]) == 0.0


def test_a_placed_name_is_renamed_by_a_surname_that_is_a_word(tagger_trainer: ModuleType) -> None:
    """``--word-surnames``: a sentence's one placed name becomes a surname of the row's side of the dev split (dev
    surnames are never trained on), alone or after a given name; the values after it keep their words."""
    text = "And he said to Olga Berg, see olga@example.org."
    spans = [{"start": 15, "end": 24, "label": "PERSON"}, {"start": 30, "end": 46, "label": "EMAIL"}]
    rows = [{"text": text, "spans": spans, "mentions": [], "register": register, "dev": i % 2 == 1}
            for i in range(200) for register in ("pronoun-placed", "clean-sentence")]  # fmt: skip
    surnames, firsts = [f"Word{i}" for i in range(40)], [f"Name{i}" for i in range(40)]
    copies = tagger_trainer.with_word_surnames(rows, 1.0, surnames, firsts, 0)
    assert len(copies) == 200 and {c["register"] for c in copies} == {"word-surname"}
    lone = 0
    for copy in copies:
        name, email = (copy["text"][s["start"] : s["end"]] for s in copy["spans"])
        assert email == "olga@example.org" and copy["text"] == f"And he said to {name}, see olga@example.org."
        *first, surname = name.split(" ")
        assert surname in surnames and first in ([], *([f] for f in firsts))
        assert (zlib.crc32(surname.encode()) % 10 == 0) == copy["dev"]
        lone += not first
    assert 60 < lone < 140
