"""What a corpus sentence is (``LabelledText``) and the hash that keys caches on a corpus.

Light on purpose: every attack imports ``LabelledText``, and none of them should pay for Faker, yaml or
spaCy to do so.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Literal, TypeVar

from vdbguard.cache import cache_root, cached_json
from vdbguard.pii import PiiType

Split = Literal["train", "holdout"]

T = TypeVar("T")

DEFAULT_LOCALES: tuple[str, ...] = ("en_US", "en_GB", "en_CA", "en_AU", "en_IE")


@dataclass(frozen=True)
class LabelledText:
    """One training/demo sentence with exact PII labels.

    ``pii`` is exactly ``set(values)``: the types whose literal values (``values[type]``) were inserted
    into ``text``. Clean, human and user texts have empty ``pii`` and ``values``.
    """

    text: str
    pii: frozenset[PiiType]
    values: dict[PiiType, tuple[str, ...]] = field(hash=False)
    source: str


def corpus_hash(items: Sequence[LabelledText]) -> str:
    """SHA-256 over texts, labels and sources, in order: a cache key for models trained on ``items``.

    Order counts because training order changes the model; the JSON encoding makes it unambiguous and
    independent of Python's hash randomisation.
    """
    payload = [[it.text, sorted(p.value for p in it.pii), it.source] for it in items]
    blob = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def cached_corpus_hash(key: str, corpus: Callable[[], Sequence[LabelledText]]) -> str:
    """``corpus_hash(corpus())``, kept on disk under ``key``: a scan never rebuilds a corpus only to hash it."""
    return cached_from_corpus(f"hash-{key}", lambda: corpus_hash(corpus()))


def cached_from_corpus(key: str, compute: Callable[[], T]) -> T:
    """``compute()``'s JSON value, kept on disk under ``key`` and everything a corpus is built from (the corpus
    code, the packaged data, Faker, chatterbot-corpus and spaCy), so a change to any of them recomputes it."""
    name = hashlib.sha256(f"{key}|{_corpus_sources_digest()}".encode()).hexdigest()[:24]
    return cached_json(cache_root() / "corpus-digests" / f"{name}.json", compute)


@functools.cache
def _corpus_sources_digest() -> str:
    """A digest of the corpus code, the packaged data (60 MB, read only when a file's size or time changed) and
    the versions of the packages a corpus is built with."""
    import vdbguard.data

    code = Path(__file__).parent  # the corpus package
    data = Path(vdbguard.data.__path__[0])
    inputs = sorted(f for f in data.iterdir() if f.is_file() and f.name != vdbguard.data.FIRST_RUN_CACHE)
    files = (*sorted(code.glob("*.py")), *inputs)
    versions = [f"{package}=={metadata.version(package)}" for package in ("faker", "chatterbot-corpus", "spacy")]

    def contents() -> str:
        digest = hashlib.sha256()
        for file in files:
            digest.update(file.name.encode() + file.read_bytes())
        for package in versions:
            digest.update(package.encode())
        return digest.hexdigest()[:24]

    stamps = [[str(f), (stat := f.stat()).st_size, stat.st_mtime_ns] for f in files]
    name = hashlib.sha256(json.dumps([stamps, versions]).encode()).hexdigest()[:24]
    return cached_json(cache_root() / "corpus-digests" / f"sources-{name}.json", contents)
