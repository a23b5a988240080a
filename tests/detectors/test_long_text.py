"""A 10 MB payload is read in windows, not refused: spaCy stops at a million characters, and before this
the ValueError stopped the whole scan."""

from __future__ import annotations

import pytest

from vdbguard.detectors.presidio import MAX_CHARS, WINDOW, PresidioDetector
from vdbguard.pii import PiiType


@pytest.fixture(scope="module")
def detector() -> PresidioDetector:
    return PresidioDetector()


def test_a_value_across_a_window_edge_is_found_whole_at_its_place(detector: PresidioDetector) -> None:
    email = "ana.souza@example.com"
    filler = "The printer on the third floor jams again. "
    before = (filler * (WINDOW // len(filler) + 1))[: WINDOW - 10]
    before = before[: before.rfind(" ") + 1]  # the address starts a word, a few characters before the edge
    assert WINDOW - 20 < len(before) < WINDOW < len(before) + len(email)
    text = f"{before}{email} wrote about it. " + filler * 100
    found = [d for d in detector.detect(text) if d.pii_type == PiiType.EMAIL]
    assert [(d.value, d.start) for d in found] == [(email, len(before))]


def test_a_ten_megabyte_text_is_read_up_to_the_limit(detector: PresidioDetector) -> None:
    filler = "Nothing to see in this line of the log. "
    head = "Write to ana.souza@example.com today. "
    tail = "Or to bjarni.gislason@example.org later."
    text = head + filler * ((10_000_000 - len(head) - len(tail)) // len(filler)) + tail
    assert len(text) > 9_900_000
    emails = {d.value for d in detector.detect(text) if d.pii_type == PiiType.EMAIL}
    assert emails == {"ana.souza@example.com"}, f"the first {MAX_CHARS} characters only"
