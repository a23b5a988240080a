"""Pinecone: the official SDK against a protocol-level double of Pinecone's REST API.

No Pinecone can run here (Pinecone Local is a Docker image), so ``tests/connectors/doubles/pinecone_rest.py``
serves the control plane and one data-plane host per index on 127.0.0.1; the connector reaches
it exactly as it reaches Pinecone: ``url`` = control plane, index host from ``describe_index``.
"""

from __future__ import annotations

from typing import Any

from tests.connectors.contract.harness import DoubleBackend
from tests.connectors.doubles.pinecone_rest import PineconeDouble

API_KEY = "pcsk-contract-double-key"


class PineconeRestDouble(DoubleBackend):
    id = "pinecone-double"
    connector_name = "pinecone"
    namespaces = True
    exact_float32 = True  # the double keeps float32, as Pinecone does
    metric = "cosine"
    api_key = API_KEY
    bad_api_key = "pcsk-wrong-secret-key-0123456789"

    def make_double(self) -> Any:
        return PineconeDouble(api_key=API_KEY)
