"""The Weaviate connector's own writes through the real weaviate-client against the protocol double."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from tests.connectors.doubles.weaviate_server import WeaviateDouble
from vdbguard.errors import PartialWriteError
from vdbguard.records import VectorRecord


def test_a_write_that_fails_part_way_says_which_ids_landed() -> None:
    """1,001 records go in two gRPC batches; the server rejects the last object (a vector of another length):
    the error lists the 1,000 of the first batch, which are exactly what the store holds."""
    pytest.importorskip("weaviate")
    from vdbguard.connectors.weaviate import WeaviateConnector

    rng = np.random.default_rng(3)
    batch = [VectorRecord(str(uuid.UUID(int=i + 1)), rng.standard_normal(4).astype(np.float32)) for i in range(1000)]
    batch.append(VectorRecord(str(uuid.UUID(int=5000)), rng.standard_normal(5).astype(np.float32)))
    with WeaviateDouble() as double:
        options = {"collection": "Notes", "url": double.url, "grpc_port": double.grpc_port}
        with WeaviateConnector(**options) as connector:
            connector.ensure_collection(4, "cosine")
            with pytest.raises(PartialWriteError) as failed:
                connector.upsert(batch)
            landed = {r.id for b in connector.iter_batches(batch_size=500) for r in b.records}
    assert failed.value.written == tuple(r.id for r in batch[:1000])
    assert "1000 of 1001 records were already changed" in failed.value.message and "length" in failed.value.message
    assert landed == set(failed.value.written)


def test_inactive_tenants_are_refused_for_reading_searching_and_deleting_unless_left_out() -> None:
    """Activating a tenant is a write: every read path refuses a selected inactive tenant, naming it, and works
    once ``tenants=`` leaves it out."""
    pytest.importorskip("weaviate")
    from vdbguard.connectors.weaviate import WeaviateConnector
    from weaviate.classes.tenants import TenantCreate, TenantCreateActivityStatus

    from vdbguard.errors import ConnectorError

    vector = np.ones(4, dtype=np.float32)
    records = [VectorRecord(str(uuid.UUID(int=1)), vector, namespace="a")]
    with WeaviateDouble() as double:
        options = {"collection": "Notes", "url": double.url, "grpc_port": double.grpc_port}
        with WeaviateConnector(**options, multi_tenancy=True) as connector:
            connector.ensure_collection(4, "cosine")
            connector.upsert(records)
            collection = connector._connection().collections.get("Notes")
            collection.tenants.create([TenantCreate(name="b", activity_status=TenantCreateActivityStatus.INACTIVE)])
            reads = {
                "reading": lambda c: list(c.iter_batches()),
                "searching": lambda c: c.query_vector(vector),
                "deleting from": lambda c: c.delete([records[0].id]),
            }
            for what, read in reads.items():
                with pytest.raises(ConnectorError, match=r"tenant\(s\) b .* inactive") as refused:
                    read(connector)
                assert what in refused.value.hint and "tenants=" in refused.value.hint
        with WeaviateConnector(**options, tenants="a") as connector:
            assert [r.id for b in connector.iter_batches() for r in b.records] == [records[0].id]
            assert connector.query_vector(vector) is not None
