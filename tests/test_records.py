"""Columnar pages: digests as the records' would be, and records built only for the rows a scan attacks."""

from __future__ import annotations

import numpy as np
import pytest

from vdbguard.records import PROTECTION_MARK_KEY, Batch, Columns, VectorRecord, row_digest


def columns(n: int, built: list[int]) -> Columns:
    rng = np.random.default_rng(n)
    matrix = rng.standard_normal((n, 6)).astype(np.float32)[:, ::-1]  # not contiguous, as a slice may be
    present = np.arange(n) % 4 != 1
    payloads = [f'{{"i": {i}}}'.encode() if i % 3 else b"" for i in range(n)]
    texts = [None if i % 2 else f"note {i}" for i in range(n)]

    def record(i: int) -> VectorRecord:
        built.append(i)
        return VectorRecord(f"id-{i}", matrix[i] if present[i] else None, {"i": i}, texts[i])

    return Columns([f"id-{i}" for i in range(n)], matrix, present, payloads, texts, record)


def test_a_columnar_page_digests_each_row_as_row_digest_does_and_builds_only_the_rows_taken() -> None:
    built: list[int] = []
    page = Batch(None, "cursor", columns(9, built))
    c = page.columns
    want = [
        row_digest(f"id-{i}", c.vectors[i] if c.has_vector[i] else None, c.stored_payloads[i], c.texts[i])
        for i in range(9)
    ]
    assert page.digests() == want and len(set(want)) == 9
    assert page.ids == [f"id-{i}" for i in range(9)] and len(page) == 9 and not built
    assert [r.id for r in page.take([7, 2])] == ["id-7", "id-2"] and built == [7, 2]
    assert [r.id for r in page.records] == page.ids and page.records is page.records
    assert page.take([1])[0].vector is None, "a row without a vector gives a record without one"


def test_an_empty_page_and_a_page_of_both_kinds_are_handled() -> None:
    empty = Batch(None, None, Columns([], np.zeros((0, 6), np.float32), np.zeros(0, bool), [], [], lambda i: None))
    assert empty.digests() == [] and empty.records == [] and len(empty) == 0
    with pytest.raises(ValueError, match="either records or columns"):
        Batch([], None, empty.columns)


def test_a_columnar_page_hands_out_its_source_texts_building_a_record_only_where_a_payload_may_hold_one() -> None:
    built: list[int] = []
    matrix = np.ones((4, 3), np.float32)
    payloads = [b'{"doc": 1}', b'{"content": "Call Ana on 555-0101", "doc": 2}', b'{"doc": 3, "note": "text"}', b"{}"]
    decoded = [{"doc": 1}, {"content": "Call Ana on 555-0101", "doc": 2}, {"doc": 3, "note": "text"}, {}]
    texts = [None, None, None, "kept beside the vector"]

    def record(i: int) -> VectorRecord:
        built.append(i)
        return VectorRecord(f"id-{i}", matrix[i], decoded[i], texts[i])

    page = Batch(None, None, Columns([f"id-{i}" for i in range(4)], matrix, np.ones(4, bool), payloads, texts, record))
    assert page.source_texts() == [None, "Call Ana on 555-0101", None, "kept beside the vector"]
    assert built == [1, 2], "built only where the payload names a text key (or holds one as a value)"
    plain = Batch(None, None, Columns(["x"], matrix[:1], np.ones(1, bool), [b'{"doc": 1}'], [None], record))
    assert plain.source_texts() == [None] and built == [1, 2]
    assert Batch([VectorRecord("r", matrix[0], {"body": "hello"})], None).source_texts() == ["hello"]


def test_the_protection_mark_is_neither_stored_text_nor_a_source_text() -> None:
    """protect's mark is vdbguard's bookkeeping: the stored-text checks (and so the reports) never read it."""
    mark = '[{"transform":"gaussian","digest":"e33efdf1c1045d0e"}]'
    record = VectorRecord("r", np.ones(3, np.float32), {"author": "Ana Souza", PROTECTION_MARK_KEY: mark}, "a note")
    assert record.stored_texts() == [("document", "a note"), ("payload.author", "Ana Souza")]
    assert VectorRecord("r", None, {PROTECTION_MARK_KEY: mark}).source_text is None
