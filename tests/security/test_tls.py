"""TLS verification is on by default for every server connector; a private CA is trusted only when given;
turning verification off takes an explicit flag and is logged as a warning.

Each store's own client talks TLS to a front with a certificate from a test CA: a real ``chroma run``
behind it, the Qdrant and Pinecone REST doubles and the Weaviate REST and gRPC double (no real server of theirs
can run here), Milvus Lite's own gRPC server and a real PostgreSQL.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from vdbguard.connectors import load_connector

from tests.helpers import ChromaServer, chroma_executable
from tests.tls import Certificates, TlsFront, make_certificates
from vdbguard.cli import main
from vdbguard.errors import ConnectorError, VdbguardError
from vdbguard.records import VectorRecord

DIM = 8


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def chroma_tls(tmp_path_factory: pytest.TempPathFactory, certificates: Certificates) -> Iterator[str]:
    """``https://127.0.0.1:PORT`` of a real Chroma server holding collection ``notes`` (3 records)."""
    executable = chroma_executable()
    if executable is None:
        pytest.skip("the `chroma` executable is not installed (pip install 'vdbguard[chroma]')")
    folder = tmp_path_factory.mktemp("chroma-tls")
    server = ChromaServer(executable, folder)
    server.start()
    import chromadb

    plain = chromadb.HttpClient(host="127.0.0.1", port=server.port)
    collection = plain.create_collection("notes", embedding_function=None)
    rng = np.random.default_rng(0)
    collection.add(ids=["a", "b", "c"], embeddings=rng.standard_normal((3, DIM)).tolist(), documents=["x", "y", "z"])
    front = TlsFront(certificates, server.port)
    yield f"https://127.0.0.1:{front.port}"
    front.close()
    server.stop()


def _read_ids(connector: Any) -> list[str]:
    with connector:
        return sorted(r.id for batch in connector.iter_batches(batch_size=2) for r in batch.records)


def test_chroma_refuses_a_certificate_it_cannot_verify_and_trusts_the_given_ca(
    chroma_tls: str, certificates: Certificates, caplog: pytest.LogCaptureFixture
) -> None:
    chroma = load_connector("chroma")
    with pytest.raises(ConnectorError, match="--ca-cert") as refused:
        _read_ids(chroma(collection="notes", url=chroma_tls))
    assert "certificate" in str(refused.value).lower()
    with pytest.raises(ConnectorError):
        _read_ids(chroma(collection="notes", url=chroma_tls, tls_verify=str(certificates.other_ca)))
    assert _read_ids(chroma(collection="notes", url=chroma_tls, tls_verify=str(certificates.ca))) == ["a", "b", "c"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "TLS" in r.getMessage()]
    with caplog.at_level(logging.WARNING):
        assert _read_ids(chroma(collection="notes", url=chroma_tls, tls_verify=False)) == ["a", "b", "c"]
    assert any("verification is OFF" in r.getMessage() for r in caplog.records)


def test_cli_scan_over_tls_needs_the_ca_or_an_explicit_insecure_flag(
    chroma_tls: str, certificates: Certificates, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = ["scan", "--connector", "chroma", "--url", chroma_tls, "--collection", "notes", "--attack", "pii-probe"]
    base += ["--profile", "small", "--embedder", "store", "--format", "json"]
    refused = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "refused")])
    assert refused.exit_code == 2 and "--ca-cert" in refused.output, refused.output
    flags = ["--ca-cert", str(certificates.ca), "--insecure"]
    both = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "b"), *flags])
    assert both.exit_code == 2 and "not both" in both.output
    audit = ["audit", "--connector", "chroma", "--url", chroma_tls, "--collection", "notes"]
    # The server takes no credentials, so the audit reads its vectors and reports that (exit 1): proof the
    # TLS connection itself was made and verified.
    trusted = CliRunner().invoke(main, [*audit, "--ca-cert", str(certificates.ca)])
    assert trusted.exit_code == 1 and "access" in trusted.output, trusted.output
    assert "verification is OFF" not in caplog.text
    insecure = CliRunner().invoke(main, [*audit, "--insecure"])
    assert insecure.exit_code == 1 and "verification is OFF" in caplog.text, insecure.output
    embedded = ["scan", "--connector", "chroma", "--path", str(tmp_path), "--collection", "notes", "--insecure"]
    assert "for a server" in CliRunner().invoke(main, embedded).output


def test_a_ca_option_that_is_not_a_pem_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(VdbguardError, match="not a readable PEM file"):
        load_connector("chroma")(collection="notes", url="https://127.0.0.1:1", tls_verify=str(bad))


# -- the REST doubles: Qdrant and Pinecone, through the vendors' own clients ---------------------------------


def _qdrant(certificates: Certificates) -> Iterator[tuple[Callable[..., Any], TlsFront]]:
    pytest.importorskip("qdrant_client")
    from tests.connectors.doubles.qdrant_rest import QdrantRestDouble

    double = QdrantRestDouble()
    url = double.start()
    front = TlsFront(certificates, int(url.rsplit(":", 1)[1]))
    connector = load_connector("qdrant")

    def make(**tls: Any) -> Any:
        return connector(collection="notes", url=f"https://127.0.0.1:{front.port}", **tls)

    yield make, front
    front.close()
    double.stop()


@pytest.fixture
def qdrant_tls(certificates: Certificates) -> Iterator[tuple[Callable[..., Any], TlsFront]]:
    yield from _qdrant(certificates)


def test_qdrant_verifies_the_server_certificate(qdrant_tls, certificates: Certificates) -> None:
    make, front = qdrant_tls
    with make(tls_verify=str(certificates.ca)) as trusted:
        trusted.ensure_collection(DIM, "l2")
        trusted.upsert([VectorRecord(str(i), np.full(DIM, i + 1, np.float32)) for i in range(3)])
    failures = front.handshake_failures
    with pytest.raises(ConnectorError, match="--ca-cert"):
        _read_ids(make())
    assert front.wait_for_handshake_failures(above=failures), "the client must have refused the certificate"
    with pytest.raises(ConnectorError):
        _read_ids(make(tls_verify=str(certificates.other_ca)))
    assert _read_ids(make(tls_verify=False)) == ["0", "1", "2"]


def test_pinecone_verifies_both_the_control_plane_and_the_index_host(certificates: Certificates) -> None:
    pytest.importorskip("pinecone")
    from tests.connectors.doubles.pinecone_rest import PineconeDouble

    pinecone = load_connector("pinecone")
    with PineconeDouble(api_key="pcsk-tls") as double:
        with pinecone(collection="notes", url=double.url, api_key="pcsk-tls") as plain:
            plain.ensure_collection(DIM, "cosine")
            plain.upsert([VectorRecord(str(i), np.full(DIM, i + 1, np.float32)) for i in range(3)])
        control = TlsFront(certificates, int(double.url.rsplit(":", 1)[1]))
        index = TlsFront(certificates, int(double.index_host("notes").rsplit(":", 1)[1]))
        urls = {
            "url": f"https://127.0.0.1:{control.port}",
            "host": f"https://127.0.0.1:{index.port}",
            "api_key": "pcsk-tls",
        }
        try:
            with pytest.raises(ConnectorError, match="--ca-cert"):
                _read_ids(pinecone(collection="notes", **urls))
            ids = _read_ids(pinecone(collection="notes", tls_verify=str(certificates.ca), **urls))
            assert ids == ["0", "1", "2"]
            with pytest.raises(ConnectorError):
                _read_ids(pinecone(collection="notes", tls_verify=str(certificates.other_ca), **urls))
        finally:
            control.close()
            index.close()


# -- PostgreSQL: a real server with ssl on --------------------------------------------------------------------


def test_pgvector_verifies_a_real_postgresql_server_certificate(
    certificates: Certificates, own_pgvector_server
) -> None:
    import os
    import shutil

    import psycopg

    server = own_pgvector_server
    data = server.dir / "data"
    for source, name in ((certificates.cert, "server.pem"), (certificates.key, "server.key")):
        shutil.copy(source, data / name)
        os.chown(data / name, data.stat().st_uid, data.stat().st_gid)
        (data / name).chmod(0o600)
    with psycopg.connect(server.url(), autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET ssl_cert_file = 'server.pem'")
        admin.execute("ALTER SYSTEM SET ssl_key_file = 'server.key'")
        admin.execute("ALTER SYSTEM SET ssl = on")
        admin.execute("SELECT pg_reload_conf()")
    pgvector = load_connector("pgvector")
    with pgvector(collection="notes", url=server.url()) as writer:
        writer.ensure_collection(DIM, "cosine")
        writer.upsert([VectorRecord(str(i), np.full(DIM, i + 1, np.float32)) for i in range(3)])
    with pgvector(collection="notes", url=server.url(), tls_verify=str(certificates.ca)) as verified:
        assert sorted(r.id for b in verified.iter_batches(batch_size=2) for r in b.records) == ["0", "1", "2"]
        used = verified._connection().execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        assert used.fetchone() == (True,)
    with pytest.raises(ConnectorError, match="--ca-cert") as refused:
        _read_ids(pgvector(collection="notes", url=server.url(), tls_verify=str(certificates.other_ca)))
    assert server.password not in str(refused.value)


def test_pgvector_verifies_a_remote_server_unless_the_url_says_otherwise(caplog: pytest.LogCaptureFixture) -> None:
    from vdbguard.connectors.pgvector import _tls_settings
    from vdbguard.connectors.support import Tls

    remote = "db.example.com"
    assert _tls_settings({}, remote, Tls(True, remote)) == {"sslmode": "verify-full", "sslrootcert": "system"}
    assert _tls_settings({}, "127.0.0.1", Tls(True, remote)) == {}  # loopback: nothing leaves the machine
    assert _tls_settings({"sslmode": "require"}, remote, Tls(True, remote)) == {}
    assert "does not verify" in caplog.text
    assert _tls_settings({}, remote, Tls(False, remote)) == {}
    assert "verification is OFF" in caplog.text


def test_weaviate_verifies_rest_and_grpc_and_trusts_only_the_given_ca(certificates: Certificates) -> None:
    """weaviate-client's REST (httpx) and gRPC channels each through a TLS front to the double."""
    pytest.importorskip("weaviate")
    import os

    from tests.connectors.doubles.weaviate_server import WeaviateDouble

    weaviate = load_connector("weaviate")
    uuids = [f"00000000-0000-0000-0000-00000000000{i}" for i in range(3)]
    with WeaviateDouble() as double:
        with weaviate(collection="Notes", url=double.url, grpc_port=double.grpc_port) as plain:
            plain.ensure_collection(DIM, "cosine")
            plain.upsert([VectorRecord(u, np.full(DIM, i + 1, np.float32)) for i, u in enumerate(uuids)])
        rest = TlsFront(certificates, int(double.url.rsplit(":", 1)[1]))
        grpc_front = TlsFront(certificates, double.grpc_port)
        urls = {"url": f"https://127.0.0.1:{rest.port}", "grpc_url": f"https://127.0.0.1:{grpc_front.port}"}
        try:
            environment = dict(os.environ)
            assert _read_ids(weaviate(collection="Notes", tls_verify=str(certificates.ca), **urls)) == uuids
            assert dict(os.environ) == environment, "the CA is named to httpx only while the client is built"
            for refused in ({}, {"tls_verify": str(certificates.other_ca)}):
                failures = rest.handshake_failures
                with pytest.raises(ConnectorError, match="--ca-cert"):
                    _read_ids(weaviate(collection="Notes", connect_timeout=3, **refused, **urls))
                assert rest.wait_for_handshake_failures(above=failures), "the client must have refused the certificate"
            failures = grpc_front.handshake_failures  # plain REST, TLS gRPC: the gRPC channel checks on its own
            with pytest.raises(ConnectorError):
                _read_ids(weaviate(collection="Notes", url=double.url, grpc_url=urls["grpc_url"], connect_timeout=3))
            assert grpc_front.wait_for_handshake_failures(above=failures)
            with pytest.raises(VdbguardError, match="--ca-cert"):
                weaviate(collection="Notes", tls_verify=False, **urls)
        finally:
            rest.close()
            grpc_front.close()


def test_milvus_verifies_the_server_certificate_over_grpc(certificates: Certificates, tmp_path: Path) -> None:
    """pymilvus' own gRPC channel through a TLS front (h2) to the Milvus Lite gRPC server."""
    pytest.importorskip("pymilvus")
    from tests.connectors.contract.backend_milvus import MilvusLiteServer

    server = MilvusLiteServer(tmp_path)
    server.start()
    front = TlsFront(certificates, server.port)
    milvus = load_connector("milvus")
    try:
        with milvus(collection="notes", url=server.url) as plain:
            plain.ensure_collection(DIM, "cosine")
            plain.upsert([VectorRecord(str(i), np.full(DIM, i + 1, np.float32)) for i in range(3)])
        url = f"https://127.0.0.1:{front.port}"
        assert _read_ids(milvus(collection="notes", url=url, tls_verify=str(certificates.ca), timeout=5)) == [
            "0",
            "1",
            "2",
        ]
        for refused in ({}, {"tls_verify": str(certificates.other_ca)}):
            failures = front.handshake_failures
            with pytest.raises(ConnectorError):
                _read_ids(milvus(collection="notes", url=url, timeout=5, **refused))
            assert front.wait_for_handshake_failures(above=failures), "the client must have refused the certificate"
        with pytest.raises(VdbguardError, match="--ca-cert"):
            milvus(collection="notes", url=url, tls_verify=False)
    finally:
        front.close()
        server.stop()
