"""The scan reads the next pages while it attacks this one, without changing what it reads or how it fails."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from vdbguard.errors import ConnectorError
from vdbguard.scan.read_ahead import read_ahead


class Pages:
    """A connector's page generator, recording how far it was drawn and whether it was closed, and by whom."""

    def __init__(self, count: int, fail_at: int | None = None) -> None:
        self.count, self.fail_at = count, fail_at
        self.drawn = 0
        self.closed_in: str | None = None
        self.threads: set[str] = set()

    def __iter__(self) -> Iterator[int]:
        try:
            for page in range(self.count):
                self.threads.add(threading.current_thread().name)
                if page == self.fail_at:
                    raise ConnectorError("the store went away", "start it again")
                self.drawn += 1
                yield page
        finally:
            self.closed_in = threading.current_thread().name


def test_every_page_comes_once_in_order_and_the_reader_stays_within_its_depth() -> None:
    pages = Pages(50)
    seen = []
    for page in read_ahead(iter(pages), depth=2):
        assert pages.drawn <= page + 1 + 2 + 1, "at most depth pages queued, plus one in hand"
        seen.append(page)
    assert seen == list(range(50))
    assert pages.threads == {"vdbguard-read-ahead"} and pages.closed_in == "vdbguard-read-ahead"


def test_a_reading_error_arrives_after_the_pages_before_it_as_the_store_raised_it() -> None:
    pages = Pages(10, fail_at=4)
    seen = []
    with pytest.raises(ConnectorError, match="went away"):
        for page in read_ahead(iter(pages), depth=3):
            seen.append(page)
    assert seen == [0, 1, 2, 3]


def test_leaving_early_stops_the_reader_and_closes_the_pages() -> None:
    pages = Pages(1000)
    for page in read_ahead(iter(pages), depth=2):
        if page == 5:
            break
    assert pages.closed_in == "vdbguard-read-ahead" and pages.drawn <= 5 + 1 + 2 + 1
    assert not any(t.name == "vdbguard-read-ahead" for t in threading.enumerate())


def test_whoever_holds_the_lock_never_uses_the_store_beside_the_reader() -> None:
    """Calibrating on the store's text reads the same connector mid-scan: it takes the lock the reader takes."""
    lock = threading.Lock()
    busy = threading.Event()

    def pages() -> Iterator[int]:
        for page in range(30):
            busy.set()
            time.sleep(0.002)
            busy.clear()
            yield page

    overlaps = 0
    for _ in read_ahead(pages(), depth=2, lock=lock):
        with lock:
            overlaps += busy.is_set()
            time.sleep(0.002)
    assert overlaps == 0
