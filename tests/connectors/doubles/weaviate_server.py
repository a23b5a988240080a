"""A protocol-level Weaviate test double that the official ``weaviate-client`` (v4) talks to.

No Weaviate server binary can run here (``connect_to_embedded()`` downloads one), so this double
serves the two APIs the v4 client uses, built on the client's own generated protobuf modules:

* gRPC (``weaviate.v1.Weaviate`` via the shipped ``WeaviateServicer`` base class, plus the
  ``grpc.health.v1.Health/Check`` ping): ``Search`` (fetch-objects paging with ``limit``/``offset``
  or the ``after`` cursor, properties, uuid, legacy and named vectors; ``near_vector`` on one target, scored
  exactly by the index's cosine, dot or l2-squared distance), ``BatchObjects`` (insert or fully replace, with
  auto-schema), ``BatchDelete`` (by id: ``Filter.by_id()`` ``equal``/``contains_any``), ``TenantsGet`` and
  ``Aggregate`` (``objects_count`` only).
* REST on a stdlib ``http.server``: ``/v1/meta``, ``/v1/.well-known/{ready,live,openid-configuration}``,
  ``/v1/schema`` (list, create), ``/v1/schema/{class}`` (get, delete), ``/v1/schema/{class}/tenants``
  (list, create).

Behaviour mirrors Weaviate 1.32 where the connector depends on it: class names get their first letter
upper-cased; the schema is returned with the server-side defaults filled in; objects page in UUID
order inside a shard (one shard per tenant); vectors are stored as the float32 bytes received and sent
back unchanged; auto-schema types numbers sent through the gRPC ``Struct`` as ``number`` (so ints come
back as floats, as from a real server), RFC 3339 strings as ``date`` and UUID strings as ``uuid``.
Other filters, sorting, keyword and hybrid search and references are not implemented (UNIMPLEMENTED).

Test hooks: ``api_key`` makes every REST call except ``/v1/.well-known/*`` and every Weaviate gRPC
call require ``Authorization: Bearer <key>`` (401 / UNAUTHENTICATED otherwise); ``writes`` counts
every request that changed state; ``faults.failing(n)`` answers the next ``n`` requests (REST or gRPC, any
endpoint) with HTTP 503 / gRPC UNAVAILABLE; ``calls`` counts requests per endpoint.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import struct
import threading
import time
import uuid as uuid_lib
from collections import Counter
from concurrent import futures
from copy import deepcopy
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import grpc
from google.protobuf import struct_pb2
from weaviate.proto.v1 import (
    aggregate_pb2,
    base_pb2,
    batch_delete_pb2,
    batch_pb2,
    health_weaviate_pb2,
    properties_pb2,
    search_get_pb2,
    tenants_pb2,
    weaviate_pb2_grpc,
)

from tests.connectors.doubles.serving import Faults, QuietHandler, serve, shutdown

VERSION = "1.32.5"
_CLASS_NAME = re.compile(r"^[A-Z][_0-9A-Za-z]*$")
_SCHEMA_CLASS = re.compile(r"^/v1/schema/[^/]+")
_DISTANCES = ("cosine", "dot", "l2-squared", "hamming", "manhattan")
_ACTIVE = ("HOT", "ACTIVE")
_QUERY_MAXIMUM_RESULTS = 10_000  # the server's default cap on the objects one delete_many may match
_GRPC_STATUS = {
    "HOT": tenants_pb2.TENANT_ACTIVITY_STATUS_HOT,
    "ACTIVE": tenants_pb2.TENANT_ACTIVITY_STATUS_ACTIVE,
    "COLD": tenants_pb2.TENANT_ACTIVITY_STATUS_COLD,
    "INACTIVE": tenants_pb2.TENANT_ACTIVITY_STATUS_INACTIVE,
    "FROZEN": tenants_pb2.TENANT_ACTIVITY_STATUS_FROZEN,
    "OFFLOADED": tenants_pb2.TENANT_ACTIVITY_STATUS_OFFLOADED,
}


class DoubleError(Exception):
    """A request the (real) server would refuse; ``status`` is the HTTP status, ``code`` the gRPC one."""

    def __init__(self, message: str, status: int = 422, code: grpc.StatusCode = grpc.StatusCode.UNKNOWN) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def _hnsw_defaults(distance: str) -> dict[str, Any]:
    return {
        "skip": False,
        "cleanupIntervalSeconds": 300,
        "maxConnections": 32,
        "efConstruction": 128,
        "ef": -1,
        "dynamicEfMin": 100,
        "dynamicEfMax": 500,
        "dynamicEfFactor": 8,
        "vectorCacheMaxObjects": 1000000000000,
        "flatSearchCutoff": 40000,
        "distance": distance,
        "filterStrategy": "sweeping",
        "pq": {
            "enabled": False,
            "bitCompression": False,
            "segments": 0,
            "centroids": 256,
            "trainingLimit": 100000,
            "encoder": {"type": "kmeans", "distribution": "log-normal"},
        },
        "bq": {"enabled": False},
        "sq": {"enabled": False, "trainingLimit": 100000, "rescoreLimit": 20},
        "multivector": {"enabled": False, "aggregation": "maxSim", "muvera": {"enabled": False}},
    }


def _flat_defaults(distance: str) -> dict[str, Any]:
    return {
        "distance": distance,
        "vectorCacheMaxObjects": 1000000000000,
        "pq": {"enabled": False, "cache": False, "rescoreLimit": -1},
        "bq": {"enabled": False, "cache": False, "rescoreLimit": -1},
        "sq": {"enabled": False, "cache": False, "rescoreLimit": -1},
    }


def _index_config(index_type: str | None, given: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    index_type = index_type or "hnsw"
    given = dict(given or {})
    distance = given.get("distance", "cosine")
    if distance not in _DISTANCES:
        raise DoubleError(f"invalid distance metric {distance!r}")
    if index_type == "hnsw":
        config = _hnsw_defaults(distance)
    elif index_type == "flat":
        config = _flat_defaults(distance)
    else:
        raise DoubleError(f"vector index type {index_type!r} is not supported by the test double")
    for key, value in given.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    return index_type, config


def _property_defaults(prop: dict[str, Any]) -> dict[str, Any]:
    data_type = prop["dataType"][0]
    textual = data_type in ("text", "text[]", "string", "string[]")
    out = {
        "name": prop["name"],
        "dataType": list(prop["dataType"]),
        "indexFilterable": prop.get("indexFilterable", True),
        "indexSearchable": prop.get("indexSearchable", textual),
        "indexRangeFilters": prop.get("indexRangeFilters", False),
    }
    if textual:
        out["tokenization"] = prop.get("tokenization", "word")
    if prop.get("nestedProperties"):
        out["nestedProperties"] = [_property_defaults(p) for p in prop["nestedProperties"]]
    if "description" in prop:
        out["description"] = prop["description"]
    return out


def complete_class(body: dict[str, Any]) -> dict[str, Any]:
    """The class definition as the server stores and returns it: defaults filled in."""
    name = str(body.get("class", ""))
    name = name[:1].upper() + name[1:]
    if not _CLASS_NAME.match(name):
        raise DoubleError(f"'{name}' is not a valid class name")
    mt = dict(body.get("multiTenancyConfig") or {})
    mt_enabled = bool(mt.get("enabled", False))
    out: dict[str, Any] = {
        "class": name,
        "invertedIndexConfig": {
            "bm25": {"b": 0.75, "k1": 1.2},
            "cleanupIntervalSeconds": 60,
            "stopwords": {"preset": "en", "additions": None, "removals": None},
            "usingBlockMaxWAND": True,
            **(body.get("invertedIndexConfig") or {}),
        },
        "multiTenancyConfig": {
            "enabled": mt_enabled,
            "autoTenantCreation": bool(mt.get("autoTenantCreation", False)),
            "autoTenantActivation": bool(mt.get("autoTenantActivation", False)),
        },
        "properties": [_property_defaults(p) for p in body.get("properties") or []],
        "replicationConfig": {"factor": 1, "asyncEnabled": False, "deletionStrategy": "NoAutomatedResolution"},
        "shardingConfig": (
            {
                "virtualPerPhysical": 0,
                "desiredCount": 0,
                "actualCount": 0,
                "desiredVirtualCount": 0,
                "actualVirtualCount": 0,
                "key": "",
                "strategy": "",
                "function": "",
            }
            if mt_enabled
            else {
                "virtualPerPhysical": 128,
                "desiredCount": 1,
                "actualCount": 1,
                "desiredVirtualCount": 128,
                "actualVirtualCount": 128,
                "key": "_id",
                "strategy": "hash",
                "function": "murmur3",
            }
        ),
    }
    if "description" in body:
        out["description"] = body["description"]
    if body.get("vectorConfig"):
        vector_config = {}
        for vector_name, config in body["vectorConfig"].items():
            vectorizer = config.get("vectorizer") or {"none": {}}
            if list(vectorizer) != ["none"]:
                raise DoubleError(f"vectorizer {list(vectorizer)} is not available (no modules in the test double)")
            index_type, index_config = _index_config(config.get("vectorIndexType"), config.get("vectorIndexConfig"))
            vector_config[vector_name] = {
                "vectorizer": {"none": {}},
                "vectorIndexType": index_type,
                "vectorIndexConfig": index_config,
            }
        out["vectorConfig"] = vector_config
    else:
        vectorizer = body.get("vectorizer", "none")
        if vectorizer != "none":
            raise DoubleError(f"vectorizer {vectorizer!r} is not available (no modules in the test double)")
        index_type, index_config = _index_config(body.get("vectorIndexType"), body.get("vectorIndexConfig"))
        out.update(vectorizer="none", vectorIndexType=index_type, vectorIndexConfig=index_config)
    return out


# -- property values ---------------------------------------------------------------------------


def _is_date(text: str) -> bool:
    try:
        dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in text


def _is_uuid(text: str) -> bool:
    try:
        uuid_lib.UUID(text)
    except ValueError:
        return False
    return len(text) == 36


def _infer_scalar(value: struct_pb2.Value) -> str | None:
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        return "number"
    if kind == "bool_value":
        return "boolean"
    if kind == "string_value":
        text = value.string_value
        return "uuid" if _is_uuid(text) else "date" if _is_date(text) else "text"
    if kind == "list_value":
        raise DoubleError("list values inside the non-ref properties struct are not supported")
    if kind == "struct_value":
        raise DoubleError("struct values inside the non-ref properties struct are not supported")
    return None  # null: the property is not set


def _convert_scalar(name: str, value: struct_pb2.Value, data_type: str) -> Any:
    kind = value.WhichOneof("kind")
    if data_type == "number" and kind == "number_value":
        return float(value.number_value)
    if data_type == "int" and kind == "number_value":
        if value.number_value != int(value.number_value):
            raise DoubleError(f"invalid integer property '{name}': requires an integer, got {value.number_value}")
        return int(value.number_value)
    if data_type == "boolean" and kind == "bool_value":
        return bool(value.bool_value)
    if data_type in ("text", "string", "blob") and kind == "string_value":
        return value.string_value
    if data_type == "date" and kind == "string_value" and _is_date(value.string_value):
        return value.string_value
    if data_type == "uuid" and kind == "string_value" and _is_uuid(value.string_value):
        return value.string_value
    raise DoubleError(f"invalid {data_type} property '{name}': got a {kind}")


@dataclass
class _Incoming:
    """One object's properties parsed from a BatchObject: name -> (dataType, value, nested props)."""

    values: dict[str, tuple[str, Any, list[dict[str, Any]] | None]] = field(default_factory=dict)


def _parse_properties(props: Any, known: dict[str, dict[str, Any]]) -> _Incoming:
    """``props`` is a BatchObject.Properties or an ObjectPropertiesValue; ``known`` the schema's props."""
    incoming = _Incoming()

    def declared(name: str, inferred: str | None) -> str | None:
        return known[name]["dataType"][0] if name in known else inferred

    if props.HasField("non_ref_properties"):
        for name, value in props.non_ref_properties.fields.items():
            data_type = declared(name, _infer_scalar(value))
            if data_type is None or value.WhichOneof("kind") == "null_value":
                continue
            incoming.values[name] = (data_type, _convert_scalar(name, value, data_type), None)
    for array in props.text_array_properties:
        values = list(array.values)
        data_type = declared(array.prop_name, "text[]")
        if data_type not in ("text[]", "string[]", "date[]", "uuid[]"):
            raise DoubleError(f"invalid {data_type} property '{array.prop_name}': got a text array")
        incoming.values[array.prop_name] = (data_type, values, None)
    for array in props.int_array_properties:
        data_type = declared(array.prop_name, "int[]")
        if data_type == "number[]":
            incoming.values[array.prop_name] = (data_type, [float(v) for v in array.values], None)
        elif data_type == "int[]":
            incoming.values[array.prop_name] = (data_type, [int(v) for v in array.values], None)
        else:
            raise DoubleError(f"invalid {data_type} property '{array.prop_name}': got an int array")
    for array in props.number_array_properties:
        data_type = declared(array.prop_name, "number[]")
        raw = array.values_bytes
        values = list(struct.unpack(f"<{len(raw) // 8}d", raw)) if raw else list(array.values)
        if data_type != "number[]":
            raise DoubleError(f"invalid {data_type} property '{array.prop_name}': got a number array")
        incoming.values[array.prop_name] = (data_type, values, None)
    for array in props.boolean_array_properties:
        data_type = declared(array.prop_name, "boolean[]")
        if data_type != "boolean[]":
            raise DoubleError(f"invalid {data_type} property '{array.prop_name}': got a boolean array")
        incoming.values[array.prop_name] = (data_type, list(array.values), None)
    for obj in props.object_properties:
        nested_known = {p["name"]: p for p in (known.get(obj.prop_name) or {}).get("nestedProperties") or []}
        inner = _parse_properties(obj.value, nested_known)
        data_type = declared(obj.prop_name, "object")
        if data_type != "object":
            raise DoubleError(f"invalid {data_type} property '{obj.prop_name}': got an object")
        incoming.values[obj.prop_name] = (data_type, inner, None)
    for array in props.object_array_properties:
        nested_known = {p["name"]: p for p in (known.get(array.prop_name) or {}).get("nestedProperties") or []}
        data_type = declared(array.prop_name, "object[]")
        if data_type != "object[]":
            raise DoubleError(f"invalid {data_type} property '{array.prop_name}': got an object array")
        incoming.values[array.prop_name] = (data_type, [_parse_properties(v, nested_known) for v in array.values], None)
    for name in props.empty_list_props:
        if name in known:
            incoming.values[name] = (known[name]["dataType"][0], [], None)
    return incoming


def _merge_schema(known: list[dict[str, Any]], incoming: _Incoming) -> bool:
    """Auto-schema: add properties not yet in ``known`` (a schema ``properties`` list). True if changed."""
    by_name = {p["name"]: p for p in known}
    changed = False
    for name, (data_type, value, _) in incoming.values.items():
        inner = value if isinstance(value, _Incoming) else None
        inners = value if data_type == "object[]" else [inner] if inner is not None else []
        if name not in by_name:
            prop = _property_defaults({"name": name, "dataType": [data_type]})
            if data_type in ("object", "object[]"):
                prop["nestedProperties"] = []
            known.append(prop)
            by_name[name] = prop
            changed = True
        for nested in inners:
            changed |= _merge_schema(by_name[name].setdefault("nestedProperties", []), nested)
    return changed


# Schema dataType -> the ``properties.Value`` field (scalars) or ``ListValue`` field (arrays) it is sent in.
_SCALAR_FIELDS = {
    "text": "text_value",
    "string": "text_value",
    "number": "number_value",
    "int": "int_value",
    "boolean": "bool_value",
    "date": "date_value",
    "uuid": "uuid_value",
    "blob": "blob_value",
}
_LIST_FIELDS = {
    "text[]": "text_values",
    "string[]": "text_values",
    "date[]": "date_values",
    "uuid[]": "uuid_values",
    "boolean[]": "bool_values",
}
_PACKED_LISTS = {"number[]": ("number_values", "d"), "int[]": ("int_values", "q")}  # little-endian packed bytes


def _plain(value: Any) -> Any:
    """Stored form of a parsed value: nested objects become plain dicts of stored values."""
    if isinstance(value, _Incoming):
        return {name: _plain(v) for name, (_, v, _) in value.values.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _to_value(value: Any, prop: dict[str, Any]) -> properties_pb2.Value:
    """A stored value as the typed ``properties.Value`` the server replies with (by schema dataType)."""
    data_type = prop["dataType"][0]
    nested = {p["name"]: p for p in prop.get("nestedProperties") or []}
    if value is None:
        return properties_pb2.Value(null_value=struct_pb2.NULL_VALUE)
    if data_type in _SCALAR_FIELDS:
        return properties_pb2.Value(**{_SCALAR_FIELDS[data_type]: value})
    if data_type in _PACKED_LISTS:
        field, code = _PACKED_LISTS[data_type]
        value = struct.pack(f"<{len(value)}{code}", *value)
    elif data_type == "object":
        return properties_pb2.Value(object_value=_to_properties(value, nested))
    elif data_type == "object[]":
        field, value = "object_values", [_to_properties(v, nested) for v in value]
    elif data_type in _LIST_FIELDS:
        field = _LIST_FIELDS[data_type]
    else:
        raise DoubleError(f"data type {data_type} is not supported by the test double")
    return properties_pb2.Value(list_value=properties_pb2.ListValue(**{field: {"values": value}}))


def _to_properties(values: dict[str, Any], schema_props: dict[str, dict[str, Any]]) -> properties_pb2.Properties:
    return properties_pb2.Properties(
        fields={name: _to_value(v, schema_props[name]) for name, v in values.items() if name in schema_props}
    )


# -- state ---------------------------------------------------------------------------------------


@dataclass
class _Object:
    uuid: str
    properties: dict[str, Any]
    vector: bytes | None
    vectors: dict[str, bytes]
    created_ms: int
    updated_ms: int


@dataclass
class _Class:
    schema: dict[str, Any]
    tenants: dict[str, str] = field(default_factory=dict)  # name -> activity status
    shards: dict[str, dict[int, _Object]] = field(default_factory=dict)  # "" for single-tenant classes
    dims: dict[tuple[str, str], int] = field(default_factory=dict)  # (shard, vector name) -> length

    @property
    def multi_tenant(self) -> bool:
        return bool(self.schema["multiTenancyConfig"]["enabled"])

    def shard(self, tenant: str) -> dict[int, _Object]:
        name = self.schema["class"]
        if self.multi_tenant:
            if not tenant:
                raise DoubleError(
                    f"class {name} has multi-tenancy enabled, but request was without tenant",
                    code=grpc.StatusCode.UNKNOWN,
                )
            if tenant not in self.tenants:
                raise DoubleError(f'tenant not found: "{tenant}"', code=grpc.StatusCode.UNKNOWN)
            if self.tenants[tenant] not in _ACTIVE:
                raise DoubleError(f'tenant not active: "{tenant}"', code=grpc.StatusCode.UNKNOWN)
        elif tenant:
            raise DoubleError(
                f"class {name} has multi-tenancy disabled, but request was with tenant", code=grpc.StatusCode.UNKNOWN
            )
        return self.shards.setdefault(tenant, {})


class WeaviateDouble:
    """Start with ``start()``; ``http_port``/``grpc_port`` are then bound on 127.0.0.1."""

    def __init__(self, *, api_key: str | None = None, version: str = VERSION) -> None:
        self.api_key = api_key
        self.version = version
        self.writes = 0
        self.calls: Counter[str] = Counter()
        self.http_port = 0
        self.grpc_port = 0
        self._classes: dict[str, _Class] = {}
        self._lock = threading.RLock()
        self.faults = Faults()
        self._grpc_server: grpc.Server | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        self._grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="weaviate-double"))
        weaviate_pb2_grpc.add_WeaviateServicer_to_server(_Servicer(self), self._grpc_server)
        health = grpc.unary_unary_rpc_method_handler(
            self._health,
            request_deserializer=health_weaviate_pb2.WeaviateHealthCheckRequest.FromString,
            response_serializer=health_weaviate_pb2.WeaviateHealthCheckResponse.SerializeToString,
        )
        self._grpc_server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("grpc.health.v1.Health", {"Check": health}),)
        )
        self.grpc_port = self._grpc_server.add_insecure_port("127.0.0.1:0")
        self._grpc_server.start()
        self._httpd, self._http_thread = serve(_make_handler(self), "weaviate-double-http")
        self.http_port = int(self._httpd.server_address[1])

    def stop(self) -> None:
        shutdown(self._httpd, self._http_thread)
        self._httpd = self._http_thread = None
        if self._grpc_server is not None:
            self._grpc_server.stop(grace=None).wait(timeout=5)
            self._grpc_server = None

    def __enter__(self) -> WeaviateDouble:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def authorized(self, header: str | None) -> bool:
        return self.api_key is None or header == f"Bearer {self.api_key}"

    def _health(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.calls["grpc Health/Check"] += 1
        if self.faults.take():
            context.abort(grpc.StatusCode.UNAVAILABLE, "injected failure")
        response = health_weaviate_pb2.WeaviateHealthCheckResponse
        return response(status=response.SERVING)

    # -- schema (REST) ---------------------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        return {
            "hostname": "http://[::]:8080",
            "modules": {},
            "version": self.version,
            "grpcMaxMessageSize": 104858000,
        }

    def get_class(self, name: str) -> _Class:
        name = name[:1].upper() + name[1:]
        found = self._classes.get(name)
        if found is None:
            raise DoubleError(f"class {name!r} not found", status=404, code=grpc.StatusCode.NOT_FOUND)
        return found

    def schema(self) -> dict[str, Any]:
        with self._lock:
            return {"classes": [deepcopy(c.schema) for c in self._classes.values()]}

    def create_class(self, body: dict[str, Any]) -> dict[str, Any]:
        schema = complete_class(body)
        with self._lock:
            if schema["class"] in self._classes:
                raise DoubleError(f"class name {schema['class']!r} already exists")
            self._classes[schema["class"]] = _Class(schema=schema)
            self.writes += 1
            return deepcopy(schema)

    def delete_class(self, name: str) -> None:
        with self._lock:
            name = name[:1].upper() + name[1:]
            if self._classes.pop(name, None) is not None:
                self.writes += 1

    def list_tenants(self, name: str) -> list[dict[str, str]]:
        with self._lock:
            cls = self.get_class(name)
            if not cls.multi_tenant:
                raise DoubleError(f"multi-tenancy is not enabled for class {cls.schema['class']!r}")
            return [{"name": t, "activityStatus": s} for t, s in cls.tenants.items()]

    def create_tenants(self, name: str, body: list[dict[str, Any]]) -> list[dict[str, str]]:
        with self._lock:
            cls = self.get_class(name)
            if not cls.multi_tenant:
                raise DoubleError(f"multi-tenancy is not enabled for class {cls.schema['class']!r}")
            for tenant in body:
                if tenant.get("name") in cls.tenants:
                    raise DoubleError(f"tenant {tenant.get('name')!r} already exists")
            for tenant in body:
                status = str(tenant.get("activityStatus") or "HOT").upper()
                cls.tenants[str(tenant["name"])] = "HOT" if status == "ACTIVE" else status
            self.writes += 1
            return [{"name": t["name"], "activityStatus": cls.tenants[t["name"]]} for t in body]

    # -- objects (gRPC) --------------------------------------------------------------------------

    def batch_objects(self, request: batch_pb2.BatchObjectsRequest) -> batch_pb2.BatchObjectsReply:
        started = time.monotonic()
        errors = []
        with self._lock:
            for index, obj in enumerate(request.objects):
                try:
                    self._put(obj)
                except DoubleError as exc:
                    errors.append(batch_pb2.BatchObjectsReply.BatchError(index=index, error=str(exc)))
            self.writes += 1
        return batch_pb2.BatchObjectsReply(took=time.monotonic() - started, errors=errors)

    def _put(self, obj: batch_pb2.BatchObject) -> None:
        cls = self.get_class(obj.collection)
        if cls.multi_tenant and obj.tenant and obj.tenant not in cls.tenants:
            if not cls.schema["multiTenancyConfig"]["autoTenantCreation"]:
                raise DoubleError(f'tenant not found: "{obj.tenant}"')
            cls.tenants[obj.tenant] = "HOT"
        shard = cls.shard(obj.tenant)
        try:
            object_id = uuid_lib.UUID(obj.uuid)
        except ValueError as exc:
            raise DoubleError(f"invalid uuid {obj.uuid!r}") from exc
        vector, vectors = self._vectors(cls, obj)
        known = {p["name"]: p for p in cls.schema["properties"]}
        incoming = _parse_properties(obj.properties, known) if obj.HasField("properties") else _Incoming()
        _merge_schema(cls.schema["properties"], incoming)
        now = int(time.time() * 1000)
        old = shard.get(object_id.int)
        shard[object_id.int] = _Object(
            uuid=str(object_id),
            properties={name: _plain(v) for name, (_, v, _) in incoming.values.items()},
            vector=vector,
            vectors=vectors,
            created_ms=old.created_ms if old else now,
            updated_ms=now,
        )

    def _vectors(self, cls: _Class, obj: batch_pb2.BatchObject) -> tuple[bytes | None, dict[str, bytes]]:
        named = cls.schema.get("vectorConfig") or {}
        legacy = obj.vector_bytes or (struct.pack(f"<{len(obj.vector)}f", *obj.vector) if obj.vector else b"")
        if named:
            if legacy:
                raise DoubleError(f"collection {cls.schema['class']} has named vectors; send them by name")
            vectors = {}
            for vec in obj.vectors:
                if vec.name not in named:
                    raise DoubleError(f"target vector {vec.name!r} not found in collection {cls.schema['class']}")
                if vec.type not in (base_pb2.Vectors.VECTOR_TYPE_UNSPECIFIED, base_pb2.Vectors.VECTOR_TYPE_SINGLE_FP32):
                    raise DoubleError("multi-vectors are not supported by the test double")
                vectors[vec.name] = self._check_dim(cls, obj.tenant, vec.name, vec.vector_bytes)
            return None, vectors
        if obj.vectors:
            raise DoubleError(f"collection {cls.schema['class']} has no named vectors")
        return (self._check_dim(cls, obj.tenant, "", legacy) if legacy else None), {}

    @staticmethod
    def _check_dim(cls: _Class, tenant: str, name: str, data: bytes) -> bytes:
        """Like the server's HNSW index (one per shard and vector): the first vector fixes the length."""
        if len(data) % 4 or not data:
            raise DoubleError("vector bytes must be a non-empty float32 array")
        length = cls.dims.setdefault((tenant, name), len(data) // 4)
        if length != len(data) // 4:
            raise DoubleError(
                f"new node has a vector with length {len(data) // 4}. Existing nodes have vectors with length {length}"
            )
        return data

    def search(self, request: search_get_pb2.SearchRequest) -> search_get_pb2.SearchReply:
        started = time.monotonic()
        for unsupported in (
            "filters",
            "group_by",
            "hybrid_search",
            "bm25_search",
            "near_object",
            "near_text",
            "generative",
            "rerank",
        ):
            if request.HasField(unsupported):
                raise _unimplemented(unsupported)
        if request.sort_by:
            raise DoubleError("sort_by is not supported by the test double", code=grpc.StatusCode.UNIMPLEMENTED)
        with self._lock:
            cls = self.get_class(request.collection)
            shard = cls.shard(request.tenant)
            limit = request.limit or 10
            keys = sorted(shard)
            distances: dict[int, float] = {}
            if request.HasField("near_vector"):
                distances = self._near_vector(cls, shard, request.near_vector)
                keys = sorted(distances, key=lambda k: (distances[k], k))[request.offset : request.offset + limit]
            elif request.after:
                if request.offset:
                    raise DoubleError("cursor api: invalid 'after' parameter: offset cannot be set with after")
                try:
                    after = uuid_lib.UUID(request.after).int
                except ValueError as exc:
                    raise DoubleError(f"invalid 'after' uuid {request.after!r}") from exc
                keys = [k for k in keys if k > after][:limit]
            else:
                keys = keys[request.offset : request.offset + limit]
            objects = [(k, shard[k]) for k in keys]
            schema_props = {p["name"]: p for p in cls.schema["properties"]}
            wanted = self._wanted_properties(request, schema_props)
            metadata = request.metadata if request.HasField("metadata") else search_get_pb2.MetadataRequest(uuid=True)
            vector_names = list(metadata.vectors)
            if metadata.vector and cls.schema.get("vectorConfig"):
                vector_names = list(cls.schema["vectorConfig"])
            results = []
            for key, obj in objects:
                meta = search_get_pb2.MetadataResult()
                if key in distances:
                    meta.distance, meta.distance_present = distances[key], True
                if metadata.uuid:
                    meta.id = obj.uuid
                    meta.id_as_bytes = _id_as_bytes(obj.uuid)
                if metadata.vector and obj.vector is not None:
                    meta.vector_bytes = obj.vector
                for name in vector_names:
                    if name in obj.vectors:
                        meta.vectors.append(
                            base_pb2.Vectors(
                                name=name, vector_bytes=obj.vectors[name], type=base_pb2.Vectors.VECTOR_TYPE_SINGLE_FP32
                            )
                        )
                if metadata.creation_time_unix:
                    meta.creation_time_unix, meta.creation_time_unix_present = obj.created_ms, True
                if metadata.last_update_time_unix:
                    meta.last_update_time_unix, meta.last_update_time_unix_present = obj.updated_ms, True
                values = {k: v for k, v in obj.properties.items() if k in wanted}
                props = search_get_pb2.PropertiesResult(target_collection=cls.schema["class"])
                if values:
                    props.non_ref_props.CopyFrom(_to_properties(values, schema_props))
                results.append(search_get_pb2.SearchResult(properties=props, metadata=meta))
        return search_get_pb2.SearchReply(took=time.monotonic() - started, results=results)

    @staticmethod
    def _near_vector(cls: _Class, shard: dict[int, _Object], near: Any) -> dict[int, float]:
        """Object key -> distance to the query, by the searched vector's index metric (exact, no HNSW)."""
        named = cls.schema.get("vectorConfig") or {}
        targets = list(near.targets.target_vectors) or list(near.target_vectors)
        if len(targets) > 1 or near.vector_per_target or near.vector_for_targets:
            raise _unimplemented("multi-target near_vector")
        target = targets[0] if targets else (next(iter(named)) if len(named) == 1 else "")
        if named and target not in named:
            raise DoubleError(f"target vector {target!r} not found in collection {cls.schema['class']}")
        if not named and target:
            raise DoubleError(f"collection {cls.schema['class']} has no named vectors")
        config = named[target]["vectorIndexConfig"] if named else cls.schema["vectorIndexConfig"]
        raw = near.vector_bytes or (near.vectors[0].vector_bytes if near.vectors else b"")
        query = list(struct.unpack(f"<{len(raw) // 4}f", raw)) if raw else list(near.vector)
        found = {}
        for key, obj in shard.items():
            data = obj.vectors.get(target) if named else obj.vector
            if data is None:
                continue
            stored = struct.unpack(f"<{len(data) // 4}f", data)
            if len(stored) != len(query):
                raise DoubleError(f"vector lengths don't match: {len(query)} vs {len(stored)}")
            found[key] = _distance(config["distance"], query, stored)
        return found

    def batch_delete(self, request: batch_delete_pb2.BatchDeleteRequest) -> batch_delete_pb2.BatchDeleteReply:
        """Deletes by id only (``Filter.by_id().equal`` / ``contains_any``); other filters are UNIMPLEMENTED."""
        started = time.monotonic()
        where = request.filters
        on_id = where.target.property == "_id" or list(where.on) == ["_id"]
        operators = (base_pb2.Filters.OPERATOR_EQUAL, base_pb2.Filters.OPERATOR_CONTAINS_ANY)
        if not on_id or where.operator not in operators:
            raise _unimplemented("delete filters other than by id")
        values = list(where.value_text_array.values) if where.HasField("value_text_array") else [where.value_text]
        with self._lock:
            shard = self.get_class(request.collection).shard(request.tenant)
            keys = set()
            for value in values:
                try:
                    keys.add(uuid_lib.UUID(value).int)
                except ValueError as exc:
                    raise DoubleError(f"invalid uuid {value!r}") from exc
            matches = [k for k in sorted(keys) if k in shard][:_QUERY_MAXIMUM_RESULTS]
            if not request.dry_run:
                for key in matches:
                    del shard[key]
                self.writes += 1
        objects = [
            batch_delete_pb2.BatchDeleteObject(uuid=uuid_lib.UUID(int=k).bytes, successful=True)
            for k in matches
            if request.verbose
        ]
        return batch_delete_pb2.BatchDeleteReply(
            took=time.monotonic() - started,
            matches=len(matches),
            successful=len(matches),
            failed=0,
            objects=objects,
        )

    @staticmethod
    def _wanted_properties(request: search_get_pb2.SearchRequest, schema_props: dict[str, Any]) -> set[str]:
        if not request.HasField("properties") or request.properties.return_all_nonref_properties:
            return {name for name, prop in schema_props.items() if prop["dataType"][0] != "blob"}
        if request.properties.ref_properties:
            raise DoubleError("references are not supported by the test double", code=grpc.StatusCode.UNIMPLEMENTED)
        names = set(request.properties.non_ref_properties)
        names |= {p.prop_name for p in request.properties.object_properties}
        return names

    def tenants_get(self, request: tenants_pb2.TenantsGetRequest) -> tenants_pb2.TenantsGetReply:
        started = time.monotonic()
        with self._lock:
            cls = self.get_class(request.collection)
            if not cls.multi_tenant:
                raise DoubleError(f"multi-tenancy is not enabled for class {cls.schema['class']!r}")
            names = list(request.names.values) if request.HasField("names") else list(cls.tenants)
            tenants = [
                tenants_pb2.Tenant(name=name, activity_status=_GRPC_STATUS.get(cls.tenants[name], 0))
                for name in names
                if name in cls.tenants
            ]
        return tenants_pb2.TenantsGetReply(took=time.monotonic() - started, tenants=tenants)

    def aggregate(self, request: aggregate_pb2.AggregateRequest) -> aggregate_pb2.AggregateReply:
        started = time.monotonic()
        for unsupported in ("filters", "group_by", "hybrid", "near_vector", "near_object", "near_text"):
            if request.HasField(unsupported):
                raise _unimplemented(unsupported)
        if request.aggregations:
            raise DoubleError("property aggregations are not supported", code=grpc.StatusCode.UNIMPLEMENTED)
        with self._lock:
            count = len(self.get_class(request.collection).shard(request.tenant))
        return aggregate_pb2.AggregateReply(
            took=time.monotonic() - started,
            single_result=aggregate_pb2.AggregateReply.Single(objects_count=count),
        )


def _distance(metric: str, a: Any, b: Any) -> float:
    if metric == "cosine":
        norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
        return 1.0 - (math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0)
    if metric == "dot":
        return -math.fsum(x * y for x, y in zip(a, b, strict=True))
    if metric == "l2-squared":
        return math.fsum((x - y) ** 2 for x, y in zip(a, b, strict=True))
    raise _unimplemented(f"{metric} distance")


def _unimplemented(what: str) -> DoubleError:
    return DoubleError(f"{what} is not supported by the test double", code=grpc.StatusCode.UNIMPLEMENTED)


def _id_as_bytes(object_id: str) -> bytes:
    """As the server sends it: the UUID as a big-endian integer, leading zero bytes dropped."""
    value = uuid_lib.UUID(object_id).int
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


class _Servicer(weaviate_pb2_grpc.WeaviateServicer):
    def __init__(self, double: WeaviateDouble) -> None:
        self.double = double

    def _run(self, method: str, context: grpc.ServicerContext, call: Any) -> Any:
        double = self.double
        double.calls[f"grpc {method}"] += 1
        if double.faults.take():
            context.abort(grpc.StatusCode.UNAVAILABLE, "injected failure")
        metadata = dict(context.invocation_metadata())
        if not double.authorized(metadata.get("authorization")):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "unauthorized: invalid or missing api key")
        try:
            return call()
        except DoubleError as exc:
            context.abort(exc.code, str(exc))

    def Search(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._run("Search", context, lambda: self.double.search(request))

    def BatchObjects(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._run("BatchObjects", context, lambda: self.double.batch_objects(request))

    def BatchDelete(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._run("BatchDelete", context, lambda: self.double.batch_delete(request))

    def TenantsGet(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._run("TenantsGet", context, lambda: self.double.tenants_get(request))

    def Aggregate(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._run("Aggregate", context, lambda: self.double.aggregate(request))


def _make_handler(double: WeaviateDouble) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def _handle(self, method: str) -> None:
            path = unquote(urlsplit(self.path).path).rstrip("/")
            raw = self._read_body() if method in ("POST", "PUT", "PATCH") else b""
            body = json.loads(raw) if raw else None
            double.calls[f"{method} {_SCHEMA_CLASS.sub('/v1/schema/{class}', path)}"] += 1
            if double.faults.take():
                self._reply(503, {"error": [{"message": "injected failure: service unavailable"}]})
                return
            if not path.startswith("/v1/.well-known/") and not double.authorized(self.headers.get("Authorization")):
                message = "anonymous access not enabled, please provide an auth scheme such as OIDC"
                if self.headers.get("Authorization"):
                    message = "unauthorized: invalid api key"
                self._reply(401, {"code": 401, "message": message})
                return
            try:
                status, reply = self._route(method, path, body)
            except DoubleError as exc:
                status, reply = exc.status, {"error": [{"message": str(exc)}]}
            self._reply(status, reply)

        def _route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
            parts = path.split("/")[2:]  # after "/v1"
            if method == "GET" and path == "/v1/meta":
                return 200, double.meta()
            if method == "GET" and path in ("/v1/.well-known/ready", "/v1/.well-known/live"):
                return 200, None
            if method == "GET" and path == "/v1/.well-known/openid-configuration":
                return 404, None
            if parts[:1] == ["schema"]:
                if len(parts) == 1 and method == "GET":
                    return 200, double.schema()
                if len(parts) == 1 and method == "POST":
                    return 200, double.create_class(body or {})
                if len(parts) == 2 and method == "GET":
                    with double._lock:
                        try:
                            return 200, deepcopy(double.get_class(parts[1]).schema)
                        except DoubleError:
                            return 404, None
                if len(parts) == 2 and method == "DELETE":
                    double.delete_class(parts[1])
                    return 200, None
                if len(parts) == 3 and parts[2] == "tenants" and method == "GET":
                    return 200, double.list_tenants(parts[1])
                if len(parts) == 3 and parts[2] == "tenants" and method == "POST":
                    return 200, double.create_tenants(parts[1], body or [])
            return 404, {"code": 404, "message": f"path {path} was not found"}

    return Handler
