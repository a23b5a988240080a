"""Pinecone adapter: one index (every namespace, or one), through the official ``pinecone`` SDK (7.x or 10.x)."""

from __future__ import annotations

import json
import math
import numbers
import os
import socket
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

import numpy as np
from pinecone import Pinecone, ServerlessSpec
from vdbguard.connectors.base import STORE_WIDE, CollectionInfo, Connector
from vdbguard.connectors.support import (
    StoreCalls,
    Tls,
    close_quietly,
    http_status_is_transient,
    metric_name,
    store_metric,
    tls_hint,
)

from vdbguard.credentials import redact_url, scrub, split_userinfo
from vdbguard.errors import CollectionNotFoundError, ConnectorError, RecordError, VdbguardError
from vdbguard.records import Batch, VectorRecord

_METRICS = {"cosine": "cosine", "l2": "euclidean", "ip": "dotproduct"}  # vdbguard metric -> Pinecone metric
_DEFAULT_NAMESPACES = ("", "__default__")  # how the default namespace is named in stats and requests
_LIST_LIMIT_MAX = 100  # the largest page /vectors/list serves
_DELETE_LIMIT = 1000  # the most ids one /vectors/delete request takes
_UPSERT_MAX_VECTORS = 100
_UPSERT_MAX_BYTES = 1_500_000  # Pinecone caps an upsert request at 2 MB
_METADATA_MAX_BYTES = 40 * 1024
_DEFAULT_CONTROL_HOST = "https://api.pinecone.io"
_TRANSIENT_NAMES = frozenset(
    {
        "PineconeConnectionError",  # pinecone 10.x, after the SDK's own retries
        "PineconeTimeoutError",
        "TransportError",  # httpx
        "MaxRetryError",  # urllib3 (pinecone 7.x), after the SDK's own retries
        "ProtocolError",
        "NewConnectionError",
        "TimeoutError",
        "ConnectionError",
    }
)


class PineconeConnector(StoreCalls, Connector):
    """One Pinecone index, read namespace by namespace through the official SDK (pinecone 7.x or 10.x).

    What is read: every namespace that ``describe_index_stats`` reports (or only ``namespace``), in
    name order; in each, the record IDs page by page with ``list_paginated`` (``GET /vectors/list``,
    at most ``min(batch_size, 100)`` IDs a page: the API serves no more), then those records'
    vectors and metadata with ``fetch``. Each page becomes one batch. Metadata is the payload;
    Pinecone has no document field, so ``text`` stays None when reading (a stored ``"text"``
    metadata key stays in the payload). Records in the default namespace (``""``, also called
    ``"__default__"``) get ``namespace=None``; other records carry their namespace's name. Dense
    values come back as float32, bit for bit (Pinecone stores float32); sparse values are not read.

    Cursors are JSON: ``{"namespace": NS, "token": T}``, where ``T`` is Pinecone's own pagination
    token for the next page of ``NS`` (``null``: ``NS`` is finished, continue with the namespaces
    after it in name order). Resuming re-reads the namespace list, so namespaces created after the
    scan started are read if their names sort after the cursor's. ``list`` returns IDs in sorted
    (bitwise) order and its token encodes the last ID returned, so IDs inserted behind the cursor
    during a scan are missed, IDs inserted ahead are read, and deleted IDs simply vanish (a record
    deleted between ``list`` and ``fetch`` is skipped). Pinecone is eventually consistent: a scan
    right after a write may not see it yet, and ``describe_index_stats`` counts and namespace
    lists lag writes by seconds on serverless indexes.

    Connection: ``api_key`` (or ``PINECONE_API_KEY``); ``url`` is the control-plane host (default
    ``PINECONE_CONTROLLER_HOST``, else ``https://api.pinecone.io``), used to describe, list and
    create indexes; ``host`` is the index's data-plane URL (default: the ``host`` the control plane
    describes; pass it to skip that lookup). A host without a scheme means https. Before the first
    request to each host the connector opens one TCP connection to it (``probe_timeout`` seconds) so
    that an unreachable host fails fast with its host:port instead of after the SDK's retries.

    Retries: the SDK retries 5xx (and, 10.x, 408/429) answers and connection errors itself
    (pinecone 10.x: 3 retries with jittered backoff; 7.x: urllib3, 5 retries on 500-504); what
    still fails transiently after that (429 on 7.x, exhausted SDK retries) is retried again by the
    connector with ``connectors.support.with_retries``.

    Writes: ``upsert`` fully replaces records (Pinecone's upsert overwrites values and metadata),
    writing ``record.text`` to metadata key ``"text"`` when it is not None. Metadata values must
    be strings, numbers, booleans or lists of strings (None values are dropped) and at most 40 KB a
    record; numbers come back as floats (Pinecone stores metadata numbers as 64-bit floats).
    ``ensure_collection`` creates a serverless index in ``cloud``/``region``.
    """

    name: ClassVar[str] = "pinecone"

    def __init__(
        self,
        *,
        collection: str,
        api_key: str | None = None,
        url: str | None = None,
        host: str | None = None,
        namespace: str | None = None,
        cloud: str = "aws",
        region: str = "us-east-1",
        probe_timeout: float | str = 5.0,
        create_timeout: int | str = 300,
        tls_verify: bool | str = True,
    ) -> None:
        self.collection_name = collection
        self._api_key = str(api_key or os.environ.get("PINECONE_API_KEY") or "")  # the CLI may pass numbers
        if not self._api_key:
            raise VdbguardError(
                "the pinecone connector needs an API key",
                "pass --option api_key=... or set PINECONE_API_KEY (Pinecone Local accepts any value)",
            )
        self.control_url = _normalise_url(
            str(url or os.environ.get("PINECONE_CONTROLLER_HOST") or _DEFAULT_CONTROL_HOST)
        )
        self._host = _normalise_url(str(host)) if host else None
        namespace = None if namespace is None else str(namespace)
        self.namespace = None if namespace is None else ("" if namespace in _DEFAULT_NAMESPACES else namespace)
        self.cloud = cloud
        self.region = region
        self.probe_timeout = float(probe_timeout)
        self.create_timeout = int(create_timeout)
        self._tls = Tls(tls_verify, self.control_url)
        self._sdk: Any = None
        self._index: Any = None
        self._probed: set[str] = set()

    # -- connection handling -------------------------------------------------------------------

    def _client(self) -> Any:
        if self._sdk is None:
            try:
                self._sdk = Pinecone(
                    api_key=self._api_key,
                    host=self.control_url,
                    ssl_verify=self._tls.verify,
                    ssl_ca_certs=self._tls.ca_file,
                )
            except Exception as exc:
                raise VdbguardError(
                    f"cannot set up the Pinecone client: {type(exc).__name__}: {self._scrub(str(exc))}",
                    "check the api_key and url options",
                ) from exc
        return self._sdk

    def _control(self) -> Any:
        self._probe(self.control_url, "control plane")
        return self._client()

    def _data(self) -> Any:
        if self._index is None:
            host = self._host or self._describe_index_model_host()
            self._probe(host, "index host")
            self._index = self._call("open index", lambda: self._client().Index(host=host))
            self._host = host
        return self._index

    def _describe_index_model_host(self) -> str:
        host = _attr(self._describe_index(), "host")
        if not host:
            raise ConnectorError(
                f"Pinecone index {self.collection_name!r} has no host yet",
                "the index is still initializing; wait until it is Ready, or pass its host",
            )
        return _normalise_url(str(host))

    def _probe(self, url: str, what: str) -> None:
        """One TCP connect, so an unreachable host fails in seconds and names itself."""
        if url in self._probed:
            return
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            with socket.create_connection((host, port), timeout=self.probe_timeout):
                pass
        except OSError as exc:
            shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            raise ConnectorError(
                f"cannot reach the Pinecone {what} at {shown}: {exc.strerror or type(exc).__name__}",
                "check the url (control plane) and host (index) options and your network; "
                "for Pinecone Local use url=http://localhost:5080",
            ) from exc
        self._probed.add(url)

    store: ClassVar[str] = "Pinecone"

    def _transient(self, exc: BaseException) -> bool:
        status = _status(exc)
        if status is not None:
            return http_status_is_transient(status)
        return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)

    def _failed(self, what: str, exc: BaseException) -> ConnectorError:
        status = _status(exc)
        if status in (401, 403):
            return ConnectorError(
                f"Pinecone rejected the API key (HTTP {status}) for {what}{self._on_index()}",
                "the credentials are wrong or lack access to this project: check the api_key option or "
                "PINECONE_API_KEY",
            )
        if status is None and self._transient(exc):
            return ConnectorError(
                f"cannot reach Pinecone for {what}{self._on_index()} "
                f"({self.control_url if self._host is None else self._host}): {type(exc).__name__}",
                "check the url and host options and your network" + tls_hint(exc),
            )
        shown = f"HTTP {status}: " if status else ""
        return ConnectorError(
            f"Pinecone {what}{self._on_index()} failed: {shown}{type(exc).__name__}: {self._scrub(str(exc))[:500]}"
        )

    def _scrub(self, text: str) -> str:
        return scrub(text, [self._api_key])

    def _on_index(self) -> str:
        """The index a message is about; none while listing the project's indexes."""
        return "" if self.collection_name == STORE_WIDE else f" on index {self.collection_name!r}"

    def _describe_index(self) -> Any:
        client = self._control()
        try:
            return self._call("describe_index", client.describe_index, self.collection_name)
        except ConnectorError as exc:
            cause = exc.__cause__
            if cause is not None and _status(cause) == 404:
                raise self._not_found() from cause
            raise

    def _not_found(self) -> CollectionNotFoundError:
        try:
            names = sorted(str(_attr(i, "name")) for i in self._client().list_indexes())
        except Exception:
            names = []
        return CollectionNotFoundError(
            f"Pinecone index {self.collection_name!r} not found at {self.control_url}",
            f"existing indexes: {', '.join(names)}" if names else "no index found there: check the url (control plane)",
        )

    def _stats(self) -> Any:
        index = self._data()
        return self._call("describe_index_stats", lambda: index.describe_index_stats())

    def _namespace_counts(self, stats: Any) -> dict[str, int]:
        summaries = _attr(stats, "namespaces") or {}
        counts = {str(ns): int(_attr(summary, "vector_count") or 0) for ns, summary in summaries.items()}
        if self.namespace is not None:
            counts = {ns: n for ns, n in counts.items() if _same_namespace(ns, self.namespace)}
        return counts

    # -- Connector API -------------------------------------------------------------------------

    def _collection_names(self) -> list[str]:
        """The project's indexes (``GET /indexes`` on the control plane); namespaces stay inside each."""
        client = self._control()
        return [str(_attr(index, "name")) for index in self._call("list_indexes", client.list_indexes)]

    def describe(self) -> CollectionInfo:
        model = self._describe_index()
        stats = self._stats()
        counts = self._namespace_counts(stats)
        dimension = _attr(model, "dimension") or _attr(stats, "dimension")
        metric = _attr(model, "metric") or _attr(stats, "metric")
        total = sum(counts.values()) if self.namespace is not None else int(_attr(stats, "total_vector_count") or 0)
        return CollectionInfo(
            name=self.collection_name,
            dimension=int(dimension) if dimension else None,
            count=total,
            metric=metric_name(str(metric)) if metric else None,
            namespaces=tuple(sorted(counts)),
            extra={"host": self._host, "control_plane": self.control_url},
        )

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        """Pages of at most ``min(batch_size, 100)`` records, namespace by namespace in name order.

        Every batch carries a cursor; resuming from the last one yields nothing.
        """
        if batch_size < 1:
            raise VdbguardError(f"batch_size must be at least 1, got {batch_size}")
        start_ns, start_token = _parse_cursor(resume_from) if resume_from is not None else (None, None)
        index = self._data()
        names = sorted(self._namespace_counts(self._stats()))
        if start_ns is not None:
            names = [ns for ns in names if ns > start_ns]
            if start_token is not None and (self.namespace is None or _same_namespace(start_ns, self.namespace)):
                names.insert(0, start_ns)
        limit = min(batch_size, _LIST_LIMIT_MAX)
        for position, namespace in enumerate(names):
            token = start_token if position == 0 and namespace == start_ns else None
            while True:
                page = self._call(
                    "list",
                    lambda ns=namespace, t=token: index.list_paginated(namespace=ns, limit=limit, pagination_token=t),
                )
                ids = [str(_attr(item, "id")) for item in (_attr(page, "vectors") or [])]
                pagination = _attr(page, "pagination")
                token = (_attr(pagination, "next") if pagination is not None else None) or None
                if ids:
                    cursor = json.dumps({"namespace": namespace, "token": token})
                    yield Batch(self._fetch(index, namespace, ids), cursor)
                if token is None:
                    break

    def _fetch(self, index: Any, namespace: str, ids: list[str]) -> list[VectorRecord]:
        fetched = self._call("fetch", lambda: index.fetch(ids=ids, namespace=namespace))
        vectors = _attr(fetched, "vectors") or {}
        records = []
        for record_id in ids:  # list order; IDs deleted since the list are skipped
            vector = vectors.get(record_id)
            if vector is None:
                continue
            values = _attr(vector, "values")
            metadata = _attr(vector, "metadata")
            records.append(
                VectorRecord(
                    id=record_id,
                    vector=np.asarray(values, dtype=np.float32) if values else None,
                    payload=dict(metadata) if metadata else {},
                    collection=self.collection_name,
                    namespace=None if namespace in _DEFAULT_NAMESPACES else namespace,
                )
            )
        return records

    def query_vector(self, vector: Sequence[float]) -> list[float] | None:
        """A query with ``include_values`` in the first namespace that holds records."""
        index = self._data()
        counts = self._namespace_counts(self._stats())
        namespace = next((ns for ns, n in sorted(counts.items()) if n), None)
        if namespace is None:
            return None
        found = self._call(
            "query",
            lambda: index.query(vector=list(vector), top_k=1, include_values=True, namespace=namespace),
        )
        matches = _attr(found, "matches") or []
        values = _attr(matches[0], "values") if matches else None
        return [float(x) for x in values] if values else None

    def delete(self, ids: Sequence[str]) -> None:
        """Delete the ids from every namespace (or only ``namespace``), 1,000 ids a request (the API's limit)."""
        if not ids:
            return
        index = self._data()
        namespaces = sorted(self._namespace_counts(self._stats())) or [self.namespace or ""]
        for namespace in namespaces:
            for start in range(0, len(ids), _DELETE_LIMIT):
                chunk = list(ids[start : start + _DELETE_LIMIT])
                self._call("delete", lambda c=chunk, ns=namespace: index.delete(ids=c, namespace=ns))

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Write ``records`` (each fully replacing a stored record with its id and namespace).

        Everything is validated before the first request (fail closed). Records go to their own
        namespace, else to the connector's ``namespace``, else to the default one.
        """
        if not records:
            return
        index = self._data()
        dimension = _attr(self._stats(), "dimension")
        groups: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            if not isinstance(record.id, str) or not 1 <= len(record.id) <= 512:
                raise RecordError(str(record.id), "id", "must be a string of 1 to 512 characters for Pinecone")
            vector: dict[str, Any] = {
                "id": record.id,
                "values": record.checked_vector(int(dimension) if dimension else None).tolist(),
            }
            metadata = _metadata(record)
            if metadata:
                vector["metadata"] = metadata
            namespace = record.namespace if record.namespace is not None else (self.namespace or "")
            groups.setdefault("" if namespace in _DEFAULT_NAMESPACES else namespace, []).append(vector)
        for namespace, vectors in groups.items():
            for chunk in _chunks(vectors):
                self._call("upsert", lambda c=chunk, ns=namespace: index.upsert(vectors=c, namespace=ns))

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        if len(vector_names) > 1:
            raise VdbguardError("Pinecone stores one dense vector per record", "use one index per vector name")
        pinecone_metric = store_metric(metric, _METRICS)
        if pinecone_metric is None:
            raise VdbguardError(f"Pinecone has no {metric!r} metric", "use cosine, l2 or ip")
        try:
            self._describe_index()
            return  # exists: never altered
        except CollectionNotFoundError:
            pass
        client = self._control()
        spec = ServerlessSpec(cloud=self.cloud, region=self.region)

        def create() -> None:
            try:
                client.create_index(
                    name=self.collection_name,
                    dimension=int(dimension),
                    metric=pinecone_metric,
                    spec=spec,
                    timeout=self.create_timeout,
                )
            except Exception as exc:
                if _status(exc) != 409:  # 409: created meanwhile (or by a retried request)
                    raise

        self._call("create_index", create)
        self._index = None

    def close(self) -> None:
        for client in (self._index, self._sdk):
            close_quietly(client)
        self._index = self._sdk = None


def _attr(obj: Any, name: str) -> Any:
    """An attribute of an SDK model (7.x openapi models, 10.x msgspec structs), or None."""
    if obj is None:
        return None
    try:
        return getattr(obj, name)
    except (AttributeError, KeyError):
        pass
    if isinstance(obj, dict):
        return obj.get(name)
    return None


def _status(exc: BaseException) -> int | None:
    for name in ("status_code", "status"):  # 10.x ApiError.status_code, 7.x PineconeApiException.status
        value = getattr(exc, name, None)
        if isinstance(value, int):
            return value
    return None


def _same_namespace(a: str, b: str) -> bool:
    return a == b or (a in _DEFAULT_NAMESPACES and b in _DEFAULT_NAMESPACES)


def _normalise_url(url: str) -> str:
    """``https://`` unless a scheme is given (as the SDK does); rejects what the probe could not dial."""
    url = url.strip().rstrip("/")
    url = url if "://" in url else f"https://{url}"
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        parts = parts._replace(netloc="")
    if parts.scheme not in ("http", "https") or not parts.hostname or split_userinfo(url).userinfo is not None:
        shown = redact_url(url)
        raise VdbguardError(
            f"unsupported Pinecone URL {shown!r}", "use https://HOST or http://HOST:PORT, no credentials"
        )
    return url


def _parse_cursor(cursor: str) -> tuple[str, str | None]:
    try:
        state = json.loads(cursor)
        namespace, token = state["namespace"], state["token"]
        if isinstance(namespace, str) and (token is None or isinstance(token, str)):
            return namespace, token
    except (ValueError, TypeError, KeyError):
        pass
    raise VdbguardError(
        f"bad Pinecone resume cursor {cursor!r}",
        'pass a cursor taken from a pinecone scan (like {"namespace": "ns", "token": null}), or none to start over',
    )


def _metadata(record: VectorRecord) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.payload.items():
        if not isinstance(key, str):
            raise RecordError(record.id, "payload", f"has a non-string key {key!r}")
        if value is None:
            continue  # Pinecone has no null metadata; an absent key means the same after a full replace
        out[key] = _metadata_value(record.id, key, value)
    if record.text is not None:
        out["text"] = record.text
    if len(json.dumps(out).encode()) > _METADATA_MAX_BYTES:
        raise RecordError(record.id, "payload", "is larger than Pinecone's 40 KB metadata limit")
    return out


def _metadata_value(record_id: str, key: str, value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        if not math.isfinite(float(value)):
            raise RecordError(record_id, f"payload.{key}", "is not a finite number")
        return float(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise RecordError(
        record_id,
        f"payload.{key}",
        f"has type {type(value).__name__}; Pinecone metadata values are strings, numbers, booleans or lists of strings",
    )


def _chunks(vectors: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Upsert requests of at most 100 vectors and about 1.5 MB each."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for vector in vectors:
        weight = 24 * len(vector["values"]) + len(json.dumps(vector.get("metadata") or {})) + 64
        if chunk and (len(chunk) == _UPSERT_MAX_VECTORS or size + weight > _UPSERT_MAX_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(vector)
        size += weight
    if chunk:
        yield chunk
