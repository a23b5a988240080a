"""Milvus: an embedded Milvus Lite store, and the Milvus Lite gRPC server (the same engine over the network).

milvus-lite 3.x implements Milvus' gRPC service (``milvus_pb2_grpc.MilvusService``) in Python; pymilvus
talks to it exactly as to a Milvus server. The server backend runs that servicer in a subprocess
bound to 127.0.0.1 with one gRPC interceptor added, which answers the next N calls with UNAVAILABLE
(``failing``) and counts mutating calls.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.contract.harness import Backend, tree_checksums
from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
_MUTATING = ("Insert", "Upsert", "Delete", "Create", "Drop", "Alter", "Flush", "Compact", "Rename")


class MilvusLiteEmbedded(Backend):
    id = "milvus-lite"
    connector_name = "milvus"
    named_vectors = True
    namespaces = True
    metric = "cosine"

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "path": str(self.workdir / "store.db")}

    def write_marker(self) -> Any:
        """Milvus Lite keeps everything under the ``.db`` directory: WAL files (appended on every write),
        Parquet segments, manifest, schema and index files; names and checksums of all of them."""
        store = self.workdir / "store.db"
        return tree_checksums(store) if store.exists() else {}


class MilvusLiteServer(Backend):
    id = "milvus-lite-server"
    connector_name = "milvus"
    named_vectors = True
    namespaces = True
    transient_errors = True
    metric = "cosine"

    def start(self) -> None:
        self.port = free_port()
        self.data = self.workdir / "data"
        self.faults = self.workdir / "faults"
        self.writes = self.workdir / "writes"
        self.faults.write_text("0")
        self.log = open(self.workdir / "server.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.contract.backend_milvus", str(self.data), str(self.port), str(self.workdir)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
        ready = self.workdir / "ready"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            if ready.exists():
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError((self.workdir / "server.log").read_text()[-2000:])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "url": f"http://127.0.0.1:{self.port}"}

    def write_marker(self) -> Any:
        """Mutating RPCs the server answered, and the files of its data directory (WAL, segments, manifest)."""
        return self.writes.read_text(), tree_checksums(self.data)

    def unreachable_kwargs(self, collection: str) -> dict[str, Any]:
        return {"url": f"http://127.0.0.1:{free_port()}"}

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
