"""``scan --executor ray``: the same scan spread over a Ray cluster (``pip install 'vdbguard[ray]'``).

Workers read the collection share by share along the store's own layout (``Connector.partitions``), and a
pool of actors runs the attacks on those pages with Ray Data's ``map_batches``. The attacks are loaded or
trained once, by this process, and reach the actors through Ray's object store. This process keeps the
state: it decides beforehand which records hold a current verdict (shipped to the readers) and commits
every page of outcomes, so the report and state are those of the in-process scan.

A run killed part-way resumes like any other: the readers skip what the run already committed.
"""

from __future__ import annotations

import logging
import pickle
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vdbguard.connectors.base import Connector, Partition
from vdbguard.errors import VdbguardError
from vdbguard.progress import ProgressSink, Silent
from vdbguard.scan.engine import Scanner, ScanResult, finish_run, plan, record_fraction
from vdbguard.scan.state import RecordRow, ScanStore, record_digest

FRESH, CARRIED, UNSAMPLED = "fresh", "carried", "unsampled"


@dataclass(frozen=True)
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
        with ScanStore(state_path) as store:
            run = store.begin(target, key)
            shares = connector.partitions(executor.shares(total))
            current, done = run.verdicts()
            reading = _Reading(executor.open_connector, batch_size, run.id, sample, ray.put((current, done)))
            del current, done
            scanner = ray.put(build())
            data = ray.data.from_items([{"share": pickle.dumps(s)} for s in shares], override_num_blocks=len(shares))
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


@dataclass(frozen=True)
class _Reading:
    """One share of the collection, read in a worker: what needs attacking goes on as the pickled record."""

    open_connector: Callable[[], Connector]
    batch_size: int
    run_id: int
    sample: float
    verdicts: Any  # a Ray ref to (current digests, ids this run committed)

    def __call__(self, item: dict[str, np.ndarray]) -> Iterator[dict[str, np.ndarray]]:
        ray = _ray()
        current, done = ray.get(self.verdicts)
        share: Partition = pickle.loads(item["share"][0])
        with self.open_connector() as connector:
            for batch in connector.iter_partition(share, self.batch_size):
                kinds, ids, items = [], [], []
                for record in batch.records:
                    if record.id in done:
                        continue
                    if current.get(record.id, b"") == record_digest(record):
                        kinds.append(CARRIED)
                        items.append(b"")
                    elif self.sample < 1.0 and record_fraction(record.id, self.run_id) >= self.sample:
                        kinds.append(UNSAMPLED)
                        items.append(b"")
                    else:
                        kinds.append(FRESH)
                        items.append(pickle.dumps(record))
                    ids.append(record.id)
                if ids:
                    yield _columns(kinds, ids, items)


def _attacker_holding(scanner: Any) -> type[_Attacker]:
    """The actor class, closing over the scanner's ref: as a constructor argument, Ray would warn that a
    restarted actor could find it gone."""

    class Attacker(_Attacker):
        def __init__(self) -> None:
            self.scanner = _ray().get(scanner)

    return Attacker


class _Attacker:
    """An actor holding the scanner (fetched once from the object store) that attacks each page's fresh records."""

    scanner: Scanner

    def __call__(self, page: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        fresh, passed = [], []
        for kind, record_id, item in zip(page["kind"], page["id"], page["item"], strict=True):
            if kind == FRESH:
                fresh.append(pickle.loads(item))
            else:
                passed.append((str(kind), str(record_id)))
        rows = self.scanner.attack_records(fresh) if fresh else []
        return _columns(
            [FRESH] * len(rows) + [kind for kind, _ in passed],
            [row.record_id for row in rows] + [record_id for _, record_id in passed],
            [pickle.dumps(row) for row in rows] + [b""] * len(passed),
        )


def _columns(kinds: list[str], ids: list[str], items: list[bytes]) -> dict[str, np.ndarray]:
    return {
        "kind": np.array(kinds, dtype=object),
        "id": np.array(ids, dtype=object),
        "item": np.array(items, dtype=object),
    }


def _outcomes(page: dict[str, np.ndarray]) -> tuple[list[RecordRow], list[str]]:
    rows: list[RecordRow] = []
    carried: list[str] = []
    for kind, record_id, item in zip(page["kind"], page["id"], page["item"], strict=True):
        if kind == FRESH:
            rows.append(pickle.loads(item))
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
