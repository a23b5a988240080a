"""Weaviate adapter: one collection of a Weaviate server, through the official v4 client (REST + gRPC)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import grpc
import httpx
import numpy as np
import weaviate
from vdbguard.connectors.base import STORE_WIDE, CollectionInfo, Connector
from vdbguard.connectors.support import (
    StoreCalls,
    Tls,
    certificate_refused,
    http_status_is_transient,
    metric_name,
    server_url,
)
from weaviate.classes.data import DataObject
from weaviate.classes.init import AdditionalConfig, Auth, Timeout
from weaviate.classes.query import Filter
from weaviate.classes.tenants import Tenant, TenantActivityStatus
from weaviate.connect.base import ConnectionParams
from weaviate.exceptions import (
    InsufficientPermissionsError,
    UnexpectedStatusCodeError,
    WeaviateConnectionError,
    WeaviateRetryError,
    WeaviateStartUpError,
    WeaviateTimeoutError,
)

from vdbguard.credentials import scrub
from vdbguard.errors import CollectionNotFoundError, ConnectorError, PartialWriteError, RecordError, VdbguardError
from vdbguard.records import Batch, VectorRecord

log = logging.getLogger("vdbguard.connectors")

_DISTANCES = {"cosine": "cosine", "l2": "l2-squared", "ip": "dot"}  # vdbguard metric -> Weaviate distance
_PROPERTY_NAME = re.compile(r"^[_A-Za-z][_0-9A-Za-z]{0,230}$")
_RESERVED = {"id", "_id", "vector", "_additional"}
_TRANSIENT_CODES = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED}
_ACTIVE = {TenantActivityStatus.ACTIVE, TenantActivityStatus.HOT}
_HINT = (
    "is Weaviate running? the v4 client needs both its REST port (url=, default 8080) and its gRPC port "
    "(grpc_port=, default 50051, or grpc_url=HOST:PORT)"
)


class WeaviateConnector(StoreCalls, Connector):
    """One Weaviate collection (class), read and written through ``weaviate-client`` v4.

    Connection: ``url`` is the REST endpoint (``http(s)://HOST:PORT``, default port 8080/443); the
    client reads and writes objects over gRPC, at ``grpc_url`` (``HOST:PORT``, ``https://`` for TLS) or
    else the URL's host with ``grpc_port`` (default 50051; Weaviate Cloud hosts use ``grpc-HOST:443``).
    ``api_key`` (or ``$WEAVIATE_API_KEY``) is sent as a bearer token; it and ``headers`` never appear in
    logs or errors. The client is created with ``skip_init_checks`` (its init checks would also call
    PyPI); instead the gRPC port is probed once, so a closed gRPC port fails in seconds rather than after
    the client's own UNAVAILABLE back-off (weaviate-client 4.23 sleeps 1, 2, 4, ... s per retry: 1/3/7 s
    measured for 1/2/3 UNAVAILABLE answers in a row, 63 s before it gives up). TLS: both channels verify;
    ``tls_verify`` may name a private CA's PEM file (gRPC gets it as channel credentials, REST through
    ``trust_env`` and ``SSL_CERT_FILE`` while the client is built); it cannot be False, since gRPC always checks.

    What is read: every object of the collection with its properties (the payload; Weaviate has no
    separate document field, so ``text`` stays None and a ``text`` property stays in the payload) and its
    vectors. A legacy single-vector collection yields ``vector`` and no ``named_vectors``; a collection
    with named vectors yields all of them in ``named_vectors`` and ``vector_name`` (default: the first
    in the schema) as ``vector`` (``vector_name="default"`` picks the legacy vector of a collection that
    also has named ones; the client then returns only that one). Multi-tenant collections are read
    tenant by tenant (sorted by name;
    ``tenants=`` restricts the scan, as a list or a comma-separated string); ``record.namespace`` is the
    tenant. A scan refuses to start if a selected tenant is inactive (COLD/FROZEN/OFFLOADED), since
    reading it would need an activation (a write); activate it or leave it out with ``tenants=``.
    Values come back as the server typed them: an auto-schema'd property holding numbers sent through
    gRPC (which carries them as doubles) is ``number`` by Weaviate's default, so ints written by
    ``upsert`` read back as floats; dates and UUIDs are returned as ISO / canonical strings.

    Paging and cursors: objects are fetched with Weaviate's cursor API (gRPC ``Search`` with ``after``
    = last UUID, ``limit`` = batch size), which walks a shard in UUID order. The cursor is JSON
    ``{"tenant": ..., "after": ...}``, so a scan resumes after the last UUID even in a new process.
    Concurrent writes: objects inserted behind the cursor position (smaller UUID) are missed, ones ahead
    of it are read; updates are seen if not yet passed; deletions never cause duplicates or skips.

    Writes: ``upsert`` validates every record first (vector, UUID id, property names; nothing is sent
    if one is bad), then sends gRPC batches per tenant. A Weaviate batch replaces an object with the
    same UUID entirely, so payload keys absent from the new record are removed. ``record.text``, when
    not None, is stored as the ``text`` property. Batches are not atomic: a server-side rejection of
    some objects leaves the others written (and is raised as an error). Missing tenants are created.
    ``ensure_collection`` creates the collection with a ``none`` vectorizer and an HNSW index with the
    given metric (Weaviate takes the dimension from the first vector); multi-tenancy is fixed at
    creation: ``multi_tenancy=True``/``False`` decides it, while the default (``None``) creates a
    single-tenant collection and, if the first upsert through the same connector brings namespaced
    records while the collection it just created is still empty, recreates it as multi-tenant.
    """

    name: ClassVar[str] = "weaviate"

    def __init__(
        self,
        *,
        collection: str,
        url: str = "http://127.0.0.1:8080",
        grpc_port: int | str | None = None,
        grpc_url: str | None = None,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        vector_name: str | None = None,
        tenants: str | Sequence[str] | None = None,
        multi_tenancy: bool | str | None = None,
        timeout: float | str = 60.0,
        connect_timeout: float | str = 5.0,
        tls_verify: bool | str = True,
    ) -> None:
        if not collection:
            raise VdbguardError("the weaviate connector needs a collection name")
        self.collection_name = collection
        self.vector_name = vector_name or None
        self.tenants = _names(tenants)
        self.multi_tenancy = _tristate(multi_tenancy, "multi_tenancy")
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self._api_key = api_key or os.environ.get("WEAVIATE_API_KEY") or None
        self._headers = dict(headers) if headers else None
        self._parse_urls(url, grpc_port, grpc_url)
        tls = Tls(tls_verify, self.location)
        if not tls.verify:
            raise VdbguardError(
                "the weaviate connector cannot turn TLS verification off (its gRPC channel always checks)",
                "pass --ca-cert with the CA that signed the server's certificate instead of --insecure",
            )
        self._ca_file = tls.ca_file
        self._client: Any = None
        self._created_here: tuple[str, tuple[str, ...]] | None = None

    # -- connection ------------------------------------------------------------------------------

    def _parse_urls(self, url: str, grpc_port: int | str | None, grpc_url: str | None) -> None:
        parts = server_url(url, "Weaviate", 8080)
        self._http = (parts.hostname, parts.port, parts.secure)
        host = parts.hostname
        if grpc_url:
            gparts = urlsplit(grpc_url if "://" in grpc_url else f"grpc://{grpc_url}")
            try:
                gport = gparts.port
            except ValueError as exc:
                raise VdbguardError(f"bad port in Weaviate gRPC URL {grpc_url!r}", "use HOST:PORT") from exc
            if not gparts.hostname:
                raise VdbguardError(f"unsupported Weaviate gRPC URL {grpc_url!r}", "use HOST:PORT or https://HOST:PORT")
            secure = gparts.scheme in ("https", "grpcs")
            self._grpc = (gparts.hostname, gport or (443 if secure else 50051), secure)
        elif grpc_port is None and host.endswith((".weaviate.cloud", ".weaviate.network")):
            self._grpc = (f"grpc-{host}", 443, True)  # Weaviate Cloud's gRPC endpoint
        else:
            try:
                gport = int(grpc_port) if grpc_port is not None else 50051
            except ValueError as exc:
                raise VdbguardError(f"grpc_port must be a number, got {grpc_port!r}") from exc
            self._grpc = (host, gport, self._http[2])
        self.location = f"{parts.scheme}://{_hostport(*self._http[:2])}"
        self.grpc_location = _hostport(*self._grpc[:2])

    def _connection(self) -> Any:
        if self._client is not None:
            return self._client
        http_host, http_port, http_secure = self._http
        grpc_host, grpc_port, grpc_secure = self._grpc
        try:
            params = ConnectionParams.from_params(http_host, http_port, http_secure, grpc_host, grpc_port, grpc_secure)
        except ValueError as exc:
            raise VdbguardError(f"bad Weaviate connection settings: {exc}") from exc

        timeout = Timeout(init=self.connect_timeout, query=self.timeout, insert=self.timeout)
        config = AdditionalConfig(timeout=timeout)
        if self._ca_file:
            try:
                from weaviate.classes.init import GrpcConfig
            except ImportError as exc:
                raise VdbguardError(
                    "this weaviate-client cannot take a CA for its gRPC channel (no GrpcConfig)",
                    "upgrade it (pip install -U weaviate-client) to use --ca-cert",
                ) from exc
            ca = grpc.ssl_channel_credentials(root_certificates=Path(self._ca_file).read_bytes())
            config = AdditionalConfig(timeout=timeout, trust_env=True, grpc_config=GrpcConfig(credentials=ca))

        def connect() -> Any:
            with _rest_trusting(self._ca_file):
                client = weaviate.WeaviateClient(
                    connection_params=params,
                    auth_client_secret=Auth.api_key(self._api_key) if self._api_key else None,
                    additional_headers=self._headers,
                    additional_config=config,
                    skip_init_checks=True,
                )
                try:
                    client.connect()
                except BaseException:
                    client.close()
                    raise
            return client

        client = self._call("connect", connect)
        try:
            self._probe_grpc()
        except BaseException:
            client.close()
            raise
        self._client = client
        return client

    def _probe_grpc(self) -> None:
        """The client only finds a closed gRPC port on the first query, after ~63 s of back-off."""
        host, port, secure = self._grpc
        target = _hostport(host, port)
        if secure:
            roots = Path(self._ca_file).read_bytes() if self._ca_file else None
            channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=roots))
        else:
            channel = grpc.insecure_channel(target)
        try:
            grpc.channel_ready_future(channel).result(timeout=self.connect_timeout)
        except grpc.FutureTimeoutError as exc:
            raise ConnectorError(
                f"cannot reach Weaviate's gRPC endpoint at {self.grpc_location} "
                f"(REST at {self.location} answered) within {self.connect_timeout:g} s",
                "expose Weaviate's gRPC port (default 50051) and pass grpc_port= or grpc_url=HOST:PORT",
            ) from exc
        finally:
            channel.close()

    def _collection(self, tenant: str | None = None) -> Any:
        collection = self._connection().collections.use(self.collection_name)
        return collection.with_tenant(tenant) if tenant else collection

    store: ClassVar[str] = "Weaviate"

    def _transient(self, exc: BaseException) -> bool:
        """429/5xx answers, read timeouts and dropped responses are retried; refused connections are not
        (an unreachable server fails fast), nor is UNAVAILABLE after the client's own back-off gave up."""
        chain = list(_chain(exc))
        if any(isinstance(item, WeaviateRetryError) for item in chain) or _is_connection_error(exc):
            return False
        status = _http_status(exc)
        if status is not None:
            return http_status_is_transient(status)
        code = _grpc_code(exc)
        if code is not None:
            return code in _TRANSIENT_CODES
        return any(isinstance(item, WeaviateTimeoutError | httpx.TransportError) for item in chain)

    def _failed(self, what: str, exc: BaseException) -> VdbguardError:
        status, code = _http_status(exc), _grpc_code(exc)
        if status == 401 or code == grpc.StatusCode.UNAUTHENTICATED:
            which = "the API key was rejected" if self._api_key else "no API key was given"
            return ConnectorError(
                f"Weaviate at {self.location} refused the credentials ({which})",
                "pass the right api_key= or set WEAVIATE_API_KEY (the auth header is never logged)",
            )
        if status == 403 or code == grpc.StatusCode.PERMISSION_DENIED or isinstance(exc, InsufficientPermissionsError):
            return ConnectorError(
                f"the Weaviate API key is not authorised to {what}"
                + ("" if self.collection_name == STORE_WIDE else f" on {self.collection_name!r}")
                + f" at {self.location}",
                "grant the key's role read access to the collection (and its tenants)",
            )
        if _is_connection_error(exc):
            refused = certificate_refused(exc)
            return ConnectorError(
                f"cannot connect to Weaviate at {self.location} (gRPC {self.grpc_location}): "
                f"{type(exc).__name__}: {self._scrub(str(exc))}"
                + (": the server's TLS certificate was not trusted" if refused else ""),
                "give the CA that signed it with --ca-cert FILE" if refused else _HINT,
            )
        return self._failure(what, exc)

    def _scrub(self, text: str) -> str:
        return scrub(text, [self._api_key, *(self._headers or {}).values()], shortest=4)[:2000]

    # -- schema --------------------------------------------------------------------------------------

    def _config(self) -> Any:
        collection = self._collection()

        def get() -> Any:
            try:
                return collection.config.get()
            except UnexpectedStatusCodeError as exc:
                if exc.status_code == 404:
                    return None
                raise

        config = self._call("get collection config", get)
        if config is None:
            raise self._not_found()
        return config

    def _not_found(self) -> CollectionNotFoundError:
        try:
            names = sorted(self._connection().collections.list_all(simple=True))
        except Exception:
            names = []
        return CollectionNotFoundError(
            f"Weaviate collection {self.collection_name!r} not found at {self.location}",
            f"existing collections: {', '.join(names) if names else 'none'} (Weaviate capitalises the first letter)",
        )

    def _layout(self, config: Any) -> tuple[tuple[str, ...], str | None]:
        """(named vector names, the name that becomes ``.vector``: None for the legacy unnamed vector)."""
        named = tuple(config.vector_config or {})
        if self.vector_name is None or self.vector_name in named:
            return named, self.vector_name or (named[0] if named else None)
        if self.vector_name == "default":  # the client's key for a collection's legacy unnamed vector
            return named, None
        raise VdbguardError(
            f"Weaviate collection {self.collection_name!r} has no vector named {self.vector_name!r}",
            f"named vectors: {', '.join(named) if named else 'none (one unnamed vector)'}",
        )

    def _tenant_status(self, config: Any) -> dict[str, Any] | None:
        """Tenant name -> activity status (selected tenants only), or None for single-tenant collections."""
        if not config.multi_tenancy_config.enabled:
            if self.tenants:
                raise VdbguardError(
                    f"Weaviate collection {self.collection_name!r} is not multi-tenant", "drop the tenants= option"
                )
            return None
        collection = self._collection()
        found = self._call("get tenants", collection.tenants.get)
        status = {name: tenant.activity_status for name, tenant in found.items()}
        if self.tenants:
            missing = [t for t in self.tenants if t not in status]
            if missing:
                raise CollectionNotFoundError(
                    f"tenant(s) {', '.join(missing)} not found in Weaviate collection {self.collection_name!r}",
                    f"existing tenants: {', '.join(sorted(status)) or 'none'}",
                )
            status = {t: status[t] for t in self.tenants}
        return dict(sorted(status.items()))

    # -- Connector API -------------------------------------------------------------------------------

    def _collection_names(self) -> list[str]:
        """The schema's collections (``GET /v1/schema``), named as Weaviate stores them (first letter capitalised);
        tenants stay inside each."""
        collections = self._connection().collections
        return list(self._call("list collections", lambda: collections.list_all(simple=True)))

    def describe(self) -> CollectionInfo:
        config = self._config()
        named, primary = self._layout(config)
        tenants = self._tenant_status(config)
        shards: list[str | None] = [None] if tenants is None else [t for t, s in tenants.items() if s in _ACTIVE]
        count = 0
        dimension = None
        for tenant in shards:
            aggregate = self._collection(tenant).aggregate
            count += int(self._call("count objects", lambda a=aggregate: a.over_all(total_count=True)).total_count or 0)
            if dimension is None:
                page = self._fetch(tenant, None, 1)
                if page:
                    vector = _vectors(page[0]).get(primary or "default")
                    dimension = int(vector.shape[-1]) if vector is not None else None
        index = config.vector_config[primary].vector_index_config if primary else config.vector_index_config
        distance = str(getattr(getattr(index, "distance_metric", None), "value", "") or "") or None
        inactive = sorted(t for t, s in (tenants or {}).items() if s not in _ACTIVE)
        return CollectionInfo(
            name=self.collection_name,
            dimension=dimension,
            count=count,
            metric=(metric_name(distance) or distance) if distance else None,
            vector_names=named,
            namespaces=tuple(tenants or ()),
            extra={
                "location": self.location,
                "grpc": self.grpc_location,
                "class": config.name,
                "multi_tenancy": tenants is not None,
                "inactive_tenants": inactive,
                "vector_name": primary,
            },
        )

    def _fetch(self, tenant: str | None, after: str | None, limit: int) -> list[Any]:
        query = self._collection(tenant).query

        def fetch() -> list[Any]:
            return list(query.fetch_objects(limit=limit, after=after, include_vector=True).objects)

        return self._call("fetch objects", fetch)

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        """Pages of at most ``batch_size`` objects, tenant by tenant, each in UUID order.

        Every batch carries a cursor (tenant + last UUID); a batch never spans two tenants.
        """
        if batch_size < 1:
            raise VdbguardError(f"batch_size must be at least 1, got {batch_size}")
        start_tenant, after = _parse_cursor(resume_from)
        config = self._config()
        named, primary = self._layout(config)
        order = self._active_shards(config, "reading", start_tenant)
        if order == [None] and start_tenant is not None:
            raise VdbguardError(
                f"the cursor names tenant {start_tenant!r} but {self.collection_name!r} is not multi-tenant",
                "pass a cursor from a scan of this collection, or none to start over",
            )
        if order and order[0] != start_tenant:
            after = None  # the cursor's tenant is gone: start the next one from its beginning
        for tenant in order:
            while True:
                objects = self._fetch(tenant, after, batch_size)
                if not objects:
                    break
                records = [self._record(obj, tenant, named, primary) for obj in objects]
                after = str(objects[-1].uuid)
                yield Batch(records, json.dumps({"tenant": tenant, "after": after}))
                if len(objects) < batch_size:
                    break
            after = None

    def _record(self, obj: Any, tenant: str | None, named: tuple[str, ...], primary: str | None) -> VectorRecord:
        vectors = _vectors(obj)
        return VectorRecord(
            id=str(obj.uuid),
            vector=vectors.get(primary or "default"),
            payload={key: _plain(value) for key, value in (obj.properties or {}).items()},
            text=None,
            collection=self.collection_name,
            namespace=tenant,
            named_vectors={k: v for k, v in vectors.items() if k in named} if named else {},
        )

    def _active_shards(self, config: Any, what: str, from_tenant: str | None = None) -> list[str | None]:
        """The shards to read, search or delete in: the collection, or its selected tenants from ``from_tenant``
        on (all must be active)."""
        tenants = self._tenant_status(config)
        if tenants is None:
            return [None]
        shards = [t for t in tenants if from_tenant is None or t >= from_tenant]
        inactive = [t for t in shards if tenants[t] not in _ACTIVE]
        if inactive:
            raise ConnectorError(
                f"tenant(s) {', '.join(inactive)} of Weaviate collection {self.collection_name!r} are inactive",
                f"{what} them needs them active, and activating is a write vdbguard does not make: activate them, "
                "or leave them out with tenants=",
            )
        return list(shards)

    def query_vector(self, vector: Sequence[float]) -> list[float] | None:
        """A ``near_vector`` search with ``include_vector``, in the first tenant that answers one."""
        config = self._config()
        _, primary = self._layout(config)
        for tenant in self._active_shards(config, "searching"):
            query = self._collection(tenant).query
            found = self._call(
                "near_vector search",
                lambda q=query: (
                    q.near_vector(near_vector=list(vector), limit=1, include_vector=True, target_vector=primary).objects
                ),
            )
            if found:
                hit = _vectors(found[0]).get(primary or "default")
                return None if hit is None else [float(x) for x in hit]
        return None

    def delete(self, ids: Sequence[str]) -> None:
        """Delete by UUID in every (selected) tenant, 1,000 ids a request (ids that are not UUIDs are not stored).

        Weaviate deletes each request's matches one by one: a failure can leave part of a request deleted,
        and the error says how many.
        """
        keys = []
        for record_id in ids:
            try:
                keys.append(str(uuid.UUID(str(record_id))))
            except ValueError:
                continue
        if not keys:
            return
        for tenant in self._active_shards(self._config(), "deleting from"):
            data = self._collection(tenant).data
            for start in range(0, len(keys), 1000):
                where = Filter.by_id().contains_any(keys[start : start + 1000])
                result = self._call("delete objects", lambda d=data, w=where: d.delete_many(where=w))
                if result.failed:
                    raise ConnectorError(
                        f"Weaviate failed to delete {result.failed} of {result.matches} objects in "
                        f"{self.collection_name!r}" + (f" (tenant {tenant!r})" if tenant else ""),
                        "run the erasure again: ids already deleted are skipped",
                    )

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or fully replace ``records`` (see the class docstring for batching and tenants)."""
        if not records:
            return
        checked = [self._checked(r) for r in records]  # fail closed: nothing is written if one is bad
        namespaces = {r.namespace for r in records}
        if len(namespaces) > 1 and None in namespaces:
            raise VdbguardError("some records have a namespace (tenant) and some do not", "give every record one")
        config = self._config()
        named, primary = self._layout(config)
        objects: dict[str | None, list[DataObject]] = {}
        for record, (object_id, vector, properties) in zip(records, checked, strict=True):
            if named:
                vectors = _named(record)
                vectors.setdefault(primary or named[0], vector)
                unknown = sorted(set(vectors) - set(named))
                if unknown:
                    raise RecordError(record.id, "named_vectors", f"has {unknown}; the collection has {list(named)}")
                vector_input: Any = {name: v.tolist() for name, v in vectors.items()}
            else:
                vector_input = vector.tolist()
            objects.setdefault(record.namespace, []).append(
                DataObject(properties=properties, uuid=object_id, vector=vector_input)
            )
        if not config.multi_tenancy_config.enabled and None not in namespaces:
            config = self._recreate_multi_tenant(config)
        if config.multi_tenancy_config.enabled:
            if None in namespaces:
                raise VdbguardError(
                    f"Weaviate collection {self.collection_name!r} is multi-tenant: every record needs a namespace",
                    "set record.namespace to the tenant",
                )
            self._ensure_tenants(sorted(n for n in namespaces if n is not None))
        written: list[str] = []
        for tenant, pending in objects.items():
            for start in range(0, len(pending), 1000):
                chunk = pending[start : start + 1000]
                try:
                    rejected = self._insert(tenant, chunk)
                except VdbguardError as exc:
                    if not written:
                        raise
                    raise PartialWriteError(exc, written, len(records)) from exc
                written += [str(o.uuid) for i, o in enumerate(chunk) if i not in rejected]
                if rejected:
                    details = "; ".join(f"{chunk[i].uuid}: {message}" for i, message in sorted(rejected.items())[:3])
                    error = ConnectorError(
                        f"Weaviate rejected {len(rejected)} of {len(chunk)} objects in {self.collection_name!r}: "
                        f"{details}"
                    )
                    raise PartialWriteError(error, written, len(records)) if written else error

    def _checked(self, record: VectorRecord) -> tuple[str, np.ndarray, dict[str, Any]]:
        vector = record.checked_vector()
        for name, named_vector in _named(record).items():
            VectorRecord(id=record.id, vector=named_vector).checked_vector()
            if not isinstance(name, str) or not name:
                raise RecordError(record.id, "named_vectors", f"has a bad vector name {name!r}")
        try:
            object_id = str(uuid.UUID(str(record.id)))
        except ValueError as exc:
            raise RecordError(
                record.id, "id", "is not a UUID (Weaviate object ids are UUIDs; derive one with uuid.uuid5)"
            ) from exc
        properties = dict(record.payload)
        if record.text is not None:
            properties["text"] = record.text
        for key in properties:
            if not isinstance(key, str) or not _PROPERTY_NAME.match(key) or key in _RESERVED:
                raise RecordError(record.id, "payload", f"key {key!r} is not a valid Weaviate property name")
        return object_id, vector, properties

    def _insert(self, tenant: str | None, chunk: list[DataObject]) -> dict[int, str]:
        """The objects Weaviate rejected, by position in ``chunk``, with its reason (the others are written)."""
        data = self._collection(tenant).data
        result = self._call("insert objects", lambda: data.insert_many(chunk))
        return {int(i): self._scrub(e.message) for i, e in result.errors.items()}

    def _ensure_tenants(self, wanted: list[str]) -> None:
        collection = self._collection()

        def create_missing() -> None:
            existing = collection.tenants.get()
            missing = [name for name in wanted if name not in existing]
            if missing:
                collection.tenants.create([Tenant(name=name) for name in missing])

        self._call("create tenants", create_missing)

    def _recreate_multi_tenant(self, config: Any) -> Any:
        """Auto mode: namespaced records for a single-tenant collection this connector just created, empty."""
        if self.multi_tenancy is not None or self._created_here is None:
            raise VdbguardError(
                f"Weaviate collection {self.collection_name!r} is not multi-tenant but the records have namespaces",
                "write records without a namespace, or use a collection created with multi_tenancy=true",
            )
        collection = self._collection()
        total = self._call("count objects", lambda: collection.aggregate.over_all(total_count=True)).total_count
        if total:
            raise VdbguardError(
                f"Weaviate collection {self.collection_name!r} already holds objects without a tenant",
                "write records without a namespace, or use a new collection",
            )
        metric, vector_names = self._created_here
        client = self._connection()
        self._call("delete collection", lambda: client.collections.delete(config.name))
        self._create(metric, vector_names, multi_tenant=True)
        return self._config()

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        if metric_name(metric) not in _DISTANCES:
            raise VdbguardError(f"unsupported metric {metric!r} for Weaviate", "use cosine, l2 or ip")
        client = self._connection()
        if self._call("check collection", lambda: client.collections.exists(self.collection_name)):
            return
        self._create(metric, tuple(vector_names), multi_tenant=bool(self.multi_tenancy))
        if self.multi_tenancy is None:
            self._created_here = (metric, tuple(vector_names))

    def _create(self, metric: str, vector_names: tuple[str, ...], *, multi_tenant: bool) -> None:
        index = {"vectorIndexType": "hnsw", "vectorIndexConfig": {"distance": _DISTANCES[str(metric_name(metric))]}}
        body: dict[str, Any] = {"class": self.collection_name, "multiTenancyConfig": {"enabled": multi_tenant}}
        if vector_names:
            body["vectorConfig"] = {name: {"vectorizer": {"none": {}}, **index} for name in vector_names}
        else:
            body.update(vectorizer="none", **index)
        client = self._connection()

        def create() -> None:
            try:
                client.collections.create_from_dict(body)
            except UnexpectedStatusCodeError as exc:  # created concurrently (or by a retried request)
                if exc.status_code != 422 or not client.collections.exists(self.collection_name):
                    raise

        self._call("create collection", create)

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            try:
                client.close()
            except Exception as exc:  # closing must not mask the real outcome
                log.debug("closing the Weaviate client failed: %s", type(exc).__name__)


# -- helpers -------------------------------------------------------------------------------------


_ENVIRONMENT = threading.Lock()


@contextlib.contextmanager
def _rest_trusting(ca_file: str | None) -> Iterator[None]:
    """weaviate-client passes httpx no CA file; its documented way is ``trust_env`` with ``SSL_CERT_FILE``,
    which httpx reads when the client is built. So the variable names the CA only while the client is built."""
    if ca_file is None:
        yield
        return
    with _ENVIRONMENT:
        saved = {name: os.environ.pop(name, None) for name in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
        os.environ["SSL_CERT_FILE"] = ca_file
        try:
            yield
        finally:
            for name, value in saved.items():
                os.environ.pop(name, None)
                if value is not None:
                    os.environ[name] = value


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))


def _tristate(value: bool | str | None, what: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    lowered = str(value).strip().lower()
    if lowered in ("", "auto", "none"):
        return None
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise VdbguardError(f"{what} must be true, false or auto, got {value!r}")


def _parse_cursor(cursor: str | None) -> tuple[str | None, str | None]:
    if cursor is None:
        return None, None
    try:
        data = json.loads(cursor)
        tenant, after = data["tenant"], data["after"]
        if (tenant is not None and not isinstance(tenant, str)) or (after is not None and not isinstance(after, str)):
            raise TypeError
        return tenant, str(uuid.UUID(after)) if after is not None else None
    except (ValueError, TypeError, KeyError) as exc:
        raise VdbguardError(
            f"bad Weaviate resume cursor {cursor[:200]!r}",
            'pass a cursor taken from a weaviate scan (like {"tenant": null, "after": "<uuid>"}), or none',
        ) from exc


def _named(record: VectorRecord) -> dict[str, np.ndarray]:
    return {name: np.asarray(v, dtype=np.float32) for name, v in (record.named_vectors or {}).items()}


def _vectors(obj: Any) -> dict[str, np.ndarray]:
    """The client decodes Weaviate's float32 bytes to Python floats; back to float32 is exact."""
    return {name: np.asarray(value, dtype=np.float32) for name, value in (obj.vector or {}).items()}


def _plain(value: Any) -> Any:
    """Payload values as plain JSON-friendly Python: UUIDs and dates as strings, client models as dicts."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return value


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 10:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _http_status(exc: BaseException) -> int | None:
    for item in _chain(exc):
        if isinstance(item, UnexpectedStatusCodeError):
            return int(item.status_code)
        if isinstance(item, httpx.HTTPStatusError):
            return item.response.status_code
    return None


def _grpc_code(exc: BaseException) -> grpc.StatusCode | None:
    for item in _chain(exc):
        if isinstance(item, grpc.RpcError) and hasattr(item, "code"):
            try:
                return item.code()
            except Exception:
                return None
    return None


def _is_connection_error(exc: BaseException) -> bool:
    return any(
        isinstance(item, WeaviateStartUpError | WeaviateConnectionError | httpx.ConnectError | httpx.ConnectTimeout)
        for item in _chain(exc)
    )
