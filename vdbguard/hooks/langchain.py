"""LangChain: wrap any ``Embeddings`` so every vector store LangChain supports receives protected vectors.

Vector stores built on ``langchain_core`` call ``embed_documents`` when adding texts and
``embed_query`` when searching; wrapping the embeddings is therefore the one hook that covers them
all (Chroma, Qdrant, Pinecone, pgvector, FAISS, ...), without touching the store. Documents go through
``transform.apply`` (fail closed: a RecordError names the text by its position), queries through
``transform.apply_query`` when the transform changes the stored space.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vdbguard.errors import MissingExtraError, VdbguardError
from vdbguard.hooks.guard import Item, Protector, resolve_policy
from vdbguard.hooks.policy import Decision, Policy
from vdbguard.transforms.base import Transform

try:
    from langchain_core.embeddings import Embeddings
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("vdbguard.hooks.langchain", "langchain") from exc

__all__ = ["GuardedEmbeddings"]


class GuardedEmbeddings(Embeddings):
    """``GuardedEmbeddings(OpenAIEmbeddings(), transform)`` is used wherever the inner embeddings were.

    ``policy`` / ``detector`` work as in ``vdbguard.hooks.guard``; ``last_decisions`` holds the
    decisions for the last ``embed_documents`` call (record ids are ``texts[i]``).
    """

    def __init__(
        self, embeddings: Embeddings, transform: Transform, *, policy: Policy | None = None, detector: Any = None
    ) -> None:
        self.embeddings = embeddings
        self.protector = Protector(transform, resolve_policy(policy, detector))

    @property
    def last_decisions(self) -> list[Decision]:
        return self.protector.last_decisions

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._protect(texts, self.embeddings.embed_documents(texts))

    def embed_query(self, text: str) -> list[float]:
        return self._query(self.embeddings.embed_query(text))

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._protect(texts, await self.embeddings.aembed_documents(texts))

    async def aembed_query(self, text: str) -> list[float]:
        return self._query(await self.embeddings.aembed_query(text))

    def _protect(self, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> list[list[float]]:
        if len(vectors) != len(texts):
            raise VdbguardError(f"the wrapped embeddings returned {len(vectors)} vectors for {len(texts)} texts")
        items = [
            Item(f"texts[{i}]", {"embedding": v}, document=t)
            for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ]
        out = self.protector.protect(items, as_lists=True)
        return [list(map(float, v)) if o is None else o["embedding"] for v, o in zip(vectors, out, strict=True)]

    def _query(self, vector: Sequence[float]) -> list[float]:
        if not self.protector.changes_space:
            return list(map(float, vector))
        return self.protector.query(vector).tolist()
