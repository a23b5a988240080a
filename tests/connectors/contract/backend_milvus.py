"""Milvus: an embedded Milvus Lite store, and the Milvus Lite gRPC server (the same engine over the network).

milvus-lite 3.x implements Milvus' gRPC service (``milvus_pb2_grpc.MilvusService``) in Python; pymilvus
talks to it exactly as to a Milvus server. The server backend runs that servicer in a subprocess
bound to 127.0.0.1 with one gRPC interceptor added, which answers the next N calls with UNAVAILABLE
(``failing``) and counts mutating calls.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.connectors.contract.harness import EmbeddedBackend, ServerProcessBackend, tree_checksums

_MUTATING = ("Insert", "Upsert", "Delete", "Create", "Drop", "Alter", "Flush", "Compact", "Rename")


class MilvusLiteEmbedded(EmbeddedBackend):
    """Milvus Lite keeps everything under the ``.db`` directory: WAL files (appended on every write),
    Parquet segments, manifest, schema and index files; the write marker is the names and checksums of all."""

    id = "milvus-lite"
    connector_name = "milvus"
    named_vectors = True
    namespaces = True
    metric = "cosine"
    store = "store.db"


class MilvusLiteServer(ServerProcessBackend):
    """The write marker: mutating RPCs the server answered, and the files of its data directory."""

    id = "milvus-lite-server"
    connector_name = "milvus"
    named_vectors = True
    namespaces = True
    transient_errors = True
    metric = "cosine"

    def command(self) -> list[str]:
        self.data = self.workdir / "data"
        self.faults = self.workdir / "faults"
        self.writes = self.workdir / "writes"
        self.faults.write_text("0")
        return [sys.executable, "-m", __name__, str(self.data), str(self.port), str(self.workdir)]

    def ready(self) -> bool:
        return (self.workdir / "ready").exists()

    def write_marker(self) -> Any:
        return self.writes.read_text(), tree_checksums(self.data)

    @contextmanager
    def failing(self, times: int) -> Iterator[None]:
        self.faults.write_text(str(times))
        try:
            yield
        finally:
            left = int(self.faults.read_text() or 0)
            self.faults.write_text("0")
        assert left == 0, f"{left} injected failures were not reached"


def _serve(data_dir: str, port: int, workdir: Path) -> None:
    """The Milvus Lite gRPC server (as ``milvus_lite.adapter.grpc.server`` builds it) plus a fault interceptor."""
    import threading
    from concurrent import futures

    import grpc
    from milvus_lite.adapter.grpc.servicer import MilvusServicer
    from milvus_lite.db import MilvusLite
    from pymilvus.grpc_gen import milvus_pb2_grpc

    faults, writes, lock = workdir / "faults", workdir / "writes", threading.Lock()
    writes.write_text("0")

    class Faults(grpc.ServerInterceptor):
        def intercept_service(self, continuation: Any, details: Any) -> Any:
            method = details.method.rsplit("/", 1)[-1]
            with lock:
                left = int(faults.read_text() or 0)
                if left > 0:
                    faults.write_text(str(left - 1))
                elif method.startswith(_MUTATING):
                    writes.write_text(str(int(writes.read_text()) + 1))
            if left > 0:

                def unavailable(request: Any, context: grpc.ServicerContext) -> Any:
                    context.abort(grpc.StatusCode.UNAVAILABLE, "injected transient failure")

                return grpc.unary_unary_rpc_method_handler(unavailable)
            return continuation(details)

    db = MilvusLite(data_dir)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=[Faults()])
    milvus_pb2_grpc.add_MilvusServiceServicer_to_server(MilvusServicer(db), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    (workdir / "ready").write_text("ok")
    import signal

    signal.signal(signal.SIGTERM, lambda *_: server.stop(grace=2))
    server.wait_for_termination()
    db.close()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]))
