"""Put a transform into an application's own vector-database client, so every write is protected.

``guard(client, transform)`` returns an object used exactly like the official client: attribute
access is delegated to it, and the calls that write vectors run them through ``transform.apply``
first (queries through ``transform.apply_query`` when the transform changes the stored space, e.g.
keyed rotation). Protecting vectors at write time is the defense embedding-inversion work calls for:
stored embeddings alone give back much of their text (Morris et al., "Text Embeddings Reveal (Almost)
As Much As Text", EMNLP 2023), so they must be perturbed before they reach the store.

Fail closed: every record of a call is checked, decided on and transformed before anything is sent;
if any record cannot be protected (the transform, policy or detector raises, the transform returns
NaN, a vector is not a list of numbers, a vector would be computed by the store or its embedding
function instead of given) the call raises a ``RecordError`` naming the record and field and nothing
of that call reaches the store. Write paths the guard cannot protect (server-side embedding, bulk
imports, async clients) are refused rather than passed through. Sparse vectors are not transformed.
Build noise transforms with ``seed=None`` for production: two processes (or guards) created from one
seed add the same noise sequence to different records, and shared noise cancels in differences.

Covered: ``qdrant_client.QdrantClient``; Chroma clients and collections; Pinecone clients and
indexes; Weaviate v4 clients and collections (``data``, ``batch``, ``query``/``generate``/``aggregate``).
"""

from __future__ import annotations

import importlib
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.hooks.policy import Policy
from vdbguard.hooks.protector import Item, Protector, changes_space, resolve_policy
from vdbguard.hooks.proxy import GuardedProxy
from vdbguard.transforms.base import Transform
from vdbguard.transforms.fitting import ensure_fitted

__all__ = ["Item", "Protector", "changes_space", "guard", "resolve_policy"]

# Which wrapper guards a client: (top-level package of its class, attributes it must have,
# "module:class" under vdbguard.hooks), first match wins. A wrapper's module, and through it the
# engine's client library, is imported only when a client of that engine is guarded.
_DISPATCH: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("qdrant_client", ("upsert", "query_points"), "qdrant:GuardedQdrant"),
    ("chromadb", ("get_or_create_collection",), "chroma:GuardedChromaClient"),
    ("chromadb", ("add", "upsert", "query"), "chroma:GuardedChromaCollection"),
    ("pinecone", ("Index",), "pinecone:GuardedPinecone"),
    ("pinecone", ("upsert", "query"), "pinecone:GuardedPineconeIndex"),
    ("weaviate", ("collections",), "weaviate:GuardedWeaviateClient"),
    ("weaviate", ("data", "batch", "query"), "weaviate:GuardedWeaviateCollection"),
)


def _wrapper_for(client: Any) -> type[GuardedProxy]:
    cls = type(client)
    package, name = cls.__module__.split(".")[0], cls.__name__
    if name.startswith("Async") or "asyncio" in cls.__module__:
        raise VdbguardError(f"async clients ({name}) are not supported by guard yet", "guard the sync client")
    for owner, attrs, wrapper in _DISPATCH:
        if package == owner and all(hasattr(client, a) for a in attrs):
            module, _, class_name = wrapper.partition(":")
            return getattr(importlib.import_module(f"vdbguard.hooks.{module}"), class_name)
    raise VdbguardError(
        f"guard does not know how to protect a {cls.__module__}.{name}",
        "supported: QdrantClient, Chroma clients/collections, Pinecone clients/indexes, Weaviate v4 "
        "clients/collections; for LangChain or LlamaIndex wrap the embeddings (vdbguard.hooks.langchain/llamaindex)",
    )


def guard(
    client: Any,
    transform: Transform,
    *,
    policy: Policy | None = None,
    detector: Any = None,
    vector_names: Collection[str] | None = None,
    fit_path: str | Path | None = None,
    fit_sample: np.ndarray | None = None,
) -> Any:
    """Wrap ``client`` so that every vector it writes goes through ``transform`` first.

    ``policy`` defaults to ``ProtectAll()``; ``detector=`` is short for ``policy=ProtectFlagged(detector)``.
    ``vector_names`` limits protection to those named vectors (default: every dense vector). A transform
    that ``needs_fit`` and is not fitted yet loads the fit saved at ``fit_path``, else is fitted on
    ``fit_sample`` (sample vectors, shape (n, dim)) and the fit saved to ``fit_path``, so every process
    writing or querying the store applies the same map; with neither, guard raises before any write.
    The returned object delegates everything else to ``client``; its ``last_decisions`` are the
    policy's decisions for the last write call.
    """
    if isinstance(client, GuardedProxy):
        raise VdbguardError("this client is already guarded", "guard the original client once")
    wrapper = _wrapper_for(client)
    protector = Protector(transform, resolve_policy(policy, detector), vector_names=vector_names)
    ensure_fitted(transform, fit_path, fit_sample)
    return wrapper(client, protector)
