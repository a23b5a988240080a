"""What each backend provides to the shared contract suite. One module ``backend_<store>.py`` per store.

A backend knows how to start its engine (embedded dir, real server, or a protocol-level test double
the vendor's own client talks to), how to build the connector for a collection, and how to observe
writes *on the engine* so the suite can prove a scan writes nothing.
"""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from vdbguard.connectors import load_connector
from vdbguard.connectors.base import Connector

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[3]


class Backend(ABC):
    id: ClassVar[str]  # pytest id, e.g. "chroma-embedded"
    connector_name: ClassVar[str]  # entry point name
    named_vectors: ClassVar[bool] = False
    namespaces: ClassVar[bool] = False
    credentials: ClassVar[bool] = False  # engine checks an API key / token
    transient_errors: ClassVar[bool] = False  # failing() can inject 5xx/UNAVAILABLE
    exact_float32: ClassVar[bool] = True
    metric: ClassVar[str] = "cosine"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def start(self) -> None:  # noqa: B027 - servers override
        """Start engines/servers; called once per session."""

    def stop(self) -> None:  # noqa: B027
        pass

    @abstractmethod
    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        """JSON-serialisable constructor arguments (also used to rebuild the connector in a new process)."""

    def connector(self, collection: str, **overrides: Any) -> Connector:
        return load_connector(self.connector_name)(**{**self.connector_kwargs(collection), **overrides})

    def store_kwargs(self, **overrides: Any) -> dict[str, Any]:
        """The connector's settings without a collection: what ``Connector.list_collections`` takes."""
        kwargs = {**self.connector_kwargs("unused"), **overrides}
        del kwargs["collection"]
        return kwargs

    def listed_name(self, collection: str) -> str:
        """The name the store lists a collection created as ``collection`` under."""
        return collection

    @abstractmethod
    def write_marker(self) -> Any:
        """Something observed on the engine that changes whenever anything is written to it."""

    def unreachable_kwargs(self, collection: str) -> dict[str, Any] | None:
        """Constructor arguments pointing at a host where nothing listens; None for embedded stores."""
        return None

    def bad_credentials_kwargs(self, collection: str) -> dict[str, Any] | None:
        return None

    @contextmanager
    def failing(self, times: int) -> Iterator[None]:
        """Make the engine answer the next ``times`` requests with a transient error."""
        raise NotImplementedError
        yield


class EmbeddedBackend(Backend):
    """An embedded store under the workdir: the connector gets its ``path``, the write marker is its files."""

    store: ClassVar[str]  # the folder (or file) under the workdir
    make_folder: ClassVar[bool] = False  # the connector reads an existing folder only (it never creates one)
    sparse: ClassVar[bool] = False  # the engine preallocates sparse files: mark only what was written

    @property
    def path(self) -> Path:
        return self.workdir / self.store

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "path": str(self.path)}

    def connector(self, collection: str, **overrides: Any) -> Connector:
        if self.make_folder:
            self.path.mkdir(exist_ok=True)
        return super().connector(collection, **overrides)

    def write_marker(self) -> Any:
        return sparse_tree_marker(self.path) if self.sparse else tree_checksums(self.path)


class RemoteBackend(Backend):
    """A store the connector reaches at ``url``."""

    url: str

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "url": self.url}

    def unreachable_kwargs(self, collection: str) -> dict[str, Any]:
        return {"url": f"http://127.0.0.1:{free_port()}"}


class ServerProcessBackend(RemoteBackend):
    """A real server in a subprocess on a free local port; ``stop()`` ends it."""

    @abstractmethod
    def command(self) -> list[str]: ...

    @abstractmethod
    def ready(self) -> bool: ...

    @property
    def url(self) -> str:  # type: ignore[override]
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.port = free_port()
        self.log = open(self.workdir / "server.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(self.command(), stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            if self.ready():
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


class DoubleBackend(RemoteBackend):
    """The vendor's own client against a protocol-level double (``tests/doubles``) in this process: it checks
    an API key, counts the write requests it gets (the write marker) and fails on demand."""

    credentials = True
    transient_errors = True
    api_key: ClassVar[str]
    bad_api_key: ClassVar[str]

    @abstractmethod
    def make_double(self) -> Any:
        """The double, not started yet."""

    def start(self) -> None:
        self.double = self.make_double()
        self.double.start()

    def stop(self) -> None:
        self.double.stop()

    @property
    def url(self) -> str:  # type: ignore[override]
        return self.double.url

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {**super().connector_kwargs(collection), "api_key": self.api_key}

    def write_marker(self) -> Any:
        return self.double.writes

    def bad_credentials_kwargs(self, collection: str) -> dict[str, Any]:
        return {"api_key": self.bad_api_key}

    @contextmanager
    def failing(self, times: int) -> Iterator[None]:
        with self.double.faults.failing(times):
            yield


def tree_checksums(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``: the write marker of an embedded store."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def sparse_tree_marker(root: Path) -> dict[str, tuple[int, int, str]]:
    """(size, mtime_ns, sha256 of the written extents) of every file under ``root``.

    Like ``tree_checksums`` but reads only the data extents of sparse files (Qdrant preallocates
    32 MiB WAL and mmap files that hold a few KiB), so a marker costs what was written, not 100+ MiB.
    A hole that is written, even with zeros, becomes a data extent and changes the marker.
    """
    marker = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        digest = hashlib.sha256()
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            position = 0
            while position < size:
                try:
                    start = os.lseek(file.fileno(), position, os.SEEK_DATA)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:
                        break
                    raise
                end = os.lseek(file.fileno(), start, os.SEEK_HOLE)
                file.seek(start)
                digest.update(start.to_bytes(8, "little"))
                digest.update(file.read(end - start))
                position = end
        marker[str(path.relative_to(root))] = (size, path.stat().st_mtime_ns, digest.hexdigest())
    return marker


def ids_of(batches: Sequence[Any]) -> list[str]:
    return [record.id for batch in batches for record in batch.records]
