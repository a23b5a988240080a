"""LlamaIndex: wrap any ``BaseEmbedding`` so every vector store LlamaIndex supports stores protected vectors.

LlamaIndex embeds nodes with ``get_text_embedding_batch`` (which calls ``_get_text_embeddings``) and
queries with ``get_query_embedding``; the wrapper runs the inner model, then ``transform.apply`` on
node vectors (fail closed: a RecordError names the text by its position in the batch) and
``transform.apply_query`` on query vectors when the transform changes the stored space. A text-side
transform (``redact``) edits the texts before the inner model sees them instead; queries too when
its ``redact_queries`` is set.
"""

from __future__ import annotations

from typing import Any

from vdbguard.hooks.policy import Decision, Policy
from vdbguard.hooks.protector import Protector, needs_extra, resolve_policy
from vdbguard.transforms.base import Transform

with needs_extra("vdbguard.hooks.llamaindex", "llamaindex"):
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr

__all__ = ["GuardedEmbedding"]

_SOURCE = "the wrapped model"


class GuardedEmbedding(BaseEmbedding):
    """``Settings.embed_model = GuardedEmbedding(HuggingFaceEmbedding(...), transform)``.

    ``policy`` / ``detector`` work as in ``vdbguard.hooks.guard``; ``last_decisions`` holds the
    decisions for the last batch of texts (record ids are ``texts[i]``).
    """

    _inner: BaseEmbedding = PrivateAttr()
    _protector: Protector = PrivateAttr()

    def __init__(
        self,
        embed_model: BaseEmbedding,
        transform: Transform,
        *,
        policy: Policy | None = None,
        detector: Any = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("model_name", f"vdbguard[{transform.name}]({embed_model.model_name})")
        kwargs.setdefault("embed_batch_size", embed_model.embed_batch_size)
        super().__init__(**kwargs)
        self._inner = embed_model
        self._protector = Protector(transform, resolve_policy(policy, detector), on_text=True)

    @classmethod
    def class_name(cls) -> str:
        return "VdbguardGuardedEmbedding"

    @property
    def last_decisions(self) -> list[Decision]:
        return self._protector.last_decisions

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._protector.query_list(self._inner.get_query_embedding(self._protector.query_text(query)))

    async def _aget_query_embedding(self, query: str) -> list[float]:
        query = self._protector.query_text(query)
        return self._protector.query_list(await self._inner.aget_query_embedding(query))

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._protector.embed_texts(texts, self._inner.get_text_embedding_batch, _SOURCE)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        model_texts = self._protector.model_texts(texts)
        return self._protector.protect_texts(texts, await self._inner.aget_text_embedding_batch(model_texts), _SOURCE)
