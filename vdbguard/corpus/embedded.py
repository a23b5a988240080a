"""A corpus embedded by one embedder, cached on disk: attack training and concept fitting share the file."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vdbguard.cache import atomic_write, cache_root
from vdbguard.corpus.labelled import LabelledText, corpus_hash
from vdbguard.progress import ProgressSink, Silent

if TYPE_CHECKING:
    from vdbguard.embedders import Embedder


def embed_corpus(
    embedder: Embedder,
    corpus: Sequence[LabelledText],
    progress: ProgressSink | None = None,
    cache_dir: Path | None = None,
) -> np.ndarray:
    """The corpus' embeddings, cached under ``cache_dir`` (default: the cache root) by embedder fingerprint and
    corpus hash, so a second scan or fit against the same embedder never re-embeds."""
    path = (cache_dir or cache_root()) / "embeddings" / f"{embedder.fingerprint}-{corpus_hash(corpus)[:16]}.npy"
    if path.exists():
        return np.load(path)
    with (progress or Silent()).task("Embedding training corpus", len(corpus)) as advance:
        embeddings = embedder.encode([item.text for item in corpus], progress=advance)
    with atomic_write(path) as handle:
        np.save(handle, embeddings)
    return embeddings


def embed_list(
    embedder: Embedder, texts: Sequence[str], cache_dir: Path | None = None, stored: type = np.float32
) -> np.ndarray:
    """Embeddings of a fixed word list (a name gazetteer, a tokenizer's vocabulary), cached on disk by embedder
    and list, so an attack retrained once per defense setting embeds its ~31k names once. ``stored``: the
    dtype on disk (float16 halves a large table); the result is float32."""
    digest = hashlib.sha256("\n".join([embedder.fingerprint, *texts]).encode()).hexdigest()[:16]
    path = (cache_dir or cache_root()) / "embeddings" / f"list-{digest}.npy"
    if path.exists():
        return np.load(path).astype(np.float32)
    embeddings = embedder.encode(list(texts))
    with atomic_write(path) as handle:
        np.save(handle, embeddings.astype(stored))
    return embeddings
