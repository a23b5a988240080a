"""Raw export throughput of each store vs the vdbguard connector over the same vectors, side by side.

    python benchmarks/export.py --records 100000 --dim 384 [--stores chroma,qdrant,...]

For each store: fill it once with the same random float32 vectors (plus a small payload), then time
(a) a loop over the vendor client's own paging API, (b) ``Connector.iter_batches`` over the same data read as
a re-scan reads it (ids and vectors; a columnar page builds no record) and (c) with every ``VectorRecord``
built, as a first scan does; same page size, alternating runs, keeping the best of ``--repeats``. Prints one
table.
"""

from __future__ import annotations

import functools
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from common import bench_parser

from vdbguard.records import VectorRecord

PAGE = 1000


@dataclass
class Store:
    fill: Callable[[Path, list[VectorRecord]], Any]  # returns a context
    raw: Callable[[Any], int]  # returns number of vectors read
    connector: Callable[[Any], Any]  # returns a Connector


def _fill(connector: Any, records: list[VectorRecord], metric: str = "cosine") -> None:
    with connector:
        connector.ensure_collection(records[0].vector.size, metric)
        for start in range(0, len(records), 5000):
            connector.upsert(records[start : start + 5000])


def chroma_store() -> Store:
    import chromadb
    from vdbguard.connectors.chroma import ChromaConnector

    def fill(root: Path, records: list[VectorRecord]) -> dict:
        _fill(ChromaConnector(collection="bench", path=root / "chroma", create=True), records, "l2")
        return {"path": root / "chroma"}

    def raw(ctx: dict) -> int:
        collection = chromadb.PersistentClient(path=str(ctx["path"])).get_collection("bench")
        n, offset = 0, 0
        while True:
            page = collection.get(limit=PAGE, offset=offset, include=["embeddings", "metadatas", "documents"])
            if not page["ids"]:
                return n
            n += len(page["ids"])
            offset += len(page["ids"])

    return Store(fill, raw, lambda ctx: ChromaConnector(collection="bench", path=ctx["path"]))


def lancedb_store() -> Store:
    import lancedb
    from vdbguard.connectors.lancedb import LanceDBConnector

    def fill(root: Path, records: list[VectorRecord]) -> dict:
        _fill(LanceDBConnector(collection="bench", path=str(root / "lance")), records)
        return {"path": str(root / "lance")}

    def raw(ctx: dict) -> int:
        table = lancedb.connect(ctx["path"]).open_table("bench")
        return sum(batch.num_rows for batch in table.search().limit(None).to_batches(PAGE))

    return Store(fill, raw, lambda ctx: LanceDBConnector(collection="bench", path=ctx["path"]))


def qdrant_edge_store() -> Store:
    import qdrant_edge
    from vdbguard.connectors.qdrant_edge import QdrantEdgeConnector

    def fill(root: Path, records: list[VectorRecord]) -> dict:
        _fill(QdrantEdgeConnector(collection="bench", path=str(root / "edge")), records, "l2")
        return {"path": str(root / "edge")}

    def raw(ctx: dict) -> int:
        shard_dir = next(p for p in Path(ctx["path"]).rglob("edge_config.json")).parent
        shard = qdrant_edge.EdgeShard.load(str(shard_dir))
        n, offset = 0, None
        while True:
            request = qdrant_edge.ScrollRequest(offset=offset, limit=PAGE, with_payload=True, with_vector=True)
            points, offset = shard.scroll(request)
            n += len(points)
            if offset is None:
                shard.close() if hasattr(shard, "close") else None
                return n

    return Store(fill, raw, lambda ctx: QdrantEdgeConnector(collection="bench", path=ctx["path"]))


def milvus_store() -> Store:
    from pymilvus import MilvusClient
    from vdbguard.connectors.milvus import MilvusConnector

    def fill(root: Path, records: list[VectorRecord]) -> dict:
        _fill(MilvusConnector(collection="bench", path=str(root / "milvus.db")), records)
        return {"path": str(root / "milvus.db")}

    def raw(ctx: dict) -> int:
        client = MilvusClient(ctx["path"])
        client.load_collection("bench")
        iterator = client.query_iterator("bench", batch_size=PAGE, output_fields=["*"])
        n = 0
        while batch := iterator.next():
            n += len(batch)
        iterator.close()
        client.close()
        return n

    return Store(fill, raw, lambda ctx: MilvusConnector(collection="bench", path=ctx["path"]))


STORES: dict[str, Callable[[], Store]] = {
    "chroma": chroma_store,
    "lancedb": lancedb_store,
    "qdrant-edge": qdrant_edge_store,
    "milvus": milvus_store,
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


def read_once(store: Store, ctx: dict, way: str) -> int:
    if way == "raw":
        return store.raw(ctx)
    return connector_read(lambda: store.connector(ctx), build_records=way == "records")


def measure(name: str, store: Store, records: list[VectorRecord], repeats: int) -> tuple[str, float, float, float]:
    """Best of ``repeats`` for each way, runs alternating so load changes hit every way alike."""
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        ctx = store.fill(Path(tmp), records)
        best = {"raw": float("inf"), "pages": float("inf"), "records": float("inf")}
        for _ in range(repeats):
            for way in best:
                seconds, n = time_it(functools.partial(read_once, store, ctx, way))
                assert n == len(records), (name, way, n)
                best[way] = min(best[way], seconds)
    row = (name, *(len(records) / seconds for seconds in best.values()))
    print(f"{name}: " + ", ".join(f"{way} {rate:,.0f}/s" for way, rate in zip(best, row[1:], strict=True)), flush=True)
    return row


def main() -> None:
    parser = bench_parser(__doc__, records=100_000, dim=384, repeats=3)
    parser.add_argument("--stores", default=",".join(STORES))
    args = parser.parse_args()
    records = make_records(args.records, args.dim)
    rows = [measure(name, STORES[name](), records, args.repeats) for name in args.stores.split(",")]
    print(
        "\n| store | raw export (vectors/s) | connector pages, as a re-scan reads them (vectors/s) | overhead "
        "| connector, every record built (vectors/s) | overhead |\n|---|---|---|---|---|---|"
    )
    for name, raw, pages, built in rows:
        overheads = raw / pages - 1, raw / built - 1
        print(f"| {name} | {raw:,.0f} | {pages:,.0f} | {overheads[0]:+.1%} | {built:,.0f} | {overheads[1]:+.1%} |")


if __name__ == "__main__":
    main()
