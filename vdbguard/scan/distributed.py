"""``scan --executor ray``: the same scan spread over a Ray cluster (``pip install 'vdbguard[ray]'``).

Workers read the collection share by share along the store's own layout (``Connector.partitions``), and a
pool of actors runs the attacks on those pages with Ray Data's ``map_batches``. The attacks are loaded or
trained once, by this process, and reach the actors through Ray's object store. This process keeps the
state: it decides beforehand which records hold a current verdict (shipped to the readers) and commits
every page of outcomes, so the report and state are those of the in-process scan.

A run killed part-way resumes like any other: the readers skip what the run already committed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from vdbguard.connectors.base import Connector, Partition
from vdbguard.errors import VdbguardError
from vdbguard.progress import ProgressSink, Silent
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import Finding, RecordProblem
from vdbguard.scan.engine import (
    FRESH,
    UNSAMPLED,
    Scanner,
    ScanResult,
    carried_unread,
    classify,
    finish_run,
    freeze_long_lived,
    plan,
    rekey_duplicates,
    resumable_failures,
)
from vdbguard.scan.state import RecordRow, ScanStore, store_at


@dataclasses.dataclass(frozen=True)
class RayExecutor:
    """Where and how wide a distributed scan runs. ``open_connector`` makes, in a worker, a connector to the
    same collection (the class with its settings, credentials included: they travel to the workers).
    ``address`` is a running cluster's (``ray start --head`` prints it); None starts a local one of
    ``workers`` CPUs for this scan."""

    open_connector: Callable[[], Connector]
    workers: int = 2
    address: str | None = None
    share_records: int = 5000  # a share's outcomes reach the state together: what a killed run may redo

    def shares(self, total: int | None) -> int:
        """How many shares to ask the connector for: small enough to commit often, at least two per worker."""
        return max(2 * self.workers, -(-(total or 0) // self.share_records))


def scan_on_ray(
    connector: Connector,
    build: Callable[[], Scanner],
    key: str,
    executor: RayExecutor,
    *,
    batch_size: int = 256,
    state_path: Path | None = None,
    store: ScanStore | None = None,
    target: str = "",
    total: int | None = None,
    progress: ProgressSink | None = None,
    sample: float = 1.0,
) -> ScanResult:
    """The scan loop of ``engine.scan_incrementally``, with reading and attacking done by Ray workers."""
    ray = _ray()
    progress = progress or Silent()
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(
            address=executor.address,
            num_cpus=None if executor.address else executor.workers,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    try:
        with store_at(state_path, store) as held, resumable_failures(held, target, key, connector) as run:
            if (carried := carried_unread(run, progress, total, sample, None)) is not None:
                return carried
            shares = connector.partitions(executor.shares(total))
            current, done = run.verdicts()
            reading = _Reading(executor.open_connector, batch_size, run.id, sample, ray.put((current, done)))
            del current, done
            scanner = ray.put(build())
            items = [{"share": json.dumps(dataclasses.asdict(share))} for share in shares]
            data = ray.data.from_items(items, override_num_blocks=len(shares))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # Ray 2.60 names no successor to max_restarts
                read = ray.data.TaskPoolStrategy(size=executor.workers)
                outcomes = data.map_batches(reading, batch_size=1, compute=read, num_cpus=0).map_batches(
                    _attacker_holding(scanner),
                    batch_size=batch_size,
                    compute=ray.data.ActorPoolStrategy(size=executor.workers),
                    num_cpus=1,
                    max_restarts=0,  # a lost actor fails the scan (run it again to resume) instead of restarting
                )
            with progress.task("Scanning records", total) as advance:
                if run.resumed:
                    advance(run.count())
                started, first, after_first = time.monotonic(), None, 0
                for page in outcomes.iter_batches(batch_size=None, batch_format="numpy"):
                    rows, carried = _outcomes(page)
                    run.note_carried(carried)
                    rekey_duplicates(run, rows)
                    run.commit_batch(None, rows, carried)
                    advance(len(page["id"]))
                    if first is None:
                        first = time.monotonic()
                    else:
                        after_first += len(page["id"])
            if first is not None and after_first:
                plan.info(
                    "ray: %d shares, %d workers; first outcomes after %.1f s (actors loading the attacks), "
                    "then %.0f records/s",
                    len(shares),
                    executor.workers,
                    first - started,
                    after_first / max(time.monotonic() - first, 1e-9),
                )
            return finish_run(run, sample, None)
    finally:
        if started_here:
            ray.shutdown()


_fetched: dict[str, Any] = {}  # per worker process: the newest verdict map, by its ref


def _fetched_once(ref: Any) -> Any:
    """The object behind ``ref``, deserialised once per worker process rather than once per share: on a
    re-scan the map holds every record's digest."""
    key = ref.hex()
    if key not in _fetched:
        _fetched.clear()
        _fetched[key] = _ray().get(ref)
    return _fetched[key]


@dataclasses.dataclass(frozen=True)
class _Reading:
    """One share of the collection, read in a worker: what needs attacking goes on with its digest."""

    open_connector: Callable[[], Connector]
    batch_size: int
    run_id: int
    sample: float
    verdicts: Any  # a Ray ref to (current digests, ids this run committed)

    def __call__(self, item: dict[str, np.ndarray]) -> Iterator[dict[str, np.ndarray]]:
        current, done = _fetched_once(self.verdicts)
        share = Partition(**json.loads(item["share"][0]))
        with self.open_connector() as connector:
            for batch in connector.iter_partition(share, self.batch_size):
                page = _Page()
                for row, (record_id, digest) in enumerate(zip(batch.ids, batch.digests(), strict=True)):
                    kind = classify(
                        record_id,
                        committed=record_id in done,
                        current=current.get(record_id, b"") == digest,
                        run_id=self.run_id,
                        sample=self.sample,
                    )
                    if kind == FRESH:
                        page.add(FRESH, record_id, *_record_item(batch.take([row])[0], digest))
                    elif kind is not None:
                        page.add(kind, record_id)
                if page.ids:
                    yield page.columns()


def _attacker_holding(scanner: Any) -> type[_Attacker]:
    """The actor class, closing over the scanner's ref: as a constructor argument, Ray would warn that a
    restarted actor could find it gone."""

    class Attacker(_Attacker):
        def __init__(self) -> None:
            self.scanner = _ray().get(scanner)
            freeze_long_lived()

    return Attacker


class _Attacker:
    """An actor holding the scanner (fetched once from the object store) that attacks each page's fresh records."""

    scanner: Scanner

    def __call__(self, page: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        fresh, out = [], _Page()
        for kind, record_id, item, vector in zip(page["kind"], page["id"], page["item"], page["vector"], strict=True):
            if kind == FRESH:
                fresh.append(_record_from(str(record_id), str(item), bytes(vector)))
            else:
                out.add(str(kind), str(record_id))
        for row in self.scanner.attack_records(*zip(*fresh, strict=True)) if fresh else []:
            out.add(FRESH, row.record_id, _row_item(row))
        return out.columns()


@dataclasses.dataclass
class _Page:
    """Rows as Ray Data columns: kind, id, a JSON item and a vector's float32 bytes (JSON and bytes, never
    pickles: the state and the workers exchange only data)."""

    kinds: list[str] = dataclasses.field(default_factory=list)
    ids: list[str] = dataclasses.field(default_factory=list)
    items: list[str] = dataclasses.field(default_factory=list)
    vectors: list[bytes] = dataclasses.field(default_factory=list)

    def add(self, kind: str, record_id: str, item: str = "", vector: bytes = b"") -> None:
        self.kinds.append(kind)
        self.ids.append(record_id)
        self.items.append(item)
        self.vectors.append(vector)

    def columns(self) -> dict[str, np.ndarray]:
        columns = {"kind": self.kinds, "id": self.ids, "item": self.items, "vector": self.vectors}
        return {name: np.array(values, dtype=object) for name, values in columns.items()}


def _record_item(record: VectorRecord, digest: bytes) -> tuple[str, bytes]:
    vector = None if record.vector is None else np.asarray(record.vector, dtype=np.float32)
    fields = {
        "digest": digest.hex(),
        "payload": record.payload,
        "text": record.text,
        "collection": record.collection,
        "namespace": record.namespace,
        "named": sorted(record.named_vectors),  # a missing vector's problem names the ones the record holds
        "shape": None if vector is None else list(vector.shape),
    }
    return json.dumps(fields, default=str), b"" if vector is None else vector.tobytes()


def _record_from(record_id: str, item: str, vector: bytes) -> tuple[VectorRecord, bytes]:
    fields = json.loads(item)
    shape = fields["shape"]
    record = VectorRecord(
        record_id,
        None if shape is None else np.frombuffer(vector, dtype=np.float32).reshape(shape),
        fields["payload"],
        fields["text"],
        fields["collection"],
        fields["namespace"],
        dict.fromkeys(fields["named"], np.zeros(0, dtype=np.float32)),
    )
    return record, bytes.fromhex(fields["digest"])


def _row_item(row: RecordRow) -> str:
    fields = {field.name: getattr(row, field.name) for field in dataclasses.fields(row)} | {
        "digest": None if row.digest is None else row.digest.hex(),
        "finding": None if row.finding is None else row.finding.model_dump_json(),
        "problem": None if row.problem is None else row.problem.model_dump_json(),
        "text_finding": None if row.text_finding is None else row.text_finding.model_dump_json(),
    }
    return json.dumps(fields)


def _row_from(item: str) -> RecordRow:
    fields = json.loads(item)
    return RecordRow(
        **fields
        | {
            "digest": None if fields["digest"] is None else bytes.fromhex(fields["digest"]),
            "finding": None if fields["finding"] is None else Finding.model_validate_json(fields["finding"]),
            "problem": None if fields["problem"] is None else RecordProblem.model_validate_json(fields["problem"]),
            "text_finding": None
            if fields["text_finding"] is None
            else Finding.model_validate_json(fields["text_finding"]),
        }
    )


def _outcomes(page: dict[str, np.ndarray]) -> tuple[list[RecordRow], list[str]]:
    rows: list[RecordRow] = []
    carried: list[str] = []
    for kind, record_id, item in zip(page["kind"], page["id"], page["item"], strict=True):
        if kind == FRESH:
            rows.append(_row_from(str(item)))
        elif kind == UNSAMPLED:
            rows.append(RecordRow(str(record_id), None, attacked=False))
        else:
            carried.append(str(record_id))
    return rows, carried


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise VdbguardError("--executor ray needs Ray", "pip install 'vdbguard[ray]', or drop --executor ray") from exc
    # Ray starts its processes with fork and exec, which LanceDB's fork hook warns about as if it forked alone.
    warnings.filterwarnings("ignore", message="lancedb fork support", category=RuntimeWarning)
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # the plan, progress and timing lines of each dataset
    return ray
