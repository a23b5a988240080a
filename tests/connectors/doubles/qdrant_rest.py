"""A test double of Qdrant's REST API, for the real ``QdrantClient(url=..., api_key=...)`` to talk to.

No Qdrant server binary can be installed here (none on PyPI, npm or Debian), so the remote mode is
tested against this double. Request bodies are parsed, and responses built, with the client's own
``qdrant_client.http.models`` (the pydantic models generated from Qdrant's OpenAPI spec), so a
request the real server would reject as malformed is rejected here too, and every answer is one the
client's response parser accepts.

What it implements is only what the vdbguard connector uses: ``GET /`` (version), ``GET
/collections``, ``GET /collections/{name}``, ``GET /collections/{name}/exists``, ``PUT
/collections/{name}`` (create), ``DELETE /collections/{name}``, ``PUT /collections/{name}/points``
(upsert), ``POST /collections/{name}/points/scroll``, ``/points/count``, ``/points/delete`` and
``/points/query`` (a plain dense query vector, ranked by the vector's distance), for dense float32
vectors (unnamed or named), without filters. Behaviour copied from the server:

- point ids are unsigned integers or UUIDs (any spelling, stored canonical); scroll returns points
  ordered by id, integers first, then UUIDs by their 128-bit value, and ``next_page_offset`` is the
  id of the first point of the next page (offsets are inclusive);
- an upsert replaces the whole point: payload and every vector (vectors it omits are dropped);
- vectors of a ``Cosine`` collection are L2-normalised (in float32) on insert, as the server does;
  other vectors are stored as the float32 values sent, and sent back exactly (JSON floats written
  with ``repr`` of the float32 value widened to float64 round-trip bit for bit);
- with an API key configured, requests need ``api-key: KEY`` or ``Authorization: Bearer KEY``
  (401 otherwise); a read-only key gets 403 on writes. ``GET /`` needs no key;
- errors carry Qdrant's JSON body ``{"status": {"error": ...}, "time": ...}`` (auth errors are
  plain text, as the server's middleware sends them).

Test hooks: ``writes`` counts every request that is not a read (whatever its outcome), so a scan
that so much as tried to write shows up; ``faults.failing(n)`` answers the next ``n`` requests with
503 Service Unavailable before looking at them.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np
from pydantic import BaseModel, ValidationError
from qdrant_client.http import models

from tests.connectors.doubles.serving import Faults, QuietHandler, serve, shutdown

VERSION = "1.17.0"
_EPSILON = 1e-30
_READ_POSTS = {"scroll", "count", "search", "query", "recommend", "discover", "facet", "search/batch", "query/batch"}
_COLLECTION = re.compile(r"^/collections/(?P<name>[^/]+)(?P<rest>/.*)?$")


class _Error(Exception):
    def __init__(self, status: int, message: str, *, plain: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.plain = plain


@dataclass
class _Collection:
    params: models.CollectionParams
    dense: dict[str, models.VectorParams]  # "" is the unnamed vector
    points: dict[int | str, tuple[dict[str, np.ndarray], dict[str, Any]]] = field(default_factory=dict)

    @property
    def named(self) -> bool:
        return not isinstance(self.params.vectors, models.VectorParams)


def _order_key(point_id: int | str) -> tuple[int, int]:
    return (0, point_id) if isinstance(point_id, int) else (1, uuid.UUID(point_id).int)


def _point_id(value: Any) -> int | str:
    if isinstance(value, bool):
        raise _Error(400, f"Format error in JSON body: invalid point id {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise _Error(400, f"Format error in JSON body: point id {value} must be an unsigned integer")
        return value
    try:
        return str(uuid.UUID(str(value)))
    except ValueError as exc:
        raise _Error(400, f"Format error in JSON body: Unable to parse UUID: {value}") from exc


class QdrantRestDouble:
    """``start()`` binds 127.0.0.1 on a free port and returns the base URL; ``stop()`` shuts it down."""

    def __init__(
        self, *, api_key: str | None = None, read_only_api_key: str | None = None, query_vectors: bool = True
    ) -> None:
        self.api_key = api_key
        self.query_vectors = query_vectors  # False: as behind a proxy that strips vectors from search results
        self.read_only_api_key = read_only_api_key
        self.collections: dict[str, _Collection] = {}
        self.writes = 0
        self.requests = 0
        self.faults = Faults()
        self._operation = 0
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> str:
        double = self

        class Handler(_Handler):
            owner = double

        self._server, self._thread = serve(Handler, "qdrant-double")
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self.url

    def stop(self) -> None:
        shutdown(self._server, self._thread)
        self._server = self._thread = None

    # -- request handling ------------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: Any, body: bytes) -> tuple[int, bytes, str]:
        started = time.perf_counter()
        parts = urlsplit(target)
        path = parts.path.rstrip("/") or "/"
        with self._lock:
            self.requests += 1
            write = _is_write(method, path)
            self.writes += int(write)
            if self.faults.take():
                return _error_body(503, "Service Unavailable: injected by the test double", started)
        try:
            self._authorize(path, headers, write)
            result = self._route(method, path, body)
        except _Error as exc:
            if exc.plain:
                return exc.status, exc.message.encode(), "text/plain"
            return _error_body(exc.status, exc.message, started)
        if isinstance(result, models.VersionInfo):
            payload: Any = result.model_dump(mode="json", exclude_none=True)
        else:
            dumped = result.model_dump(mode="json", exclude_none=True) if isinstance(result, BaseModel) else result
            payload = {"result": dumped, "status": "ok", "time": time.perf_counter() - started}
        return 200, json.dumps(payload).encode(), "application/json"

    def _authorize(self, path: str, headers: Any, write: bool) -> None:
        if (self.api_key is None and self.read_only_api_key is None) or path == "/":
            return
        key = headers.get("api-key")
        bearer = headers.get("authorization") or ""
        if key is None and bearer.lower().startswith("bearer "):
            key = bearer[7:].strip()
        if key is None:
            raise _Error(401, "Must provide an API key or an Authorization bearer token", plain=True)
        if key == self.api_key:
            return
        if key == self.read_only_api_key:
            if write:
                raise _Error(403, "Forbidden: Write access is required for this operation", plain=True)
            return
        raise _Error(401, "Invalid API key or JWT", plain=True)

    def _route(self, method: str, path: str, body: bytes) -> Any:
        if path == "/" and method == "GET":
            return models.VersionInfo(title="qdrant - vector search engine", version=VERSION)
        if path == "/collections" and method == "GET":
            with self._lock:
                names = sorted(self.collections)
            return models.CollectionsResponse(collections=[models.CollectionDescription(name=n) for n in names])
        match = _COLLECTION.match(path)
        if match is None:
            raise _Error(404, f"Not found: {path}")
        name, rest = unquote(match.group("name")), match.group("rest") or ""
        routes: dict[tuple[str, str], Callable[[str, bytes], Any]] = {
            ("GET", ""): self._get_collection,
            ("GET", "/exists"): self._exists,
            ("PUT", ""): self._create_collection,
            ("DELETE", ""): self._delete_collection,
            ("PUT", "/points"): self._upsert,
            ("POST", "/points/scroll"): self._scroll,
            ("POST", "/points/count"): self._count,
            ("POST", "/points/delete"): self._delete_points,
            ("POST", "/points/query"): self._query,
        }
        handler = routes.get((method, rest))
        if handler is None:
            raise _Error(404, f"Not found: {method} {path} is not implemented by the test double")
        return handler(name, body)

    def _collection(self, name: str) -> _Collection:
        collection = self.collections.get(name)
        if collection is None:
            raise _Error(404, f"Not found: Collection `{name}` doesn't exist!")
        return collection

    def _get_collection(self, name: str, body: bytes) -> models.CollectionInfo:
        with self._lock:
            collection = self._collection(name)
            count = len(collection.points)
        return models.CollectionInfo(
            status=models.CollectionStatus.GREEN,
            optimizer_status=models.OptimizersStatusOneOf.OK,
            indexed_vectors_count=0,
            points_count=count,
            segments_count=1,
            config=models.CollectionConfig(
                params=collection.params,
                hnsw_config=models.HnswConfig(m=16, ef_construct=100, full_scan_threshold=10000),
                optimizer_config=models.OptimizersConfig(
                    deleted_threshold=0.2, vacuum_min_vector_number=1000, default_segment_number=0, flush_interval_sec=5
                ),
                wal_config=models.WalConfig(wal_capacity_mb=32, wal_segments_ahead=0),
            ),
            payload_schema={},
        )

    def _exists(self, name: str, body: bytes) -> models.CollectionExistence:
        with self._lock:
            return models.CollectionExistence(exists=name in self.collections)

    def _create_collection(self, name: str, body: bytes) -> bool:
        request = _parse(models.CreateCollection, body)
        if not name or len(name) > 255 or any(c in name for c in '<>:"/\\|?*\0'):
            raise _Error(422, f"Validation error in path parameters: [name]: invalid collection name {name!r}")
        if request.sparse_vectors or (isinstance(request.vectors, dict) and "" in request.vectors):
            raise _Error(400, "Wrong input: the test double supports dense vectors only, named or unnamed")
        vectors = request.vectors if request.vectors is not None else {}
        dense = {"": vectors} if isinstance(vectors, models.VectorParams) else dict(vectors)
        for params in dense.values():
            if params.multivector_config is not None or params.datatype not in (None, models.Datatype.FLOAT32):
                raise _Error(400, "Wrong input: the test double stores plain float32 vectors only")
            if not 1 <= params.size <= 65536:
                raise _Error(422, "Validation error in JSON body: [vectors.size]: value must be between 1 and 65536")
        params = models.CollectionParams(vectors=vectors, shard_number=1, replication_factor=1, on_disk_payload=True)
        with self._lock:
            if name in self.collections:
                raise _Error(409, f"Wrong input: Collection `{name}` already exists!")
            self.collections[name] = _Collection(params=params, dense=dense)
        return True

    def _delete_collection(self, name: str, body: bytes) -> bool:
        with self._lock:
            return self.collections.pop(name, None) is not None

    def _upsert(self, name: str, body: bytes) -> models.UpdateResult:
        data = _json(body)
        batched = isinstance(data, dict) and "batch" in data
        operation: models.PointsList | models.PointsBatch = _parse(
            models.PointsBatch if batched else models.PointsList, data
        )
        if isinstance(operation, models.PointsBatch):
            batch = operation.batch
            ids = batch.ids
            vectors: list[Any] = (
                [dict(zip(batch.vectors, values, strict=True)) for values in zip(*batch.vectors.values(), strict=True)]
                if isinstance(batch.vectors, dict)
                else list(batch.vectors)
            )
            payloads: list[Any] = list(batch.payloads or [None] * len(ids))
            if not len(ids) == len(vectors) == len(payloads):
                raise _Error(400, "Wrong input: ids, vectors and payloads must have the same length")
            points = [
                models.PointStruct(id=i, vector=v, payload=p) for i, v, p in zip(ids, vectors, payloads, strict=True)
            ]
        else:
            points = operation.points
        with self._lock:
            collection = self._collection(name)
            staged = [(_point_id(p.id), self._vectors(collection, p.vector), dict(p.payload or {})) for p in points]
            for point_id, point_vectors, payload in staged:  # every point checked first: all or nothing
                collection.points[point_id] = (point_vectors, payload)
            self._operation += 1
            return models.UpdateResult(operation_id=self._operation, status=models.UpdateStatus.COMPLETED)

    def _delete_points(self, name: str, body: bytes) -> models.UpdateResult:
        selector = _parse(models.PointIdsList, _json(body))  # filter selectors are not implemented by the double
        with self._lock:
            collection = self._collection(name)
            for point_id in selector.points:
                collection.points.pop(_point_id(point_id), None)
            self._operation += 1
            return models.UpdateResult(operation_id=self._operation, status=models.UpdateStatus.COMPLETED)

    @staticmethod
    def _vectors(collection: _Collection, vector: Any) -> dict[str, np.ndarray]:
        given = {"": vector} if isinstance(vector, list) else vector
        if not isinstance(given, dict):
            raise _Error(400, "Wrong input: the test double accepts dense float vectors only")
        stored = {}
        for vector_name, values in given.items():
            params = collection.dense.get(vector_name)
            if params is None:
                shown = vector_name or "default vector"
                raise _Error(400, f"Wrong input: Not existing vector name error: {shown}")
            if not isinstance(values, list) or not all(isinstance(x, float | int) for x in values):
                raise _Error(400, "Wrong input: the test double accepts dense float vectors only")
            array = np.asarray(values, dtype=np.float64).astype(np.float32)
            if array.size != params.size:
                raise _Error(400, f"Wrong input: Vector dimension error: expected dim: {params.size}, got {array.size}")
            if params.distance == models.Distance.COSINE:
                norm = np.sqrt(np.sum(array * array, dtype=np.float32), dtype=np.float32)
                if norm > _EPSILON:
                    array = (array / norm).astype(np.float32)
            stored[vector_name] = array
        return stored

    def _scroll(self, name: str, body: bytes) -> models.ScrollResult:
        request = _parse(models.ScrollRequest, body or b"{}")
        if request.filter is not None or request.order_by is not None or request.shard_key is not None:
            raise _Error(400, "Wrong input: the test double does not implement filter, order_by or shard_key")
        limit = 10 if request.limit is None else request.limit
        if limit < 1:
            raise _Error(422, "Validation error in JSON body: [limit]: value 0 invalid, must be 1 or larger")
        start = None if request.offset is None else _order_key(_point_id(request.offset))
        with self._lock:
            collection = self._collection(name)
            ordered = sorted(collection.points, key=_order_key)
            chosen = [i for i in ordered if start is None or _order_key(i) >= start][: limit + 1]
            records = [self._record(collection, i, request.with_payload, request.with_vector) for i in chosen[:limit]]
        next_offset = chosen[limit] if len(chosen) > limit else None
        return models.ScrollResult(points=records, next_page_offset=next_offset)

    def _query(self, name: str, body: bytes) -> models.QueryResponse:
        """Nearest neighbours of a plain dense query vector, by the vector's own distance (cosine, dot, euclid)."""
        request = _parse(models.QueryRequest, body or b"{}")
        if request.filter is not None or request.prefetch is not None or request.offset:
            raise _Error(400, "Wrong input: the test double does not implement filter, prefetch or offset")
        query = request.query.nearest if isinstance(request.query, models.NearestQuery) else request.query
        if not isinstance(query, list) or not all(isinstance(x, int | float) for x in query):
            raise _Error(400, "Wrong input: the test double answers dense vector queries only")
        with self._lock:
            collection = self._collection(name)
            using = request.using or ""
            if using not in collection.dense:
                raise _Error(400, f"Wrong input: Not existing vector name error: {using}")
            target = np.asarray(query, dtype=np.float32)
            distance = collection.dense[using].distance
            scored = []
            for point_id, (vectors, _) in collection.points.items():
                if using not in vectors:
                    continue
                stored = vectors[using]
                if distance == models.Distance.EUCLID:
                    score = float(np.linalg.norm(stored - target))
                elif distance == models.Distance.COSINE:
                    score = float(stored @ target / max(np.linalg.norm(stored) * np.linalg.norm(target), 1e-12))
                else:
                    score = float(stored @ target)
                scored.append((score, point_id))
            scored.sort(key=lambda pair: pair[0], reverse=distance != models.Distance.EUCLID)
            limit = 10 if request.limit is None else request.limit
            points = []
            for score, point_id in scored[:limit]:
                with_vector = request.with_vector if self.query_vectors else False
                record = self._record(collection, point_id, request.with_payload or False, with_vector)
                points.append(
                    models.ScoredPoint(
                        id=point_id, version=0, score=score, payload=record.payload, vector=record.vector
                    )
                )
        return models.QueryResponse(points=points)

    @staticmethod
    def _record(collection: _Collection, point_id: int | str, with_payload: Any, with_vector: Any) -> models.Record:
        vectors, payload = collection.points[point_id]
        if with_payload is None or with_payload is True:
            shown_payload: dict[str, Any] | None = payload
        elif isinstance(with_payload, list):
            shown_payload = {k: v for k, v in payload.items() if k in with_payload}
        elif with_payload is False:
            shown_payload = None
        else:
            raise _Error(400, "Wrong input: the test double supports with_payload as a bool or a list of keys")
        vector: Any = None
        if with_vector is True or isinstance(with_vector, list):
            wanted = vectors if with_vector is True else {k: v for k, v in vectors.items() if k in with_vector}
            vector = {k: v.tolist() for k, v in wanted.items()}
            if not collection.named:
                vector = vector.get("")
        return models.Record(id=point_id, payload=shown_payload, vector=vector)

    def _count(self, name: str, body: bytes) -> models.CountResult:
        request = _parse(models.CountRequest, body or b"{}")
        if request.filter is not None or request.shard_key is not None:
            raise _Error(400, "Wrong input: the test double does not implement filter or shard_key")
        with self._lock:
            return models.CountResult(count=len(self._collection(name).points))


class _Handler(QuietHandler):
    owner: QdrantRestDouble

    def _handle(self, method: str) -> None:
        status, content, content_type = self.owner.handle(method, self.path, self.headers, self._read_body())
        self._reply(status, content, content_type)


def _is_write(method: str, path: str) -> bool:
    if method in ("GET", "HEAD"):
        return False
    match = _COLLECTION.match(path)
    if method == "POST" and match is not None:
        rest = (match.group("rest") or "").removeprefix("/points")
        return not ((rest == "" and match.group("rest") == "/points") or rest.lstrip("/") in _READ_POSTS)
    return True


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except ValueError as exc:
        raise _Error(400, f"Format error in JSON body: {exc}") from exc


def _parse(model: type[BaseModel], body: Any) -> Any:
    try:
        return model.model_validate(_json(body) if isinstance(body, bytes) else body)
    except ValidationError as exc:
        raise _Error(400, f"Format error in JSON body: {exc.errors()[0].get('msg', 'invalid')}") from exc


def _error_body(status: int, message: str, started: float) -> tuple[int, bytes, str]:
    body = {"status": {"error": message}, "time": time.perf_counter() - started}
    return status, json.dumps(body).encode(), "application/json"
