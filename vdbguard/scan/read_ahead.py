"""Read the next pages while this one is attacked: a scan waits on the store only when the attacks are faster."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

_END = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def read_ahead(pages: Iterator[T], depth: int = 2, lock: threading.Lock | None = None) -> Iterator[T]:
    """``pages`` in order, drawn by one thread that stays at most ``depth`` pages ahead, so memory stays
    bounded. A reading error is raised here, as the store raised it, once the pages before it are used.
    Only that thread touches the iterator, each page drawn holding ``lock``: whoever else uses the same
    connector meanwhile takes it too. Leaving early stops the thread before the next page is read."""
    ready: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    lock = lock or threading.Lock()

    def offer(item: object) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            while not stop.is_set():
                with lock:
                    page = next(pages, _END)
                if not offer(page) or page is _END:
                    return
        except BaseException as exc:  # handed to the consumer, which raises it
            offer(_Failed(exc))
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                with lock:
                    close()  # a connector's generator releases its cursor in this thread, which ran it

    reader = threading.Thread(target=read, name="vdbguard-read-ahead", daemon=True)
    reader.start()
    try:
        while True:
            item = ready.get()
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        reader.join()
