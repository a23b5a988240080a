"""A LangChain pipeline whose embedding model never sees a name.

``GuardedEmbeddings`` wraps any LangChain ``Embeddings``: every document is redacted (``Jane Doe`` ->
``<PERSON>``) before the inner model embeds it, so any vector store built on it, here LangChain's
``InMemoryVectorStore``, receives vectors with no name in them. The store is unchanged.

The inner model below is the packaged all-MiniLM-L6-v2 behind a five-line adapter; in your pipeline it
would be ``OpenAIEmbeddings()``, ``HuggingFaceEmbeddings(...)`` or any other ``Embeddings``.

Run it (pip install 'vdbguard[langchain]'):

    python examples/langchain_pipeline.py
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from vdbguard import Embedder
from vdbguard.hooks.langchain import GuardedEmbeddings
from vdbguard.transforms.redaction import TextRedaction

DOCUMENTS = [
    "Jane Doe of Microsoft asked for a refund; reach her at jane.doe@example.com.",
    "Bob Smith at Acme Corporation booked the quarterly review for Thursday.",
    "The staging cluster runs out of disk every Monday after the log rotation.",
]
QUERY = "Which customer wants a refund?"


class MiniLMEmbeddings(Embeddings):
    """The packaged MiniLM as a LangChain ``Embeddings``; ``seen`` records every text it was given,
    so the example can show what a hosted embedding API would have received."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder or Embedder()
        self.seen: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return self.embedder.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        self.seen.append(text)
        return self.embedder.encode([text])[0].tolist()


def build_pipeline(embedder: Embedder | None = None) -> tuple[InMemoryVectorStore, MiniLMEmbeddings]:
    """(the vector store, the inner model): documents added through the guarded embeddings."""
    inner = MiniLMEmbeddings(embedder)
    # People, contact details and ids are redacted; organisations stay, so "Microsoft" remains searchable.
    # Queries are not redacted (redact_queries=False, the default): a search for a topic still works.
    redaction = TextRedaction(strength=0.4, keep=["ORGANIZATION"])
    store = InMemoryVectorStore(embedding=GuardedEmbeddings(inner, redaction))
    # Fail closed: if any text cannot be redacted, add_texts raises a RecordError naming texts[i]
    # and nothing is embedded or stored.
    store.add_texts(DOCUMENTS)
    return store, inner


def main(embedder: Embedder | None = None) -> MiniLMEmbeddings:
    store, inner = build_pipeline(embedder)
    print("What the embedding model received:")
    for text in inner.seen:
        print(f"  {text}")
    (hit,) = store.similarity_search(QUERY, k=1)
    print(f"\nTop hit for {QUERY!r}:\n  {hit.page_content}")
    # Only the vector is protected: InMemoryVectorStore keeps the page_content it was given, name included.
    # To keep no name in the store either, add redaction.transform_texts(texts) instead of the raw texts.
    return inner


if __name__ == "__main__":
    main()
