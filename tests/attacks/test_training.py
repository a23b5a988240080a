"""Training and caching the attacks: what two processes sharing one cache may rely on."""

from __future__ import annotations

import fcntl
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from vdbguard.attacks.training import _training_lock, protected_embeddings
from vdbguard.corpus import synthetic_pii
from vdbguard.corpus.embedded import embed_corpus
from vdbguard.transforms.chain import Chain
from vdbguard.transforms.redaction import TextRedaction
from vdbguard.transforms.rotation import SecretRotation


def _taken(path: Path) -> bool:
    with open(path, "w") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


def test_a_model_is_trained_by_one_process_while_another_waits_for_it(tmp_path: Path) -> None:
    lock = tmp_path / "models" / ".bag-of-words-v3-abc.lock"
    order: list[str] = []

    def second() -> None:
        with _training_lock(tmp_path / "models", "bag-of-words-v3-abc"):
            order.append("second looks")

    with _training_lock(tmp_path / "models", "bag-of-words-v3-abc"):
        assert _taken(lock)
        waiting = threading.Thread(target=second)
        waiting.start()
        time.sleep(0.2)
        order.append("first trained")
    waiting.join(timeout=10)
    assert order == ["first trained", "second looks"]
    assert not _taken(lock)


def test_the_adaptive_attacker_trains_on_a_chains_whole_write_path(embedder, tmp_path: Path) -> None:
    """redact+rotation: the corpus redacted, embedded, then rotated, as the store holds it; not redacted alone."""
    corpus = synthetic_pii(6, seed=3)
    rotation = SecretRotation(key="vdbguard-test-key-not-secret-0123456789")
    redaction = TextRedaction(0.4)
    chained = protected_embeddings(Chain([redaction, rotation]), embedder, corpus, cache=tmp_path)
    texts = redaction.transform_texts([item.text for item in corpus])
    redacted = [replace(item, text=text) for item, text in zip(corpus, texts, strict=True)]
    assert any(a.text != b.text for a, b in zip(corpus, redacted, strict=True)), "the corpus names people"
    redacted_only = embed_corpus(embedder, redacted, None, tmp_path)
    np.testing.assert_allclose(chained, rotation.apply(redacted_only), atol=1e-5)
    assert not np.allclose(chained, redacted_only, atol=1e-2)
