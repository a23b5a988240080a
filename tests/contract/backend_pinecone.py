"""Pinecone: the official SDK against a protocol-level double of Pinecone's REST API.

No Pinecone can run here (Pinecone Local is a Docker image), so ``tests/doubles/pinecone_rest.py``
serves the control plane and one data-plane host per index on 127.0.0.1; the connector reaches
it exactly as it reaches Pinecone: ``url`` = control plane, index host from ``describe_index``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.contract.harness import Backend
from tests.doubles.pinecone_rest import PineconeDouble
from tests.helpers import free_port

API_KEY = "pcsk-contract-double-key"


class PineconeRestDouble(Backend):
    id = "pinecone-double"
    connector_name = "pinecone"
    namespaces = True
    credentials = True
    transient_errors = True
    exact_float32 = True  # the double keeps float32, as Pinecone does
    metric = "cosine"

    def start(self) -> None:
        self.double = PineconeDouble(api_key=API_KEY).start()

    def stop(self) -> None:
        self.double.stop()

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "url": self.double.url, "api_key": API_KEY}

    def write_marker(self) -> Any:
        return self.double.writes  # write requests the double received (upserts, deletes, index creation)

    def unreachable_kwargs(self, collection: str) -> dict[str, Any]:
        return {"url": f"http://127.0.0.1:{free_port()}"}

    def bad_credentials_kwargs(self, collection: str) -> dict[str, Any]:
        return {"api_key": "pcsk-wrong-secret-key-0123456789"}

    @contextmanager
    def failing(self, times: int) -> Iterator[None]:
        self.double.fail_next(times)
        try:
            yield
        finally:
            self.double.fail_next(0)
