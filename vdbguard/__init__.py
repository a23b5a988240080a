"""vdbguard: find and stop privacy leaks in vector databases.

The public API. Each name is imported on first use, so ``import vdbguard`` stays cheap inside an
ingestion pipeline that only needs :func:`guard`.

- :func:`scan_collection`: attack every vector of a collection and return a :class:`Report`; where the
  collection is, a :class:`ScanTarget`, and how to scan it, a :class:`ScanSettings` (``ScanSettings()``: the defaults).
- :func:`guard`: wrap a Qdrant, Chroma, Pinecone or Weaviate client so every write is protected first.
- :func:`protect_collection`: copy a collection through a transform (a batch job, resumable).
- :func:`build_transform`: a write-path defense by name, ``"gaussian"``, or a chain, ``"redact+gaussian"``.
- :func:`redact_then_embed`: embed texts with your own model, which only ever sees them redacted.
- :class:`Embedder`: the embedding model that produced the vectors, loaded offline.
- :class:`VdbguardError`: every error vdbguard raises on purpose; ``hint`` says what to do next.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vdbguard.embedders import Embedder
    from vdbguard.errors import VdbguardError
    from vdbguard.hooks import guard, redact_then_embed
    from vdbguard.protect import protect_collection
    from vdbguard.reports.schema import Report
    from vdbguard.scan import ScanSettings, ScanTarget, scan_collection
    from vdbguard.transforms.chain import build_transform

__all__ = [
    "Embedder",
    "Report",
    "ScanSettings",
    "ScanTarget",
    "VdbguardError",
    "build_transform",
    "guard",
    "protect_collection",
    "redact_then_embed",
    "scan_collection",
]

_HOMES = {
    "Embedder": "vdbguard.embedders",
    "Report": "vdbguard.reports.schema",
    "ScanSettings": "vdbguard.scan",
    "ScanTarget": "vdbguard.scan",
    "VdbguardError": "vdbguard.errors",
    "build_transform": "vdbguard.transforms.chain",
    "guard": "vdbguard.hooks",
    "protect_collection": "vdbguard.protect",
    "redact_then_embed": "vdbguard.hooks",
    "scan_collection": "vdbguard.scan",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'vdbguard' has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
