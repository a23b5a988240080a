"""Weaviate: the official v4 client against a protocol-level double (gRPC + REST, doubles/weaviate_server.py).

No Weaviate server can run here (``connect_to_embedded()`` downloads a binary), so the double serves
the same gRPC services (built on the client's own generated servicer classes) and REST endpoints the
client uses. It checks the API key on both, counts every state-changing request (the write marker) and
can answer the next requests with HTTP 503 / gRPC UNAVAILABLE.
"""

from __future__ import annotations

from typing import Any

from tests.connectors.contract.harness import DoubleBackend
from tests.connectors.doubles.weaviate_server import WeaviateDouble
from tests.helpers import free_port

_API_KEY = "wv-contract-key-5f1c2a"


class WeaviateDoubleBackend(DoubleBackend):
    id = "weaviate-double"
    connector_name = "weaviate"
    named_vectors = True
    namespaces = True  # multi-tenancy: one tenant per namespace
    exact_float32 = True
    metric = "cosine"
    api_key = _API_KEY
    bad_api_key = "wrong-key-0123456789"

    def make_double(self) -> Any:
        return WeaviateDouble(api_key=_API_KEY)

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {**super().connector_kwargs(collection), "grpc_port": self.double.grpc_port}

    def listed_name(self, collection: str) -> str:
        """Weaviate capitalises the first letter of a class name, as the double does."""
        return collection[:1].upper() + collection[1:]

    def unreachable_kwargs(self, collection: str) -> dict[str, Any]:
        return {**super().unreachable_kwargs(collection), "grpc_port": free_port()}
