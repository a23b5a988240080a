"""What a guard costs on the write path: one 256-vector batch upsert, guarded vs unguarded, side by side.

    python benchmarks/hooks.py [--batch 256] [--dim 384] [--repeats 60]
                               [--stores qdrant,chroma,qdrant-memory,chroma-memory,qdrant_numpy-memory]

For each embedded store (Qdrant local mode on disk ``QdrantClient(path=...)`` and in memory
``QdrantClient(":memory:")``, through ``upsert`` of ``PointStruct``s or (``qdrant_numpy``) ``upload_collection`` of
one numpy matrix; Chroma ``PersistentClient`` and ``EphemeralClient``) the same batch of random unit
vectors (plus a small payload) is upserted over and over (same ids, so the collection size is
stable) in three arms, interleaved in a rotating order within every repeat so machine load drifts
hit all arms alike:

* ``raw``: the official client's own upsert;
* ``identity``: ``guard(client, Identity())``: the hook machinery alone (validation, policy,
  conversion in and out, rebuilding the points), with a transform that costs nothing;
* ``gaussian``: ``guard(client, GaussianNoise(0.01))``: hook plus a cheap real transform.

It reports the median of each arm and the overhead of each guarded arm over ``raw`` (medians), plus
the median of the guarded pre-processing alone (the hook's work before the client is called,
timed without the store). Medians of interleaved runs, not best-of, because the overhead is a
difference of two noisy numbers.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import bench_parser

from vdbguard.hooks import guard
from vdbguard.transforms.base import Transform
from vdbguard.transforms.gaussian import GaussianNoise


class Identity(Transform):
    name = "identity"
    description = "returns its input: isolates the cost of the hook itself"
    strength_meaning = "unused"

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors, dtype=np.float32)


def qdrant_arms(root: Path | None, vectors: np.ndarray, transforms: dict[str, Transform]) -> tuple[dict, Callable, Any]:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(root / "qdrant")) if root is not None else QdrantClient(":memory:")
    dim = vectors.shape[1]
    client.create_collection("bench", vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE))
    points = [
        models.PointStruct(id=i, vector=row, payload={"text": f"note {i}", "n": i})
        for i, row in enumerate(vectors.tolist())
    ]
    arms = {"raw": lambda: client.upsert("bench", points=points, wait=True)}
    guarded = {}
    for name, transform in transforms.items():
        guarded[name] = guard(client, transform)
        arms[name] = lambda g=guarded[name]: g.upsert("bench", points=points, wait=True)
    prep = lambda: guarded["identity"]._points(points)  # noqa: E731
    return arms, prep, client


def qdrant_numpy_arms(
    root: Path | None, vectors: np.ndarray, transforms: dict[str, Transform]
) -> tuple[dict, Callable, Any]:
    """Qdrant's ``upload_collection`` with the batch as one numpy matrix: the guard hands numpy back."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(root / "qdrant")) if root is not None else QdrantClient(":memory:")
    client.create_collection(
        "bench", vectors_config=models.VectorParams(size=vectors.shape[1], distance=models.Distance.COSINE)
    )
    ids, payload = list(range(len(vectors))), [{"text": f"note {i}", "n": i} for i in range(len(vectors))]

    def upload(target: Any) -> Callable[[], None]:
        return lambda: target.upload_collection("bench", vectors=vectors, ids=ids, payload=payload, wait=True)

    guarded = {name: guard(client, transform) for name, transform in transforms.items()}
    arms = {"raw": upload(client), **{name: upload(g) for name, g in guarded.items()}}
    prep = lambda: guarded["identity"]._upload_collection({"vectors": vectors, "ids": ids, "payload": payload})  # noqa: E731
    return arms, prep, client


def chroma_arms(root: Path | None, vectors: np.ndarray, transforms: dict[str, Transform]) -> tuple[dict, Callable, Any]:
    import chromadb

    client = chromadb.PersistentClient(path=str(root / "chroma")) if root is not None else chromadb.EphemeralClient()
    collection = client.get_or_create_collection(
        "bench", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    ids = [f"id-{i}" for i in range(len(vectors))]
    embeddings = vectors.tolist()
    documents = [f"note {i}" for i in range(len(vectors))]
    metadatas = [{"n": i} for i in range(len(vectors))]

    def upsert(col: Any) -> Callable[[], None]:
        return lambda: col.upsert(ids=ids, embeddings=embeddings, documents=documents, metadatas=metadatas)

    arms = {"raw": upsert(collection)}
    guarded = {name: guard(collection, transform) for name, transform in transforms.items()}
    arms.update({name: upsert(col) for name, col in guarded.items()})

    def prep() -> None:
        args = {"ids": ids, "embeddings": embeddings, "documents": documents, "metadatas": metadatas}
        guarded["identity"]._write(args)

    return arms, prep, client


def measure(arms: dict[str, Callable[[], Any]], repeats: int, warmup: int) -> dict[str, list[float]]:
    names = list(arms)
    for _ in range(warmup):
        for name in names:
            arms[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]  # rotate who goes first
        for name in order:
            start = time.perf_counter()
            arms[name]()
            times[name].append(time.perf_counter() - start)
    return times


def time_prep(prep: Callable[[], Any], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        prep()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = bench_parser(__doc__, batch=256, dim=384, repeats=60, warmup=5)
    parser.add_argument("--stores", default="qdrant,chroma,qdrant-memory,chroma-memory")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.batch, args.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    transforms = {"identity": Identity(1.0), "gaussian": GaussianNoise(0.01, seed=0)}
    print(
        f"batch={args.batch} dim={args.dim} repeats={args.repeats} (medians, ms); "
        "gaussian = vdbguard.transforms.gaussian.GaussianNoise(0.01)"
    )
    print(f"{'store':14} {'raw':>9} {'identity':>9} {'gaussian':>9} {'ovh id':>8} {'ovh gauss':>9} {'hook prep':>10}")
    builders = {"qdrant": qdrant_arms, "chroma": chroma_arms, "qdrant_numpy": qdrant_numpy_arms}
    for store in args.stores.split(","):
        engine, _, where = store.partition("-")
        with tempfile.TemporaryDirectory(prefix=f"vdbguard-bench-{engine}-") as tmp:
            root = None if where == "memory" else Path(tmp)
            arms, prep, client = builders[engine](root, vectors, transforms)
            try:
                times = measure(arms, args.repeats, args.warmup)
                prep_ms = time_prep(prep, args.repeats) * 1e3
            finally:
                if hasattr(client, "close"):
                    client.close()
        med = {name: statistics.median(values) * 1e3 for name, values in times.items()}
        ovh = {name: 100.0 * (med[name] - med["raw"]) / med["raw"] for name in ("identity", "gaussian")}
        print(
            f"{store:14} {med['raw']:9.2f} {med['identity']:9.2f} {med['gaussian']:9.2f} "
            f"{ovh['identity']:+7.1f}% {ovh['gaussian']:+8.1f}% {prep_ms:10.2f}"
        )


if __name__ == "__main__":
    main()
