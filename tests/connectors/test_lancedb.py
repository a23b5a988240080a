"""The LanceDB connector reads a table as a chain of offset queries, the next ones running while this one's
pages are handed out: whatever the query size, page size or resume point, every row must come back once, in
one order, with the same digest as one big query gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

lancedb = pytest.importorskip("lancedb")

from vdbguard.connectors import lancedb as lance_connector  # noqa: E402
from vdbguard.connectors.lancedb import LanceDBConnector  # noqa: E402

from vdbguard.records import VectorRecord  # noqa: E402

ROWS = 23


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return _filled(tmp_path / "lance")


def _filled(path: Path) -> Path:
    """Three fragments (three inserts) of rows with text, a JSON payload, and some of each missing."""
    records = [
        VectorRecord(
            id=f"r{i:02d}",
            vector=np.arange(4, dtype=np.float32) + i / 7,
            payload={"n": i, "tag": "odd"} if i % 3 else {},
            text=f"note {i}" if i % 4 else None,
        )
        for i in range(ROWS)
    ]
    with LanceDBConnector(collection="notes", path=path) as connector:
        connector.ensure_collection(4)
        for start in (0, 9, 17):
            connector.upsert(records[start : {0: 9, 9: 17, 17: ROWS}[start]])
    return path


def _pages(path: Path, batch_size: int, resume_from: str | None = None) -> list[tuple[str, bytes]]:
    with LanceDBConnector(collection="notes", path=path) as connector:
        batches = list(connector.iter_batches(batch_size=batch_size, resume_from=resume_from))
    return [(i, d) for b in batches for i, d in zip(b.ids, b.digests(), strict=True)]


@pytest.mark.parametrize(("read_rows", "batch_size"), [(4, 1), (4, 3), (5, 5), (2, 7), (4096, 2)])  # rows of 16 bytes
def test_every_row_comes_once_with_the_digest_one_query_gives(
    store: Path, read_rows: int, batch_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = _pages(store, batch_size=ROWS)
    monkeypatch.setattr(lance_connector, "READ_BYTES", 16 * read_rows)
    assert _pages(store, batch_size) == whole
    assert len({i for i, _ in whole}) == ROWS


def test_a_resume_from_any_page_continues_exactly(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lance_connector, "READ_BYTES", 16 * 4)
    with LanceDBConnector(collection="notes", path=store) as connector:
        cursors = [(list(b.ids), b.cursor) for b in connector.iter_batches(batch_size=3)]
    order = [i for ids, _ in cursors for i in ids]
    seen: list[str] = []
    for ids, cursor in cursors:
        seen += ids
        assert seen + [i for i, _ in _pages(store, 2, resume_from=cursor)] == order


def test_a_reader_stopped_early_lets_the_connector_close(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lance_connector, "READ_BYTES", 16 * 2)
    with LanceDBConnector(collection="notes", path=store) as connector:
        pages = connector.iter_batches(batch_size=1)
        first = next(pages)
        pages.close()  # the queries already under way are waited for, not leaked
    assert first.ids == [_pages(store, ROWS)[0][0]]


def test_the_connector_leaves_lancedbs_rest_client_to_its_first_use(tmp_path: Path) -> None:
    """The REST namespace client's ``__init__`` builds every REST API class (about 0.4 s of each scan's start);
    a scan reads the table without it, and code that asks the package for a name still gets the whole of it."""
    import subprocess
    import sys

    program = (
        "import sys\n"
        "import numpy as np\n"
        "from vdbguard.connectors.lancedb import LanceDBConnector\n"
        "from vdbguard.records import VectorRecord\n"
        f"with LanceDBConnector(collection='t', path={str(tmp_path)!r}) as c:\n"
        "    c.ensure_collection(2, 'cosine')\n"
        "    c.upsert([VectorRecord(id='a', vector=np.ones(2, dtype=np.float32))])\n"
        "    assert [i for b in c.iter_batches() for i in b.ids] == ['a']\n"
        "assert 'lance_namespace_urllib3_client.api' not in sys.modules\n"
        "from lance_namespace_urllib3_client import ApiClient, TableApi\n"
        "assert 'lance_namespace_urllib3_client.api' in sys.modules and callable(ApiClient)\n"
    )
    subprocess.run([sys.executable, "-c", program], check=True, timeout=300)


@pytest.mark.parametrize("address", ["path", "uri"])  # a local table's manifests, or LanceDB's version list
def test_the_content_version_changes_with_every_write_and_with_what_the_connector_reads(
    store: Path, address: str
) -> None:
    location = str(store) if address == "path" else store.as_uri()

    def version(**reads: str) -> str | None:
        with LanceDBConnector(collection="notes", path=location, **reads) as connector:
            return connector.content_version()

    before = version()
    assert before is not None and version() == before, "nothing written: the same version"
    assert version(text_column="other") != before, "another column read is other content"

    number = lancedb.connect(store).open_table("notes").version
    lancedb.connect(store).drop_table("notes")
    _filled(store)  # the same rows, written the same way: the same version number and totals, made later
    remade = version()
    assert lancedb.connect(store).open_table("notes").version == number
    assert remade is not None and remade != before

    with LanceDBConnector(collection="notes", path=store) as connector:
        rows = [record for batch in connector.iter_batches() for record in batch.records]
        connector.upsert(rows[:1])  # the same row written again is still a write
    assert version() != remade


def test_a_local_tables_content_version_is_read_without_importing_lancedb(store: Path) -> None:
    """LanceDB's import is most of an unchanged re-scan's time, and that re-scan needs only the version."""
    import subprocess
    import sys

    program = (
        "import sys\n"
        "from vdbguard.connectors.lancedb import LanceDBConnector\n"
        f"with LanceDBConnector(collection='notes', path={str(store)!r}) as c:\n"
        "    version = c.content_version()\n"
        "assert version and 'lancedb' not in sys.modules, sorted(m for m in sys.modules if 'lance' in m)\n"
        "print(version)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], check=True, timeout=300, capture_output=True, text=True)
    with LanceDBConnector(collection="notes", path=store) as connector:
        assert done.stdout.strip() == connector.content_version()
