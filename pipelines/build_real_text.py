"""Build ``vdbguard/data/real_text.jsonl.gz``: human-written technical sentences from the source code of
permissively licensed Python packages, for training and calibrating the attacks on real text.

Each line is ``{"text", "source", "kind"}``: ``source`` is the package (the corpus splits by it), ``kind``
is ``prose`` (a docstring or comment sentence) or ``credit`` (a line that credited a real person, e.g.
"Contributed by {name} <{email}>.", with every name and email replaced by a placeholder: the file ships no
real person's details). Source files are parsed with
``ast``/``tokenize``, never imported. Debian's package documentation and CPython's ``pydoc_data`` are never
read: an external evaluation is drawn from them.

    pip install --no-deps --target /tmp/real-text-pins transformers==5.23.0 faker==40.54.0 markdown==3.11.3
    PYTHONPATH=/tmp/real-text-pins python pipelines/build_real_text.py   # the shipped file, byte for byte

The output depends on the versions of ``PACKAGES``, Faker and spaCy's model; ``pipelines/inputs.json`` records those
it was built with (the pins folder holds the three that a clean clone's environment lacks or has at other versions).
``--out FILE`` writes elsewhere, to compare.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import importlib.util
import io
import json
import random
import re
import tokenize
from pathlib import Path

PACKAGES = (
    "numpy", "scipy", "sklearn", "pandas", "sympy", "networkx", "torch", "click", "rich", "pydantic",
    "sqlalchemy", "pygments", "jinja2", "markdown", "requests", "httpx", "transformers", "faker",
)  # fmt: skip
PER_SOURCE = 2500
OUT = Path(__file__).resolve().parent.parent / "vdbguard" / "data" / "real_text.jsonl.gz"

CODE_CHARS = re.compile(r"[|_\\<>{}\[\]=#@~^*`$]|::|>>>|\.\.\.|\w\(|https?:")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
NAME = r"[A-Z][a-z]+(?:[- ][A-Z][a-z]+|\s[A-Z]\.)*\s(?:[A-Z]'|Mc|Mac|van |von |de |da )?[A-Z][a-z]+"
CREDIT = re.compile(
    rf"^(?:(?:[Aa]uthors?|[Cc]ontributed by|[Ww]ritten by|[Tt]hanks to|[Bb]ased on (?:code|work) by|[Pp]atch by"
    rf"|[Oo]riginal(?:ly)? (?:code |implementation )?by|[Mm]aintainer|[Cc]redits? to|[Aa]dapted from code by)"
    rf":?\s+)({NAME})\b"
)
NAMED = re.compile(r"[Cc]opyright|\(c\)|\b[A-Z]{2,}\s*\(\w+\)|\(\w*\d\w*\)|\bby [A-Z][a-z]+\b")
TOO_TECHNICAL = re.compile(r"\b(?:Parameters|Returns|Examples|See Also|Notes|Raises|Yields|Attributes)\b")


EMAIL = re.compile(r"<?[\w.+-]+@[\w-]+(?:\.[\w-]+)+>?")


def as_template(line: str) -> str:
    line = EMAIL.sub("<{email}>", line)
    return re.sub(NAME, "{name}", line)


def usable(sentence: str) -> bool:
    words = sentence.split()
    letters = sum(c.isalpha() for c in sentence)
    return (
        4 <= len(words) <= 40
        and sentence.isascii()
        and letters >= 0.7 * len(sentence.replace(" ", ""))
        and not CODE_CHARS.search(sentence)
        and not TOO_TECHNICAL.search(sentence)
        and sentence[0].isupper()
        and sentence[-1] in ".!?"
        and sum(c.isupper() for c in sentence) < 0.3 * letters
    )


def docstring_sentences(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
            if doc:
                paragraph = doc.split("\n\n")[0]
                found += SENTENCE_END.split(" ".join(paragraph.split()))
    return found


def comment_lines(source: str) -> list[str]:
    comments: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                comments.append((token.start[0], token.string.lstrip("#!: ").strip()))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return [text for _, text in comments]


def comment_sentences(source: str) -> list[str]:
    """Comments joined across consecutive lines, then split into sentences."""
    blocks: list[list[str]] = []
    last = -2
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                text = token.string.lstrip("#!: ").strip()
                if token.start[0] == last + 1 and blocks and text:
                    blocks[-1].append(text)
                else:
                    blocks.append([text])
                last = token.start[0]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return [s for block in blocks for s in SENTENCE_END.split(" ".join(" ".join(block).split()))]


def package_lines(package: str) -> tuple[list[str], list[str]]:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not installed: pip install it, or drop it from PACKAGES")
    prose: dict[str, None] = {}
    credits: dict[str, None] = {}
    for path in sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.py")):
        if "test" in path.parts or "tests" in path.parts:
            continue
        source = path.read_text(encoding="utf-8", errors="replace")
        for line in comment_lines(source) + [ln.strip() for ln in source.splitlines() if "by" in ln or ":" in ln]:
            match = CREDIT.match(line.lstrip("#*-: ").strip())
            if match and len(line.split()) <= 20 and line.isascii() and "http" not in line:
                credits.setdefault(as_template(line.lstrip("#*-: ").strip()), None)
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for sentence in docstring_sentences(tree) + comment_sentences(source):
            sentence = " ".join(sentence.split())
            if usable(sentence) and not CREDIT.match(sentence):
                prose.setdefault(sentence, None)
    return list(prose), list(credits)


def without_people(sentences: list[str]) -> list[str]:
    """Prose that names nobody (spaCy's NER, Faker's name lists, no copyright holders or user handles):
    a named person in "clean" text would be a wrong label, and the file must ship no real person's name."""
    from vdbguard.corpus.human import _maybe_person_name, _without_person_names

    kept = [s for s in sentences if not _maybe_person_name(s) and not NAMED.search(s)]
    return _without_person_names(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    out = parser.parse_args().out
    rng = random.Random(0)
    rows = []
    for package in PACKAGES:
        prose, credits = package_lines(package)
        prose = without_people(prose)
        for text in sorted(rng.sample(prose, min(PER_SOURCE, len(prose)))):
            rows.append({"text": text, "source": package, "kind": "prose"})
        for text in credits:
            rows.append({"text": text, "source": package, "kind": "credit"})
        print(f"{package}: {len(prose)} prose sentences, {len(credits)} credits")
    lines = "".join(json.dumps(row, ensure_ascii=True) + "\n" for row in rows)
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as fh:  # the same input gives the same bytes
        fh.write(lines.encode())
    print(f"{len(rows)} lines -> {out} ({out.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
