"""A protocol-level test double of Pinecone's REST API, for the official ``pinecone`` SDK to talk to.

No Pinecone can run here (Pinecone Local is a Docker image), so this double serves the subset of
the public API (https://github.com/pinecone-io/pinecone-api, versions 2025-04 and 2026-07) that
the SDK uses for serverless dense indexes:

* control plane (``PineconeDouble.url``): ``GET /indexes``, ``GET/DELETE /indexes/{name}`` and
  ``POST /indexes``. The index model is answered in the shape of the API version the client sends
  in ``X-Pinecone-Api-Version``: 2026-07 and later get ``schema``/``deployment`` (pinecone 10.x),
  older versions get ``dimension``/``metric``/``spec`` (pinecone 7.x). New indexes report
  ``Initializing`` in the create answer and ``Ready`` on the next describe.
* data plane, one HTTP server (its own port, like Pinecone's per-index hosts) per index:
  ``POST /vectors/upsert``, ``GET /vectors/fetch``, ``GET /vectors/list`` (IDs in bitwise order,
  at most 100 a page, an opaque base64 pagination token), ``POST /vectors/delete``,
  ``POST /vectors/update``, ``POST /describe_index_stats`` and ``POST /query``.

Vector values are kept as float32 (``array('f')``), as the real service stores them; metadata
numbers become 64-bit floats, as Pinecone documents. Unlike the real service the double is
strongly consistent: a write is visible to the next read.

Every request must carry the ``Api-Key`` the double was started with (else 401). ``writes``
counts write requests (upserts, deletes, updates, index creation/deletion) so tests can prove a
scan writes nothing; ``faults.failing(n)`` answers the next ``n`` requests, whatever they are, with 503.
Servers bind to 127.0.0.1 only and run in daemon threads; ``stop()`` shuts them all down.
"""

from __future__ import annotations

import base64
import json
import math
import re
import threading
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.connectors.doubles.serving import Faults, QuietHandler, serve, shutdown

_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,43}[a-z0-9])?")
_METRICS = ("cosine", "euclidean", "dotproduct")
_LIST_LIMIT_MAX = 100
_UPSERT_MAX = 1000
_METADATA_MAX_BYTES = 40 * 1024
_DEFAULT_NAMESPACE_ALIAS = "__default__"
_WRITES = {("POST", "/vectors/upsert"), ("POST", "/vectors/delete"), ("POST", "/vectors/update")}


class _ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


_GRPC_CODES = {
    "INVALID_ARGUMENT": 3,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "UNAUTHENTICATED": 16,
    "UNAVAILABLE": 14,
    "UNIMPLEMENTED": 12,
}


@dataclass
class _Record:
    values: array
    metadata: dict[str, Any] | None
    sparse: dict[str, Any] | None = None


@dataclass
class _Index:
    name: str
    dimension: int
    metric: str
    cloud: str
    region: str
    deletion_protection: str = "disabled"
    tags: dict[str, str] | None = None
    described: bool = False  # "Initializing" in the create answer, "Ready" once described
    namespaces: dict[str, dict[str, _Record]] = field(default_factory=dict)
    server: ThreadingHTTPServer | None = None
    thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"


class _Handler(QuietHandler):
    server_version = "pinecone-double"
    double: PineconeDouble
    index: _Index | None = None  # None: control plane

    def _handle(self, method: str) -> None:
        raw = self._read_body()
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        version = self.headers.get("X-Pinecone-Api-Version") or ""
        double = self.double
        try:
            double._admit(self.headers.get("Api-Key"), version)
            body = json.loads(raw) if raw.strip() else {}
            if self.index is None:
                status, payload = double._control(method, parts.path, body, version)
            else:
                status, payload = double._data(self.index, method, parts.path, query, body)
        except _ApiError as exc:
            self._error(exc)
            return
        except (ValueError, TypeError, KeyError) as exc:
            self._error(_ApiError(400, "INVALID_ARGUMENT", f"bad request: {type(exc).__name__}: {exc}"))
            return
        self._reply(status, payload)

    def _error(self, exc: _ApiError) -> None:
        if exc.status == 401 and self.index is not None:
            self._reply(401, "Unauthorized", content_type="text/plain")  # the data plane's UnauthorizedMessage
        elif self.index is not None:
            self._reply(exc.status, {"code": _GRPC_CODES.get(exc.code, 2), "message": exc.message, "details": []})
        else:
            self._reply(exc.status, {"error": {"code": exc.code, "message": exc.message}, "status": exc.status})


class PineconeDouble:
    """An in-memory Pinecone (control plane + one data-plane host per index) on 127.0.0.1."""

    def __init__(self, api_key: str = "pcsk-double-key", *, cloud: str = "aws", region: str = "us-east-1") -> None:
        self.api_key = api_key
        self.cloud = cloud
        self.region = region
        self.writes = 0
        self.requests = 0
        self.api_versions: set[str] = set()  # X-Pinecone-Api-Version values seen
        self.faults = Faults()
        self._lock = threading.RLock()
        self._indexes: dict[str, _Index] = {}
        self._control_server: ThreadingHTTPServer | None = None
        self._control_thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The control-plane host, for ``Pinecone(host=...)``."""
        assert self._control_server is not None, "start() the double first"
        return f"http://127.0.0.1:{self._control_server.server_address[1]}"

    def start(self) -> PineconeDouble:
        self._control_server, self._control_thread = self._serve(None)
        return self

    def stop(self) -> None:
        with self._lock:
            servers = [(i.server, i.thread) for i in self._indexes.values()]
            servers.append((self._control_server, self._control_thread))
            self._indexes.clear()
            self._control_server = self._control_thread = None
        for server, thread in servers:
            shutdown(server, thread)

    def __enter__(self) -> PineconeDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def index_host(self, name: str) -> str:
        with self._lock:
            return self._indexes[name].host

    def _serve(self, index: _Index | None) -> tuple[ThreadingHTTPServer, threading.Thread]:
        handler = type("Handler", (_Handler,), {"double": self, "index": index})
        return serve(handler, f"pinecone-double-{index.name if index else 'control'}")

    # -- request admission ---------------------------------------------------------------------

    def _admit(self, api_key: str | None, version: str) -> None:
        with self._lock:
            self.requests += 1
            self.api_versions.add(version)
            if self.faults.take():
                raise _ApiError(503, "UNAVAILABLE", "service unavailable (injected by the test double)")
        if api_key != self.api_key:
            raise _ApiError(401, "UNAUTHENTICATED", "Invalid API Key")

    def _wrote(self) -> None:
        with self._lock:
            self.writes += 1

    # -- control plane -------------------------------------------------------------------------

    def _control(self, method: str, path: str, body: Any, version: str) -> tuple[int, Any]:
        segments = [unquote(s) for s in path.strip("/").split("/")]
        if segments == ["indexes"] and method == "GET":
            with self._lock:
                return 200, {"indexes": [self._model(i, version) for i in self._indexes.values()]}
        if segments == ["indexes"] and method == "POST":
            self._wrote()
            return 201, self._create(body, version)
        if len(segments) == 2 and segments[0] == "indexes":
            name = segments[1]
            if method == "GET":
                with self._lock:
                    index = self._get_index(name)
                    index.described = True
                    return 200, self._model(index, version)
            if method == "DELETE":
                self._wrote()
                with self._lock:
                    index = self._get_index(name)
                    if index.deletion_protection == "enabled":
                        raise _ApiError(403, "FORBIDDEN", f"Deletion protection is enabled for index {name!r}")
                    del self._indexes[name]
                shutdown(index.server, index.thread)
                return 202, ""
        raise _ApiError(404, "NOT_FOUND", f"{method} {path} is not served by the test double")

    def _get_index(self, name: str) -> _Index:
        index = self._indexes.get(name)
        if index is None:
            raise _ApiError(404, "NOT_FOUND", f"Resource {name} not found")
        return index

    def _create(self, body: dict[str, Any], version: str) -> dict[str, Any]:
        name = body.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise _ApiError(
                400,
                "INVALID_ARGUMENT",
                "Resource name must be 1-45 characters long, start and end with an alphanumeric character, "
                "and consist only of lower case alphanumeric characters or '-'",
            )
        if "schema" in body:  # 2026-07: {"schema": {"fields": {"_values": {"type": "dense_vector", ...}}}}
            fields = (body.get("schema") or {}).get("fields") or {}
            dense = [f for f in fields.values() if isinstance(f, dict) and f.get("type") == "dense_vector"]
            if len(dense) != 1 or len(fields) != 1:
                raise _ApiError(400, "INVALID_ARGUMENT", "the test double serves one dense vector field only")
            dimension, metric = dense[0].get("dimension"), dense[0].get("metric") or "cosine"
            deployment = body.get("deployment") or {"deployment_type": "managed", "cloud": self.cloud}
            if deployment.get("deployment_type", "managed") != "managed":
                raise _ApiError(400, "INVALID_ARGUMENT", "the test double serves managed (serverless) indexes only")
            cloud, region = deployment.get("cloud") or self.cloud, deployment.get("region") or self.region
        else:  # up to 2025-10: {"dimension": .., "metric": .., "spec": {"serverless": {...}}}
            if (body.get("vector_type") or "dense") != "dense":
                raise _ApiError(400, "INVALID_ARGUMENT", "the test double serves dense indexes only")
            serverless = (body.get("spec") or {}).get("serverless")
            if not isinstance(serverless, dict):
                raise _ApiError(400, "INVALID_ARGUMENT", "the test double serves serverless indexes only")
            dimension, metric = body.get("dimension"), body.get("metric") or "cosine"
            cloud, region = serverless.get("cloud") or self.cloud, serverless.get("region") or self.region
        if not isinstance(dimension, int) or not 1 <= dimension <= 20000:
            raise _ApiError(400, "INVALID_ARGUMENT", "dimension must be an integer between 1 and 20000")
        if metric not in _METRICS:
            raise _ApiError(400, "INVALID_ARGUMENT", f"metric must be one of {', '.join(_METRICS)}")
        index = _Index(
            name=name,
            dimension=dimension,
            metric=metric,
            cloud=cloud,
            region=region,
            deletion_protection=body.get("deletion_protection") or "disabled",
            tags=body.get("tags"),
        )
        with self._lock:
            if name in self._indexes:
                raise _ApiError(409, "ALREADY_EXISTS", "Resource already exists")
            self._indexes[name] = index
            index.server, index.thread = self._serve(index)
            return self._model(index, version)

    @staticmethod
    def _model(index: _Index, version: str) -> dict[str, Any]:
        status = {"ready": True, "state": "Ready"} if index.described else {"ready": False, "state": "Initializing"}
        common = {
            "name": index.name,
            "host": index.host,
            "status": status,
            "deletion_protection": index.deletion_protection,
            "tags": index.tags,
        }
        if version >= "2026-07":
            return {
                **common,
                "schema": {
                    "fields": {
                        "_values": {"type": "dense_vector", "dimension": index.dimension, "metric": index.metric}
                    }
                },
                "deployment": {"deployment_type": "managed", "cloud": index.cloud, "region": index.region},
                "read_capacity": {"mode": "OnDemand", "status": {"state": "Ready"}},
            }
        return {
            **common,
            "dimension": index.dimension,
            "metric": index.metric,
            "vector_type": "dense",
            "spec": {"serverless": {"cloud": index.cloud, "region": index.region}},
        }

    # -- data plane ----------------------------------------------------------------------------

    def _data(self, index: _Index, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        routes: dict[tuple[str, str], Callable[[], Any]] = {
            ("POST", "/vectors/upsert"): lambda: self._upsert(index, body),
            ("GET", "/vectors/fetch"): lambda: self._fetch(index, query),
            ("GET", "/vectors/list"): lambda: self._list(index, query),
            ("POST", "/vectors/delete"): lambda: self._delete(index, body),
            ("POST", "/vectors/update"): lambda: self._update(index, body),
            ("POST", "/describe_index_stats"): lambda: self._stats(index, body),
            ("POST", "/query"): lambda: self._query(index, body),
        }
        route = routes.get((method, path.rstrip("/") or "/"))
        if route is None:
            raise _ApiError(404, "NOT_FOUND", f"{method} {path} is not served by the test double")
        if (method, path) in _WRITES:
            self._wrote()
        with self._lock:
            if self._indexes.get(index.name) is not index:
                raise _ApiError(404, "NOT_FOUND", f"index {index.name} was deleted")
            return 200, route()

    @staticmethod
    def _namespace(value: Any) -> str:
        namespace = value or ""
        if not isinstance(namespace, str):
            raise _ApiError(400, "INVALID_ARGUMENT", "namespace must be a string")
        return "" if namespace == _DEFAULT_NAMESPACE_ALIAS else namespace

    def _values(self, index: _Index, record_id: str, values: Any) -> array:
        numeric = isinstance(values, list) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        )
        if not numeric:
            raise _ApiError(400, "INVALID_ARGUMENT", f"Vector {record_id}: values must be a list of numbers")
        if len(values) != index.dimension:
            raise _ApiError(
                400,
                "INVALID_ARGUMENT",
                f"Vector dimension {len(values)} does not match the dimension of the index {index.dimension}",
            )
        if not all(math.isfinite(v) for v in values):
            raise _ApiError(400, "INVALID_ARGUMENT", f"Vector {record_id}: values must be finite")
        return array("f", values)  # stored as float32, like the real service

    @staticmethod
    def _metadata(record_id: str, metadata: Any) -> dict[str, Any] | None:
        if metadata is None:
            return None
        if not isinstance(metadata, dict):
            raise _ApiError(400, "INVALID_ARGUMENT", f"Vector {record_id}: metadata must be an object")
        out: dict[str, Any] = {}
        for key, value in metadata.items():
            if isinstance(value, (bool, str)):
                out[key] = value
            elif isinstance(value, (int, float)) and math.isfinite(value):
                out[key] = float(value)  # Pinecone stores metadata numbers as 64-bit floats
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                out[key] = list(value)
            else:
                raise _ApiError(
                    400,
                    "INVALID_ARGUMENT",
                    f"Metadata value for key {key!r} of vector {record_id} must be a string, number, boolean "
                    "or list of strings",
                )
        if len(json.dumps(out).encode()) > _METADATA_MAX_BYTES:
            raise _ApiError(400, "INVALID_ARGUMENT", f"Metadata of vector {record_id} exceeds 40960 bytes")
        return out or None

    def _upsert(self, index: _Index, body: dict[str, Any]) -> dict[str, Any]:
        vectors = body.get("vectors")
        if not isinstance(vectors, list) or not vectors:
            raise _ApiError(400, "INVALID_ARGUMENT", "vectors must be a non-empty list")
        if len(vectors) > _UPSERT_MAX:
            raise _ApiError(400, "INVALID_ARGUMENT", f"at most {_UPSERT_MAX} vectors per upsert request")
        namespace = self._namespace(body.get("namespace"))
        staged: dict[str, _Record] = {}
        for vector in vectors:  # validate everything first: a bad request writes nothing
            record_id = vector.get("id")
            if not isinstance(record_id, str) or not 1 <= len(record_id) <= 512:
                raise _ApiError(400, "INVALID_ARGUMENT", "vector id must be a string of 1 to 512 characters")
            staged[record_id] = _Record(
                values=self._values(index, record_id, vector.get("values")),
                metadata=self._metadata(record_id, vector.get("metadata")),
                sparse=vector.get("sparseValues") or vector.get("sparse_values"),
            )
        index.namespaces.setdefault(namespace, {}).update(staged)  # upsert replaces whole records
        return {"upsertedCount": len(vectors)}

    @staticmethod
    def _vector_json(record_id: str, record: _Record, *, values: bool = True, metadata: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"id": record_id}
        if values:
            out["values"] = record.values.tolist()
        if record.sparse is not None and values:
            out["sparseValues"] = record.sparse
        if metadata and record.metadata is not None:
            out["metadata"] = record.metadata
        return out

    def _fetch(self, index: _Index, query: dict[str, list[str]]) -> dict[str, Any]:
        ids = query.get("ids") or []
        if not ids:
            raise _ApiError(400, "INVALID_ARGUMENT", "ids must be provided")
        if len(ids) > 1000:
            raise _ApiError(400, "INVALID_ARGUMENT", "at most 1000 ids per fetch")
        namespace = self._namespace((query.get("namespace") or [""])[0])
        stored = index.namespaces.get(namespace, {})
        found = {i: self._vector_json(i, stored[i]) for i in ids if i in stored}
        return {"vectors": found, "namespace": namespace, "usage": {"readUnits": 1}}

    def _list(self, index: _Index, query: dict[str, list[str]]) -> dict[str, Any]:
        namespace = self._namespace((query.get("namespace") or [""])[0])
        prefix = (query.get("prefix") or [""])[0]
        raw_limit = (query.get("limit") or [str(_LIST_LIMIT_MAX)])[0]
        limit = int(raw_limit)
        if not 1 <= limit <= _LIST_LIMIT_MAX:
            raise _ApiError(400, "INVALID_ARGUMENT", f"limit must be between 1 and {_LIST_LIMIT_MAX}")
        skip_past = None
        token = (query.get("paginationToken") or [""])[0]
        if token:
            try:
                state = json.loads(base64.b64decode(token, validate=True))
                skip_past, prefix = state["skip_past"], state.get("prefix", prefix)
            except (ValueError, KeyError, TypeError) as exc:
                raise _ApiError(400, "INVALID_ARGUMENT", "invalid pagination token") from exc
        ids = sorted((i for i in index.namespaces.get(namespace, {}) if i.startswith(prefix)), key=lambda s: s.encode())
        if skip_past is not None:
            ids = [i for i in ids if i.encode() > skip_past.encode()]
        page = ids[:limit]
        out: dict[str, Any] = {"vectors": [{"id": i} for i in page], "namespace": namespace, "usage": {"readUnits": 1}}
        if len(ids) > limit:
            state = json.dumps({"skip_past": page[-1], "prefix": prefix}).encode()
            out["pagination"] = {"next": base64.b64encode(state).decode()}
        return out

    def _delete(self, index: _Index, body: dict[str, Any]) -> dict[str, Any]:
        namespace = self._namespace(body.get("namespace"))
        if body.get("filter"):
            raise _ApiError(400, "INVALID_ARGUMENT", "the test double does not support delete by filter")
        stored = index.namespaces.get(namespace, {})
        if body.get("deleteAll"):
            stored.clear()
        else:
            for record_id in body.get("ids") or []:
                stored.pop(record_id, None)
        if not stored:
            index.namespaces.pop(namespace, None)
        return {}

    def _update(self, index: _Index, body: dict[str, Any]) -> dict[str, Any]:
        namespace = self._namespace(body.get("namespace"))
        record_id = body.get("id")
        record = index.namespaces.get(namespace, {}).get(record_id)
        if record is None:
            return {"matchedRecords": 0}
        if body.get("values"):
            record.values = self._values(index, record_id, body["values"])
        if body.get("setMetadata"):
            merged = {**(record.metadata or {}), **body["setMetadata"]}
            record.metadata = self._metadata(record_id, merged)
        return {"matchedRecords": 1}

    def _stats(self, index: _Index, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("filter"):
            raise _ApiError(400, "INVALID_ARGUMENT", "serverless indexes do not filter describe_index_stats")
        namespaces = {ns: {"vectorCount": len(records)} for ns, records in sorted(index.namespaces.items()) if records}
        return {
            "namespaces": namespaces,
            "dimension": index.dimension,
            "indexFullness": 0.0,
            "totalVectorCount": sum(n["vectorCount"] for n in namespaces.values()),
            "metric": index.metric,
            "vectorType": "dense",
        }

    def _query(self, index: _Index, body: dict[str, Any]) -> dict[str, Any]:
        namespace = self._namespace(body.get("namespace"))
        if body.get("filter"):
            raise _ApiError(400, "INVALID_ARGUMENT", "the test double does not support query filters")
        top_k = body.get("topK")
        if not isinstance(top_k, int) or not 1 <= top_k <= 10000:
            raise _ApiError(400, "INVALID_ARGUMENT", "topK must be an integer between 1 and 10000")
        stored = index.namespaces.get(namespace, {})
        if body.get("id") is not None:
            if body["id"] not in stored:
                return {"matches": [], "namespace": namespace, "usage": {"readUnits": 1}}
            probe = stored[body["id"]].values.tolist()
        else:
            probe = self._values(index, "query", body.get("vector")).tolist()
        scored = sorted(
            ((self._score(index.metric, probe, r.values.tolist()), i, r) for i, r in stored.items()),
            key=lambda t: -t[0] if index.metric != "euclidean" else t[0],
        )[:top_k]
        matches = []
        for score, record_id, record in scored:
            match = self._vector_json(
                record_id,
                record,
                values=bool(body.get("includeValues")),
                metadata=bool(body.get("includeMetadata")),
            )
            match["score"] = score
            if "values" not in match:
                match["values"] = []
            matches.append(match)
        return {"matches": matches, "namespace": namespace, "usage": {"readUnits": 5}}

    @staticmethod
    def _score(metric: str, a: list[float], b: list[float]) -> float:
        if metric == "euclidean":
            return math.fsum((x - y) ** 2 for x, y in zip(a, b, strict=True))
        dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
        if metric == "dotproduct":
            return dot
        norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
        return dot / norm if norm else 0.0
