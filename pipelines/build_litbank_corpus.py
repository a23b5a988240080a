"""Build ``pipelines/corpora/litbank.conll.gz``: the openings of 100 English novels, their people's names marked.

LitBank (Bamman, Popat and Shen, NAACL 2019; coreference: Bamman, Lewke and Mansoor, LREC 2020) marks every mention
of a person, place, facility, organisation and vehicle in about 2,000 words of each of 100 public-domain novels,
github.com/dbamman/litbank, CC BY 4.0. Its coreference layer tells names (``PROP_PER``) from "the wrathful skipper"
and "he". From a clone of it at 3e50db0::

    python pipelines/build_litbank_corpus.py litbank

writes the trainer's CoNLL columns (``--conll``), a ``-DOCSTART-`` line a novel, so that its dev split (a document in
ten) keeps a novel whole. A name is a ``PROP_PER`` mention's capitalised words, or an entity-layer person's whose
every word is capitalised (the coreference layer left out some: "Pink"): "the poet Shelley" is "Shelley", a title
before it stays outside as everywhere in the trainer ("Mr. Bennet"); a god ("God"), a group ("The Happy Family") and a
people ("the Irish") are no one. The other proper mentions are places, organisations and products. Left out: every
sentence sharing eight words in a row with an eval text, and every one naming a WordNet instance, whom the eval's
glosses and named sentences are about (as the trainer's ``--without-wordnet-instances``); both need the eval sources,
which ``detector_real.py`` unpacks.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
from pathlib import Path

from build_email_corpus import PARTICLES as NAME_PARTICLES
from silver_sources import detector_real as real
from train_person_tagger import TITLES_BEFORE_NAMES, wordnet_instance_names

OUT = Path(__file__).resolve().parent / "corpora" / "litbank.conll.gz"
KINDS = {"PER": "PER", "GPE": "LOC", "LOC": "LOC", "FAC": "LOC", "ORG": "ORG", "VEH": "product"}
TITLES = TITLES_BEFORE_NAMES | {
    "madame", "monsieur", "mme", "mlle", "herr", "frau", "aunt", "uncle", "dame", "esq", "master", "mistress",
    "father", "mother", "brother", "sister", "cousin", "count", "countess", "duke", "duchess", "baron", "baroness",
    "marquis", "earl",
}  # fmt: skip
DETERMINERS = {
    "The", "A", "An", "That", "This", "These", "Those", "Any", "Some", "Every", "Each", "No", "All", "Little", "Old",
    "Young", "Poor", "Dear", "My", "Your", "His", "Her", "Our", "Their",
}  # fmt: skip
PEOPLES = {
    "French", "Dutch", "Greeks", "Turks", "Jews", "Arabs", "Dakotas", "Chippewas", "Sioux", "Yankees", "Danes", "Scots",
    "Swedes", "Poles", "Britons", "Saxons", "Normans", "Moors", "Gauls", "Franks", "Goths", "Huns", "English", "Irish",
    "Scottish", "Spanish", "British", "Danish", "Swedish", "Turkish", "Polish", "Jewish", "Flemish",
}  # fmt: skip
PARTICLES = NAME_PARTICLES | {"of", "the"}  # old prose's too: "Alexander the Great", "Lady Jane of Kent"
INSIDE_NAMES = PARTICLES | {".", "'"}  # words a name runs on through: "Alexander the Great", "St . John"


def novel(text: str, annotations: str, entities: str = "") -> list[list[tuple[str, str]]]:
    """A novel's sentences (its brat text: a sentence a line, tokens between spaces), each a list of (token, tag).
    ``annotations``: the coreference layer's, which tells names from other mentions; ``entities``: the entity layer's,
    whose people the coreference layer sometimes left out or called nominal ("Pink", "Big Medicine"), a name there
    when every word of it is capitalised and the first is not a determiner ("The Happy Family")."""
    sentences, token_at = [], {}
    offset = 0
    for line in text.split("\n"):
        tokens = line.split(" ") if line else []
        at = offset
        for index, token in enumerate(tokens):
            token_at[at] = (len(sentences), index)
            at += len(token) + 1
        sentences.append([[token, "O"] for token in tokens])
        offset += len(line) + 1
    for row in annotations.splitlines() + entities.splitlines():
        if not row.startswith("T"):
            continue
        kind_and_span, _ = row.split("\t")[1:3]
        kind, start, end = kind_and_span.split(" ")
        form, _, entity = kind.partition("_") if "_" in kind else ("", "", kind)
        words = text[int(start) : int(end)].split(" ")
        proper = form == "PROP" or (entity == "PER" and not form and capitalised(words))
        if not proper or entity not in KINDS or int(start) not in token_at:
            continue
        sentence, first = token_at[int(start)]
        first, words = named(first, words) if entity == "PER" else (first, words)
        if not words or (entity == "PER" and (real.deity(" ".join(words)) or group(words))):
            continue
        tags = sentences[sentence]
        if any(tag != "O" for _, tag in tags[first : first + len(words)]):
            continue  # nested in a mention already tagged
        for index in range(first, first + len(words)):
            tags[index][1] = ("B-" if index == first else "I-") + KINDS[entity]
    return [[(token, tag) for token, tag in sentence] for sentence in sentences if sentence]


def named(first: int, words: list[str]) -> tuple[int, list[str]]:
    """The name inside a person's proper mention: its last run of capitalised words, titles before it left out."""
    runs, run = [], []
    for index, word in enumerate(words):
        if word[:1].isupper() or (run and word in INSIDE_NAMES):
            run.append(index)
        elif run:
            runs.append(run)
            run = []
    runs += [run] if run else []
    if not runs:
        return first, []
    kept = runs[-1]
    while kept and words[kept[-1]] in INSIDE_NAMES:
        kept = kept[:-1]
    while kept and words[kept[0]].rstrip(".").lower() in TITLES:
        kept = kept[1:]
    return (first + kept[0], words[kept[0] : kept[-1] + 1]) if kept else (first, [])


def capitalised(words: list[str]) -> bool:
    letters = [word for word in words if word[:1].isalpha()]
    return (
        bool(letters)
        and letters[0].title() not in DETERMINERS
        and all(w[0].isupper() or w in PARTICLES for w in letters)
    )


def group(words: list[str]) -> bool:
    """A people or a nation the annotators counted as a person ("the Americans", "Irish")."""
    return len(words) == 1 and (words[0] in PEOPLES or words[0].endswith(("ians", "cans", "ese")))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", type=Path, help="a clone of LitBank (a bare one will do)")
    parser.add_argument("--commit", default="3e50db0")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/vdbguard-detector-real"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    listing = git(args.repo, "ls-tree", "--name-only", f"{args.commit}:coref/brat").split()
    stems = sorted(name[: -len(".ann")] for name in listing if name.endswith(".ann"))
    root = real.unpack(args.cache)
    wordnet = real.wordnet(root)
    shingles = real.eval_shingles(real.eval_texts(root, wordnet))
    instances = wordnet_instance_names(wordnet)
    blocks, dropped, names = [], 0, 0
    for stem in stems:
        kept = []
        layers = ("coref/brat/{}.txt", "coref/brat/{}.ann", "entities/brat/{}.ann")
        for sentence in novel(*(git(args.repo, "show", f"{args.commit}:{layer.format(stem)}") for layer in layers)):
            text = " ".join(token for token, _ in sentence)
            people = [" ".join(t for t, _ in person) for person in tagged(sentence, "PER")]
            if not shingles.isdisjoint(real.eight_words(text)) or instances & {real.norm(p) for p in people}:
                dropped += 1
                continue
            names += len(people)
            kept.append("\n".join(f"{token}\t{tag}" for token, tag in sentence))
        blocks.append("-DOCSTART-\tO\n\n" + "\n\n".join(kept))
    args.out.write_bytes(gzip.compress(("\n\n".join(blocks) + "\n").encode(), mtime=0))
    print(f"{args.out}: {len(stems)} novels, {names} names; {dropped} sentences left out")


def tagged(sentence: list[tuple[str, str]], kind: str) -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for token, tag in sentence:
        if tag == f"B-{kind}":
            found.append([(token, tag)])
        elif tag == f"I-{kind}" and found:
            found[-1].append((token, tag))
    return found


if __name__ == "__main__":
    main()
