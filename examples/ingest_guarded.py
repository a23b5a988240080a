"""Ingest documents into Qdrant and Chroma with vdbguard on the write path.

Two layers, in the order docs/defenses.md, "Which defense", recommends:

1. Redact before embedding (``redact_then_embed``): names, contact details and identifiers are replaced
   by ``<PERSON>``, ``<EMAIL>``, ... before the model sees the text, so no inversion attack can read
   them back from the vector. This is the defense that measured best.
2. A guarded client (``guard``): every vector the client writes gets Gaussian noise first, for what the
   detector missed. The guard is also the fail-closed gate: a vector it cannot protect makes the whole
   write call raise before anything reaches the store.

Each store keeps the *redacted* text next to the vector: a store that keeps the raw text still holds
the name, whatever was done to the vector.

Run it (pip install 'vdbguard[qdrant,chroma]'):

    python examples/ingest_guarded.py                        # built-in sample lines into examples/data/
    python examples/ingest_guarded.py --input notes.txt --qdrant-path ./qdrant-data --chroma-path ./chroma-data

Re-running with the same input replaces the same records (ids come from the input name and line number).
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path

import numpy as np

from vdbguard import Embedder, VdbguardError, build_transform, guard, redact_then_embed
from vdbguard.transforms.redaction import TextRedaction

HERE = Path(__file__).resolve().parent
COLLECTION = "notes"  # the collection examples/vdbguard.toml scans
NOISE = 0.01  # Gaussian λ per coordinate (docs/python-api.md's example setting); measure yours with `vdbguard frontier`

SAMPLES = [
    "Jane Doe asked for a refund on order 4471; reach her at jane.doe@example.com.",
    "Patient Robert Miller, born March 3, 1961, was prescribed metformin for type 2 diabetes.",
    "Please wire the deposit to account DE89 3704 0044 0532 0130 00 before Friday.",
    "The quarterly review with Acme Corporation moved to the second floor meeting room.",
    "Router firmware 2.4.1 fixes the DHCP lease renewal bug on the guest network.",
]


def read_documents(path: Path | None) -> tuple[str, list[str]]:
    """(source name, documents): one document per non-empty line of ``path``, else the samples."""
    if path is None:
        return "samples", list(SAMPLES)
    lines = path.read_text(encoding="utf-8").splitlines()
    return path.name, [line.strip() for line in lines if line.strip()]


def embed_redacted(documents: list[str], embedder: Embedder) -> tuple[list[str], np.ndarray]:
    """(redacted texts, their embeddings): the model only ever sees the redacted texts.

    Fails closed: a text the redactor cannot handle raises a RecordError naming ``texts[i]`` and
    nothing is embedded (so nothing is written).
    """
    # keep=["ORGANIZATION"]: company names are not personal data and make search work; people,
    # contacts, ids, birth dates and medical terms go. Strength 0.4 redacts everything the scanner flags.
    redaction = TextRedaction(strength=0.4, keep=["ORGANIZATION"])
    seen: list[str] = []

    def encode(texts: list[str]) -> np.ndarray:
        seen.extend(texts)  # exactly what the model received: the text the stores may keep
        return embedder.encode(texts)

    vectors = redact_then_embed(documents, encode, redaction)
    return seen, np.asarray(vectors, dtype=np.float32)


def record_ids(source: str, count: int) -> list[str]:
    """Stable ids (UUIDs, which Qdrant requires), so a re-run replaces rather than duplicates records."""
    return [str(uuid.uuid5(uuid.NAMESPACE_URL, f"vdbguard-example:{source}#{i}")) for i in range(count)]


def noise():
    # seed=None (the default) in production: two writers built from one seed would add the same noise
    # to different records, and shared noise cancels in differences.
    return build_transform("gaussian", NOISE)


def write_qdrant(path: Path, ids: list[str], texts: list[str], vectors: np.ndarray) -> int:
    from qdrant_client import QdrantClient, models

    # guard() returns an object used exactly like the client; upsert/upload_points/... are protected.
    client = guard(QdrantClient(path=str(path)), noise())
    try:
        if not client.collection_exists(COLLECTION):
            client.create_collection(
                COLLECTION,
                vectors_config=models.VectorParams(size=vectors.shape[1], distance=models.Distance.COSINE),
            )
        points = [
            models.PointStruct(id=pid, vector=vector.tolist(), payload={"text": text})
            for pid, text, vector in zip(ids, texts, vectors, strict=True)
        ]
        # Fail closed: if any point cannot be protected (NaN, wrong type, the transform raises), this
        # raises a RecordError naming the point and none of the points is written.
        client.upsert(collection_name=COLLECTION, points=points, wait=True)
        return client.count(COLLECTION, exact=True).count
    finally:
        client.close()


def write_chroma(path: Path, ids: list[str], texts: list[str], vectors: np.ndarray) -> int:
    import chromadb

    # The guarded client hands out guarded collections. embedding_function=None: the guard refuses
    # documents without embeddings, because Chroma would embed them itself, unprotected.
    client = guard(chromadb.PersistentClient(path=str(path)), noise())
    collection = client.get_or_create_collection(
        COLLECTION, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    # Fail closed, as for Qdrant: one bad vector and nothing of this call is written.
    collection.upsert(ids=ids, embeddings=vectors, documents=texts)
    return collection.count()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qdrant-path", type=Path, default=HERE / "data" / "qdrant", help="embedded Qdrant folder")
    parser.add_argument("--chroma-path", type=Path, default=HERE / "data" / "chroma", help="embedded Chroma folder")
    parser.add_argument("--input", type=Path, help="one document per line (default: built-in samples)")
    args = parser.parse_args(argv)

    source, documents = read_documents(args.input)
    if not documents:
        parser.error(f"{args.input} holds no documents")
    try:
        texts, vectors = embed_redacted(documents, Embedder())
        ids = record_ids(source, len(documents))
        in_qdrant = write_qdrant(args.qdrant_path, ids, texts, vectors)
        in_chroma = write_chroma(args.chroma_path, ids, texts, vectors)
    except VdbguardError as exc:
        # Nothing of the failing call was written. (If Chroma fails after Qdrant succeeded, Qdrant
        # holds the protected batch; re-running replaces it, since the ids are stable.)
        print(f"error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else ""), file=sys.stderr)
        return 2
    print(f"wrote {len(documents)} documents (redacted, then noised by the guard) to collection {COLLECTION!r}")
    print(f"  Qdrant {args.qdrant_path}: {in_qdrant} records")
    print(f"  Chroma {args.chroma_path}: {in_chroma} records")
    for original, stored in zip(documents, texts, strict=True):
        if original != stored:
            print(f"  stored as: {stored}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
