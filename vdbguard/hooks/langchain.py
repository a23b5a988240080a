"""LangChain: wrap any ``Embeddings`` so every vector store LangChain supports receives protected vectors.

Vector stores built on ``langchain_core`` call ``embed_documents`` when adding texts and
``embed_query`` when searching; wrapping the embeddings is therefore the one hook that covers them
all (Chroma, Qdrant, Pinecone, pgvector, FAISS, ...), without touching the store. Documents go through
``transform.apply`` (fail closed: a RecordError names the text by its position), queries through
``transform.apply_query`` when the transform changes the stored space. A text-side transform
(``redact``) edits the texts before the inner embeddings see them instead; queries too when its
``redact_queries`` is set.
"""

from __future__ import annotations

from typing import Any

from vdbguard.hooks.policy import Decision, Policy
from vdbguard.hooks.protector import Protector, needs_extra, resolve_policy
from vdbguard.transforms.base import Transform

with needs_extra("vdbguard.hooks.langchain", "langchain"):
    from langchain_core.embeddings import Embeddings

__all__ = ["GuardedEmbeddings"]

_SOURCE = "the wrapped embeddings"


class GuardedEmbeddings(Embeddings):
    """``GuardedEmbeddings(OpenAIEmbeddings(), transform)`` is used wherever the inner embeddings were.

    ``policy`` / ``detector`` work as in ``vdbguard.hooks.guard``; ``last_decisions`` holds the
    decisions for the last ``embed_documents`` call (record ids are ``texts[i]``).
    """

    def __init__(
        self, embeddings: Embeddings, transform: Transform, *, policy: Policy | None = None, detector: Any = None
    ) -> None:
        self.embeddings = embeddings
        self.protector = Protector(transform, resolve_policy(policy, detector), on_text=True)

    @property
    def last_decisions(self) -> list[Decision]:
        return self.protector.last_decisions

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.protector.embed_texts(texts, self.embeddings.embed_documents, _SOURCE)

    def embed_query(self, text: str) -> list[float]:
        return self.protector.query_list(self.embeddings.embed_query(self.protector.query_text(text)))

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        model_texts = self.protector.model_texts(texts)
        return self.protector.protect_texts(texts, await self.embeddings.aembed_documents(model_texts), _SOURCE)

    async def aembed_query(self, text: str) -> list[float]:
        return self.protector.query_list(await self.embeddings.aembed_query(self.protector.query_text(text)))
