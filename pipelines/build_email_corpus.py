"""Build ``pipelines/corpora/emailcoref.{train,dev,test}.jsonl.gz``: real business email, its people marked (issue #53).

The text is 46 threads of the Enron email corpus (made public by FERC), annotated with every person, organisation
and place mention and their coreference by Dakle, Desai and Moldovan (LREC 2020), github.com/paragdakle/emailcoref,
Apache-2.0. From a clone of it at d86bdcd::

    python pipelines/build_email_corpus.py emailcoref/data/LREC

Each line of a thread is a row as the tagger's trainer reads them (``--rows``): its tokens joined as they were written
("Perry's", "HOU/EES@EES"), ``spans`` its named people, ``mentions`` its named organisations and places and people's
email addresses (``email``), ``document`` the thread. A mention is a name when every word of it is capitalised (name
particles aside) and it is not a role or a group the annotators counted as people (``NOT_NAMES``): pronouns,
"A friend", "Evan's team", "Account Director" and email addresses stay outside. Split by mailbox, so that no thread of
an evaluated mailbox is ever trained on:

- ``test``: the corpus's own test threads, scored once per candidate (``benchmarks/email_people.py``);
- ``dev``: its train threads from the same mailboxes as the test threads, for choosing settings;
- ``train``: its train threads from every other mailbox.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

OUT = Path(__file__).resolve().parent / "corpora"
# coreferent mentions of people that name nobody: roles, teams, groups, a mailing list, a newsletter
NOT_NAMES = {
    "SME", "2 SME", "The 3 SME", "Account Director", "Administrative Coordinator", "Economist", "Electricity Team",
    "Gas Logistics Group", "Natural Gas Reliability Advisory Group", "Senior Director", "Sr. Administrative Assistant",
    "Team", "Mommy", "EMCA", "SMU Betas", "SMU/Beta's", "Beta Bro's", "DL-IT Calgary",
}  # fmt: skip
# people the annotators marked who sign or are named in lower case: given names, initials, a user name
LOWER_CASE_NAMES = {"ben", "adr", "ams", "gh", "pr", "pocesco", "zaeza"}
PARTICLES = {"de", "la", "van", "von", "du", "del", "da", "di", "le"}
KINDS = {"P": "PERSON", "O": "organisation", "L": "place"}
PRONOUNS = {
    "i", "me", "my", "mine", "myself", "you", "your", "yours", "yourself", "he", "him", "his", "himself", "she",
    "her", "hers", "herself", "we", "us", "our", "ours", "ourselves", "they", "them", "their", "theirs", "it", "its",
    "who", "whom", "whose", "everyone", "everybody", "anyone", "anybody", "someone", "somebody", "all", "others",
}  # fmt: skip
_MENTION = re.compile(r"(\()?([POLD])(\d+)\*?(\))?")
NO_SPACE_BEFORE = {".", ",", ";", ":", "!", "?", ")", "]", "%", "/", "'s", "n't", "'re", "'ve", "'ll", "'d", "'m"}
NO_SPACE_AFTER = {"(", "[", "$", "/"}
_NOT_NAMES_UNSPACED = {name.replace(" ", "") for name in NOT_NAMES}  # a mention's tokens are joined without spaces


def threads_of(content: str) -> list[list[tuple[str, str]]]:
    """A thread's lines, each a list of (token, entity column)."""
    lines: list[list[tuple[str, str]]] = [[]]
    for row in content.splitlines():
        if row.startswith("#"):
            continue
        if not row.strip():
            lines.append([])
            continue
        cells = row.split("\t")
        lines[-1].append((cells[0], cells[2] if len(cells) > 2 else "-"))
    return [line for line in lines if line]


def mentions_of(line: list[tuple[str, str]]) -> list[tuple[str, int, int]]:
    """(kind, first token, last token) of every mention, nested ones included."""
    found, open_at = [], {}
    for index, (_, column) in enumerate(line):
        for part in column.split("|") if column != "-" else ():
            match = _MENTION.fullmatch(part.strip())
            if match is None:
                continue
            opens, kind, chain, closes = match.groups()
            if opens and closes:
                found.append((kind, index, index))
            elif opens:
                open_at.setdefault(kind + chain, []).append(index)
            elif closes and open_at.get(kind + chain):
                found.append((kind, open_at[kind + chain].pop(), index))
    return found


def is_name(tokens: list[str]) -> bool:
    words = [token for token in tokens if token[:1].isalpha()]
    return (
        bool(words)
        and not any("@" in token for token in tokens)
        and (
            all(word[0].isupper() or word in PARTICLES for word in words)
            or (len(tokens) == 1 and tokens[0] in LOWER_CASE_NAMES)
        )
        and "".join(tokens) not in _NOT_NAMES_UNSPACED
        and (len(words) > 1 or words[0].lower() not in PRONOUNS)
    )


def joined(tokens: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """The tokens as written, and each token's character span: no space before a closing mark, after an opening one,
    around a hyphen inside a word, or inside a pair of double quotes."""
    text, places, quoted = "", [], False
    for index, token in enumerate(tokens):
        before = tokens[index - 1] if index else ""
        glued = (
            not text
            or token in NO_SPACE_BEFORE
            or before in NO_SPACE_AFTER
            or (token == "-" and before[-1:].isalnum())
            or (before == "-" and text[-2:-1].isalnum())
            or (token == '"' and quoted)
            or (before == '"' and quoted)
        )
        quoted ^= token == '"'
        text += "" if glued else " "
        places.append((len(text), len(text) + len(token)))
        text += token
    return text, places


def row(line: list[tuple[str, str]], thread: str) -> dict:
    """A line as a row: named people first, then named organisations and places; a person's email address a mention
    (``email``), so that the benchmark counts such a line neither named nor clean."""
    tokens = [token for token, _ in line]
    text, places = joined(tokens)
    taken: set[int] = set()
    spans, mentions = [], []
    named = [(KINDS[kind], a, b) for kind, a, b in mentions_of(line) if kind in KINDS and is_name(tokens[a : b + 1])]
    named += [("email", a, b) for kind, a, b in mentions_of(line) if kind == "P" and "@" in "".join(tokens[a : b + 1])]
    for kind, first, last in sorted(named, key=lambda mention: (mention[0] != "PERSON", mention[2] - mention[1])):
        if taken.isdisjoint(range(first, last + 1)):
            taken.update(range(first, last + 1))
            span = {"start": places[first][0], "end": places[last][1], "label": kind}
            (spans if kind == "PERSON" else mentions).append(span)
    return {"text": text, "spans": sorted(spans, key=lambda s: s["start"]),
            "mentions": sorted(mentions, key=lambda s: s["start"]), "source": "emailcoref", "register": "email",
            "document": thread}  # fmt: skip


def split_of(path: Path, test_mailboxes: set[str]) -> str:
    if path.parent.name == "test":
        return "test"
    return "dev" if mailbox(path) in test_mailboxes else "train"


def mailbox(path: Path) -> str:
    return path.stem.rsplit("_", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lrec", type=Path, help="the clone's data/LREC folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    files = sorted(args.lrec.glob("*/*.conll"))
    test_mailboxes = {mailbox(path) for path in files if path.parent.name == "test"}
    written: dict[str, list[str]] = {"train": [], "dev": [], "test": []}
    for path in files:
        rows = [
            json.dumps(row(line, path.stem), ensure_ascii=False)
            for line in threads_of(path.read_text("utf-8", "replace"))
        ]
        written[split_of(path, test_mailboxes)] += rows
    for split, rows in written.items():
        target = args.out / f"emailcoref.{split}.jsonl.gz"
        target.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode(), mtime=0))
        print(f"{target}: {len(rows)} lines")


if __name__ == "__main__":
    main()
