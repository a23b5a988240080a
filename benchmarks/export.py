"""Raw export throughput of each store vs the vdbguard connector over the same vectors, side by side.

    python benchmarks/export.py --records 100000 --dim 384 [--stores chroma,qdrant-local,...] [--scan]

For each store: fill it once with the same random float32 vectors (plus a small payload), then time
(a) a loop over the vendor client's own paging API (and, for a client that hands each vector out as a Python
list, the same loop making each page one float32 matrix, which any use of the vectors needs), (b)
``Connector.iter_batches`` over the same data read as a re-scan reads it (ids and vectors; a columnar page
builds no record), also without the private copy for a connector that reads one, so the copy is priced apart,
and (c) with every ``VectorRecord`` built, as a first scan does; same page size, alternating runs, keeping the
best of ``--repeats``. With ``--scan``, also one whole first scan with the fast tier per store; with ``--memory``,
the peak RSS of a fresh process that reads the store once raw and once through the connector's pages. Prints one
table.
"""

from __future__ import annotations

import atexit
import functools
import multiprocessing
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from common import bench_parser

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests: pgvector's server

from vdbguard.records import VectorRecord

PAGE = 1000


@dataclass
class Store:
    fill: Callable[[Path, list[VectorRecord]], Any]  # returns a context
    raw: Callable[[Any, bool], int]  # (context, to_matrix) -> number of vectors read
    connector: Callable[[Any, bool], Any]  # (context, snapshot) -> a Connector
    hands_lists: bool = False  # the client gives each vector as a Python list: raw also times the float32 matrix
    copies: bool = False  # the connector reads a private copy: also timed without it, to price the copy


def _matrix(vectors: list[Any], to_matrix: bool) -> None:
    if to_matrix:
        np.array(vectors, dtype=np.float32)


def _scrolled(scroll: Callable[[Any], tuple[Any, Any]], to_matrix: bool) -> int:
    """Every page of a Qdrant scroll (points, next offset), from the start until the offset runs out."""
    n, offset = 0, None
    while True:
        points, offset = scroll(offset)
        _matrix([p.vector for p in points], to_matrix)
        n += len(points)
        if offset is None:
            return n


def _fill(connector: Any, records: list[VectorRecord], metric: str = "cosine") -> None:
    with connector:
        connector.ensure_collection(records[0].vector.size, metric)
        for start in range(0, len(records), 5000):
            connector.upsert(records[start : start + 5000])


def _path_store(
    cls: Any,
    folder: str,
    raw: Callable[[Any, bool], int],
    metric: str = "cosine",
    *,
    hands_lists: bool = False,
    copies: bool = False,
) -> Store:
    """A store its connector ``cls`` opens by path, ``folder`` under the run's root; a connector that reads a private
    copy (``copies``) is also built without one."""

    def fill(root: Path, records: list[VectorRecord]) -> dict:
        _fill(cls(collection="bench", path=str(root / folder)), records, metric)
        return {"path": str(root / folder)}

    def connector(ctx: dict, snapshot: bool) -> Any:
        if copies:
            return cls(collection="bench", path=ctx["path"], snapshot=snapshot)
        return cls(collection="bench", path=ctx["path"])

    return Store(fill, raw, connector, hands_lists=hands_lists, copies=copies)


def chroma_store() -> Store:
    import chromadb
    from vdbguard.connectors.chroma import ChromaConnector

    def fill(root: Path, records: list[VectorRecord]) -> dict:
        _fill(ChromaConnector(collection="bench", path=root / "chroma", create=True), records, "l2")
        return {"path": root / "chroma"}

    def raw(ctx: dict, to_matrix: bool) -> int:
        collection = chromadb.PersistentClient(path=str(ctx["path"])).get_collection("bench")
        n, offset = 0, 0
        while True:
            page = collection.get(limit=PAGE, offset=offset, include=["embeddings", "metadatas", "documents"])
            if not page["ids"]:
                return n
            n += len(page["ids"])
            offset += len(page["ids"])

    return Store(
        fill, raw, lambda ctx, snap: ChromaConnector(collection="bench", path=ctx["path"], snapshot=snap), copies=True
    )


def lancedb_store() -> Store:
    import lancedb
    from vdbguard.connectors.lancedb import LanceDBConnector

    def raw(ctx: dict, to_matrix: bool) -> int:
        table = lancedb.connect(ctx["path"]).open_table("bench")
        return sum(batch.num_rows for batch in table.search().limit(None).to_batches(PAGE))

    return _path_store(LanceDBConnector, "lance", raw)


def qdrant_edge_store() -> Store:
    import qdrant_edge
    from vdbguard.connectors.qdrant_edge import QdrantEdgeConnector

    def raw(ctx: dict, to_matrix: bool) -> int:
        shard_dir = next(p for p in Path(ctx["path"]).rglob("edge_config.json")).parent
        shard = qdrant_edge.EdgeShard.load(str(shard_dir))
        request = functools.partial(qdrant_edge.ScrollRequest, limit=PAGE, with_payload=True, with_vector=True)
        n = _scrolled(lambda offset: shard.scroll(request(offset=offset)), to_matrix)
        shard.close()
        return n

    return _path_store(QdrantEdgeConnector, "edge", raw, "l2", hands_lists=True, copies=True)


def qdrant_local_store() -> Store:
    from qdrant_client import QdrantClient
    from vdbguard.connectors.qdrant import QdrantConnector

    def raw(ctx: dict, to_matrix: bool) -> int:
        client = QdrantClient(path=ctx["path"])
        request = functools.partial(client.scroll, "bench", limit=PAGE, with_payload=True, with_vectors=True)
        n = _scrolled(lambda offset: request(offset=offset), to_matrix)
        client.close()
        return n

    return _path_store(QdrantConnector, "qdrant", raw, hands_lists=True, copies=True)


def milvus_store() -> Store:
    from pymilvus import MilvusClient
    from vdbguard.connectors.milvus import MilvusConnector

    def raw(ctx: dict, to_matrix: bool) -> int:
        client = MilvusClient(ctx["path"])
        client.load_collection("bench")
        iterator = client.query_iterator("bench", batch_size=PAGE, output_fields=["*"])
        n = 0
        while batch := iterator.next():
            n += len(batch)
        iterator.close()
        client.close()
        return n

    return _path_store(MilvusConnector, "milvus.db", raw)


def pgvector_store() -> Store:
    """A throwaway PostgreSQL server with pgvector (``scripts/pgvector-server.sh``, as the tests start it)."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql
    from vdbguard.connectors.pgvector import PgvectorConnector

    from tests.connectors.contract.backend_pgvector import PgvectorServer

    server = PgvectorServer(Path(tempfile.mkdtemp(prefix="bench-pg-")))
    server.start()
    atexit.register(server.stop)

    def fill(root: Path, records: list[VectorRecord]) -> dict:
        with PgvectorConnector(collection="bench", url=server.url()) as connector:
            connector.ensure_collection(records[0].vector.size, "cosine")
        with psycopg.connect(server.url(), autocommit=True) as conn:
            # without its HNSW index: building one over 100,000 × 384-d rows took PostgreSQL over 9 minutes, and
            # neither way of reading here uses it (both page by the primary key)
            for (index,) in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'bench'").fetchall():
                if index != "bench_pkey":
                    conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
        _fill(PgvectorConnector(collection="bench", url=server.url()), records)
        return {"url": server.url()}

    def raw(ctx: dict, to_matrix: bool) -> int:
        n, last = 0, ""
        with psycopg.connect(ctx["url"]) as conn:
            register_vector(conn)
            while True:
                with conn.cursor(binary=True) as cur:
                    query = "SELECT id, embedding, text, payload FROM bench WHERE id > %s ORDER BY id LIMIT %s"
                    rows = cur.execute(query, (last, PAGE)).fetchall()
                if not rows:
                    return n
                _matrix([row[1] for row in rows], to_matrix)
                n, last = n + len(rows), rows[-1][0]

    return Store(fill, raw, lambda ctx, snap: PgvectorConnector(collection="bench", url=ctx["url"]))


STORES: dict[str, Callable[[], Store]] = {
    "chroma": chroma_store,
    "lancedb": lancedb_store,
    "qdrant-edge": qdrant_edge_store,
    "qdrant-local": qdrant_local_store,
    "milvus": milvus_store,
    "pgvector": pgvector_store,
}


def make_records(n: int, dim: int) -> list[VectorRecord]:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return [
        VectorRecord(
            id=str(uuid.UUID(int=i + 1)), vector=vectors[i], payload={"i": i, "tag": f"t{i % 7}"}, text=f"doc {i}"
        )
        for i in range(n)
    ]


def time_it(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    n = fn()
    return time.perf_counter() - start, n


def connector_read(make: Callable[[], Any], build_records: bool) -> int:
    """Every page, as a re-scan reads it (ids and vectors; a columnar page builds no record), or with every
    record built (as a first scan does, which attacks them all)."""
    with make() as connector:
        if build_records:
            return sum(len(batch.records) for batch in connector.iter_batches(batch_size=PAGE))
        return sum(len(batch.ids) for batch in connector.iter_batches(batch_size=PAGE))


WAYS = {
    "raw": "raw export: the vendor's paging loop",
    "raw-matrix": "raw export, each page's vectors made one float32 matrix",
    "pages": "connector pages, as a re-scan reads them",
    "pages-in-place": "connector pages without the private copy",
    "records": "connector, every record built",
}


def read_once(store: Store, ctx: dict, way: str) -> int:
    if way.startswith("raw"):
        return store.raw(ctx, way == "raw-matrix")
    return connector_read(lambda: store.connector(ctx, way != "pages-in-place"), build_records=way == "records")


def scan_once(store: Store, ctx: dict, name: str) -> int:
    """A whole first scan with the fast tier (profile small, in-process, calibration off: the payload is no
    real text), models loaded from the cache inside the time, as a scheduled job pays them."""
    from vdbguard.embedders import Embedder
    from vdbguard.scan.owner import OFF
    from vdbguard.scan.run import scan_collection
    from vdbguard.scan.settings import ScanSettings, ScanTarget

    with store.connector(ctx, True) as connector:
        report = scan_collection(
            connector, ScanTarget(name, "bench"), ScanSettings(profile="small", batch_size=PAGE, calibration=OFF),
            embedder=Embedder(),
        )  # fmt: skip
    return report.summary.records_scanned


def ways(store: Store) -> list[str]:
    return [w for w in WAYS if (w != "raw-matrix" or store.hands_lists) and (w != "pages-in-place" or store.copies)]


def _read_peak(name: str, ctx: dict, way: str) -> float:
    read_once(STORES[name](), ctx, way)
    # VmHWM, not ru_maxrss: a spawned child's ru_maxrss starts at its parent's peak (Linux keeps it across exec)
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024


def peak_mib(name: str, ctx: dict, way: str) -> float:
    """Peak RSS (MiB) of a fresh process, its imports included, that reads the whole store once this way."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_read_peak, (name, ctx, way))


def measure(
    name: str, store: Store, records: list[VectorRecord], repeats: int, scan: bool, memory: bool
) -> dict[str, float]:
    """Vectors/s, best of ``repeats`` for each way, runs alternating so load changes hit every way alike; then
    (``scan``) one whole fast-tier scan and (``memory``) the peak memory of reading raw and as pages."""
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        ctx = store.fill(Path(tmp), records)
        best = dict.fromkeys(ways(store), float("inf"))
        for _ in range(repeats):
            for way in best:
                seconds, n = time_it(functools.partial(read_once, store, ctx, way))
                assert n == len(records), (name, way, n)
                best[way] = min(best[way], seconds)
        if scan:
            seconds, n = time_it(functools.partial(scan_once, store, ctx, name))
            assert n == len(records), (name, "scan", n)
            best["scan"] = seconds
        peaks = {f"peak {way}": peak_mib(name, ctx, way) for way in ("raw", "pages")} if memory else {}
    rates = {way: len(records) / seconds for way, seconds in best.items()}
    print(f"{name}: " + ", ".join(f"{way} {rate:,.0f}/s" for way, rate in rates.items()), flush=True)
    return rates | peaks


def main() -> None:
    parser = bench_parser(__doc__, records=100_000, dim=384, repeats=3)
    parser.add_argument("--stores", default=",".join(STORES))
    parser.add_argument("--scan", action="store_true", help="also time one whole fast-tier scan per store")
    parser.add_argument("--memory", action="store_true", help="also the peak memory of reading raw and as pages")
    args = parser.parse_args()
    records = make_records(args.records, args.dim)
    rows = {
        name: measure(name, STORES[name](), records, args.repeats, args.scan, args.memory)
        for name in args.stores.split(",")
    }
    print("\nvectors/s; overheads are over the raw export (and over raw-matrix where the client hands out lists)")
    header = [*WAYS, "pages overhead", "records overhead", "private copy", "scan", "scan / raw", "peak MiB raw / pages"]
    print("| store | " + " | ".join(header) + " |")
    print("|---" * (len(header) + 1) + "|")
    for name, rates in rows.items():
        cells = [f"{rates[way]:,.0f}" if way in rates else "—" for way in WAYS]
        bases = [rates["raw"], *([rates["raw-matrix"]] if "raw-matrix" in rates else [])]
        over = [" / ".join(f"{base / rates[way] - 1:+.1%}" for base in bases) for way in ("pages", "records")]
        copy = (
            f"{len(records) / rates['pages'] - len(records) / rates['pages-in-place']:+.2f} s"
            if "pages-in-place" in rates
            else "—"
        )
        scanned = f"{rates['scan']:,.0f} | {rates['scan'] / rates['raw']:.3f}×" if "scan" in rates else "— | —"
        peaks = f"{rates['peak raw']:,.0f} / {rates['peak pages']:,.0f}" if "peak raw" in rates else "—"
        print(f"| {name} | " + " | ".join(cells) + f" | {over[0]} | {over[1]} | {copy} | {scanned} | {peaks} |")


if __name__ == "__main__":
    main()
