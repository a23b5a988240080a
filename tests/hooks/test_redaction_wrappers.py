"""Redaction before embedding through the LangChain and LlamaIndex wrappers and the self-embedding helper.

The inner models record every text they are given and return deterministic bag-of-words vectors, so
the tests see exactly what an embedding model (a hosted API, say) would have received.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from vdbguard.errors import RecordError, VdbguardError
from vdbguard.hooks import redact_then_embed
from vdbguard.pii import PiiType
from vdbguard.transforms.redaction import TextRedaction

DIM = 64
KEY = b"k" * 32
JANE = "Jane Doe of Microsoft asked for a refund; reach her at jane.doe@example.com."
BOB = "Bob Smith at Acme Corporation booked the quarterly review."
AGAIN = "Jane Doe called again about the refund."
WEATHER = "The weather in the valley stays dry until the weekend."
TOO_LONG = "word " * 200_001  # over spaCy's 1,000,000-character limit: the analyzer refuses it


def bag_of_words(text: str) -> list[float]:
    vector = np.zeros(DIM)
    for word in text.lower().split():
        vector[int.from_bytes(hashlib.sha256(word.strip(".,;").encode()).digest()[:4], "big") % DIM] += 1.0
    return (vector / max(float(np.linalg.norm(vector)), 1e-9)).tolist()


def leaked(seen: list[str]) -> list[str]:
    return [text for text in seen if "Jane" in text or "Doe" in text or "jane.doe@" in text or "Bob" in text]


@pytest.fixture(scope="module")
def redaction() -> TextRedaction:
    return TextRedaction(keep=["ORGANIZATION"])


@pytest.fixture(scope="module")
def pseudonyms() -> TextRedaction:
    return TextRedaction(mode="pseudonym", key=KEY, redact_queries=True)


# -- LangChain ----------------------------------------------------------------------------------


def recording_langchain() -> Any:
    from langchain_core.embeddings import Embeddings

    class Recording(Embeddings):
        def __init__(self) -> None:
            self.seen: list[str] = []

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            self.seen.extend(texts)
            return [bag_of_words(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            self.seen.append(text)
            return bag_of_words(text)

    return Recording()


def test_langchain_store_never_embeds_the_name(redaction: TextRedaction) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.vectorstores import InMemoryVectorStore

    from vdbguard.hooks.langchain import GuardedEmbeddings

    inner = recording_langchain()
    store = InMemoryVectorStore(embedding=GuardedEmbeddings(inner, redaction))
    store.add_texts([JANE, BOB, WEATHER])
    assert not leaked(inner.seen) and len(inner.seen) == 3
    assert "Microsoft" in inner.seen[0] and "Acme Corporation" in inner.seen[1] and inner.seen[2] == WEATHER
    assert "<PERSON>" in inner.seen[0] and "<EMAIL>" in inner.seen[0]
    (hit,) = store.similarity_search("refund from Microsoft", k=1)
    assert hit.page_content == JANE  # only the vector is redacted: the store still keeps the text it was given
    assert inner.seen[-1] == "refund from Microsoft"
    store.similarity_search("Jane Doe", k=1)
    assert inner.seen[-1] == "Jane Doe"  # queries are not redacted unless redact_queries=True


def test_langchain_pseudonyms_are_consistent_and_queries_follow(pseudonyms: TextRedaction) -> None:
    pytest.importorskip("langchain_core")
    import asyncio

    from langchain_core.vectorstores import InMemoryVectorStore

    from vdbguard.hooks.langchain import GuardedEmbeddings

    inner = recording_langchain()
    store = InMemoryVectorStore(embedding=GuardedEmbeddings(inner, pseudonyms))
    store.add_texts([JANE, WEATHER])
    store.add_texts([AGAIN])
    asyncio.run(store.aadd_texts([BOB]))
    assert not leaked(inner.seen)
    fake = pseudonyms.redactor.pseudonym(PiiType.PERSON, "Jane Doe")
    assert fake != "Jane Doe" and fake in inner.seen[0] and fake in inner.seen[2]
    hits = store.similarity_search("Jane Doe", k=2)
    assert inner.seen[-1] == fake and {h.page_content for h in hits} == {JANE, AGAIN}


def test_langchain_failing_redaction_embeds_nothing(redaction: TextRedaction) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.vectorstores import InMemoryVectorStore

    from vdbguard.hooks.langchain import GuardedEmbeddings

    inner = recording_langchain()
    store = InMemoryVectorStore(embedding=GuardedEmbeddings(inner, redaction))
    with pytest.raises(RecordError) as raised:
        store.add_texts([JANE, TOO_LONG, WEATHER])
    assert raised.value.record_id == "texts[1]" and raised.value.field == "text"
    assert inner.seen == [] and store.store == {}


def test_text_side_transforms_refuse_hooks_that_only_see_vectors(redaction: TextRedaction) -> None:
    pytest.importorskip("langchain_core")
    from vdbguard.detectors.presidio import PresidioDetector
    from vdbguard.hooks import Protector
    from vdbguard.hooks.langchain import GuardedEmbeddings

    with pytest.raises(VdbguardError) as raised:
        Protector(redaction)
    assert "GuardedEmbeddings" in str(raised.value.hint) and "redact_then_embed" in str(raised.value.hint)
    with pytest.raises(VdbguardError, match="selective policy"):
        GuardedEmbeddings(recording_langchain(), redaction, detector=PresidioDetector())


def test_guard_on_a_client_refuses_redaction(redaction: TextRedaction) -> None:
    qdrant_client = pytest.importorskip("qdrant_client")
    from vdbguard.hooks import guard

    client = qdrant_client.QdrantClient(":memory:")
    with pytest.raises(VdbguardError) as raised:
        guard(client, redaction)
    assert "only sees vectors" in raised.value.message and "GuardedEmbedding" in str(raised.value.hint)


# -- LlamaIndex ---------------------------------------------------------------------------------


def recording_llamaindex(seen: list[str]) -> Any:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class Recording(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            seen.append(query)
            return bag_of_words(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            seen.append(text)
            return bag_of_words(text)

    return Recording(embed_batch_size=2)


def test_llamaindex_index_never_embeds_the_name(redaction: TextRedaction, pseudonyms: TextRedaction) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    from vdbguard.hooks.llamaindex import GuardedEmbedding

    seen: list[str] = []
    nodes = [TextNode(text=t, id_=f"n{i}") for i, t in enumerate([JANE, BOB, WEATHER])]
    index = VectorStoreIndex(nodes=nodes, embed_model=GuardedEmbedding(recording_llamaindex(seen), redaction))
    assert len(seen) == 3 and not leaked(seen) and "Microsoft" in seen[0] and "Acme Corporation" in seen[1]
    (hit,) = index.as_retriever(similarity_top_k=1).retrieve("refund from Microsoft")
    assert hit.node.node_id == "n0" and seen[-1] == "refund from Microsoft"

    seen.clear()
    index = VectorStoreIndex(nodes=nodes[:2], embed_model=GuardedEmbedding(recording_llamaindex(seen), pseudonyms))
    index.insert_nodes([TextNode(text="Jane Doe called again.", id_="n3")])
    assert not leaked(seen)
    fake = seen[0].split(" of Microsoft")[0]
    assert fake != "Jane Doe" and seen[2].startswith(fake)
    hits = index.as_retriever(similarity_top_k=2).retrieve("Jane Doe")
    assert seen[-1] == fake and {h.node.node_id for h in hits} == {"n0", "n3"}


def test_llamaindex_failing_redaction_embeds_nothing(redaction: TextRedaction) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    from vdbguard.hooks.llamaindex import GuardedEmbedding

    seen: list[str] = []
    nodes = [TextNode(text=t) for t in (TOO_LONG, JANE)]
    with pytest.raises(RecordError) as raised:
        VectorStoreIndex(nodes=nodes, embed_model=GuardedEmbedding(recording_llamaindex(seen), redaction))
    assert raised.value.record_id == "texts[0]" and seen == []


# -- pipelines that embed themselves ------------------------------------------------------------


def test_redact_then_embed_helper(redaction: TextRedaction) -> None:
    seen: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return np.asarray([bag_of_words(t) for t in texts])

    vectors = redact_then_embed([JANE, WEATHER], embed, redaction)
    assert len(vectors) == 2 and len(vectors[0]) == DIM and not leaked(seen) and seen[1] == WEATHER
    assert vectors[1] == pytest.approx(bag_of_words(WEATHER))
    seen.clear()
    with pytest.raises(RecordError) as raised:
        redact_then_embed([WEATHER, TOO_LONG], embed, redaction)
    assert raised.value.record_id == "texts[1]" and seen == []


def test_transforms_list_shows_redact() -> None:
    from vdbguard.cli import main

    out = CliRunner().invoke(main, ["transforms", "list"], terminal_width=200)
    assert out.exit_code == 0 and "redact" in out.output and "0.85, 0.6, 0.4" in out.output
