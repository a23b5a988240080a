"""Training and caching the attacks: what two processes sharing one cache may rely on."""

from __future__ import annotations

import fcntl
import threading
import time
from pathlib import Path

from vdbguard.attacks.training import _training_lock


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
