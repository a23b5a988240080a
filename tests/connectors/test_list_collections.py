"""Connector.list_collections beyond the contract suite: a connector that cannot enumerate its store says so."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from vdbguard.connectors.base import CollectionInfo, Connector

from vdbguard.errors import VdbguardError
from vdbguard.records import Batch, VectorRecord


class Opaque(Connector):
    """A plugin connector written before listing existed: it overrides nothing to do with it."""

    name = "opaque"
    extra = ""

    def __init__(self, **settings: Any) -> None:
        raise AssertionError("listing must fail before it connects")

    def describe(self) -> CollectionInfo:
        raise NotImplementedError

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        raise NotImplementedError

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        raise NotImplementedError


def test_a_connector_that_cannot_list_its_store_says_so_before_connecting() -> None:
    with pytest.raises(VdbguardError) as error:
        Opaque.list_collections(url="http://127.0.0.1:1")
    assert error.value.message == "the opaque connector cannot list a store's collections"
    assert error.value.hint is not None and "--collection a,b" in error.value.hint
