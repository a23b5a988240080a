"""Weaviate: the official v4 client against a protocol-level double (gRPC + REST, tests/doubles/weaviate_server.py).

No Weaviate server can run here (``connect_to_embedded()`` downloads a binary), so the double serves
the same gRPC services (built on the client's own generated servicer classes) and REST endpoints the
client uses. It checks the API key on both, counts every state-changing request (the write marker) and
can answer the next requests with HTTP 503 / gRPC UNAVAILABLE.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from tests.contract.harness import Backend
from tests.doubles.weaviate_server import WeaviateDouble
from tests.helpers import free_port

_API_KEY = "wv-contract-key-5f1c2a"


class WeaviateDoubleBackend(Backend):
    id = "weaviate-double"
    connector_name = "weaviate"
    named_vectors = True
    namespaces = True  # multi-tenancy: one tenant per namespace
    credentials = True
    transient_errors = True
    exact_float32 = True
    metric = "cosine"

    def start(self) -> None:
        self.double = WeaviateDouble(api_key=_API_KEY)
        self.double.start()

    def stop(self) -> None:
        self.double.stop()

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {
            "collection": collection,
            "url": self.double.url,
            "grpc_port": self.double.grpc_port,
            "api_key": _API_KEY,
        }

    def write_marker(self) -> Any:
        return self.double.writes

    def unreachable_kwargs(self, collection: str) -> dict[str, Any]:
        return {"url": f"http://127.0.0.1:{free_port()}", "grpc_port": free_port()}

    def bad_credentials_kwargs(self, collection: str) -> dict[str, Any]:
        return {"api_key": "wrong-key-0123456789"}

    @contextlib.contextmanager
    def failing(self, times: int) -> Iterator[None]:
        with self.double.failing(times):
            yield
