"""``scan --executor ray``: the fast tier's attacks run by a pool of Ray actors (``pip install 'vdbguard[ray]'``).

The scan loop is the in-process one (``engine.scan_incrementally``): this process reads the collection, keeps
the state, names duplicate ids, runs the deep tier and commits every page in reading order; the actors only
attack the records it hands them, several pages at a time. The attacks are loaded or trained once, by this
process, and reach the actors through Ray's object store. The report and state are therefore the in-process
scan's, and a run killed part-way resumes from its last committed page with either executor.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import Finding, RecordProblem
from vdbguard.scan.engine import Scanner, freeze_long_lived, plan
from vdbguard.scan.state import RecordRow


@dataclasses.dataclass
class RayExecutor:
    """Where and how wide the attacks run. ``address`` is a running cluster's (``ray start --head`` prints it);
    None starts a local one of ``workers`` CPUs for this scan, stopped when it ends."""

    workers: int = 2
    address: str | None = None
    _actors: list[Any] = dataclasses.field(default_factory=list, init=False, repr=False)
    _started_here: bool = dataclasses.field(default=False, init=False, repr=False)
    _handed: int = dataclasses.field(default=0, init=False, repr=False)
    _began: float = dataclasses.field(default=0.0, init=False, repr=False)  # when the actors were asked for
    _first: float | None = dataclasses.field(default=None, init=False, repr=False)  # the first rows back
    _latest: float = dataclasses.field(default=0.0, init=False, repr=False)
    _after_first: int = dataclasses.field(default=0, init=False, repr=False)  # rows back since the first

    @property
    def pages_ahead(self) -> int:
        """Two pages an actor: each has the next while its last one's rows travel back."""
        return 2 * self.workers

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._first is not None and self._after_first:
            plan.info(
                "ray: %d workers; first outcomes after %.1f s (actors loading the attacks), then %.0f records/s",
                self.workers,
                self._first - self._began,
                self._after_first / max(self._latest - self._first, 1e-9),
            )
        self._actors.clear()
        if self._started_here:
            _ray().shutdown()
            self._started_here = False

    def submit(
        self, scanner: Callable[[], Scanner], records: Sequence[VectorRecord], digests: Sequence[bytes]
    ) -> Callable[[], list[RecordRow]]:
        """The records, as JSON and float32 bytes, to the next actor in turn; the actors are made, each holding the
        scanner, at the first page."""
        ray = _ray()
        if not self._actors:  # the first page with a record to attack: a re-scan of what is unchanged starts nothing
            self._began = time.monotonic()
            self._started_here = not ray.is_initialized()
            if self._started_here:
                ray.init(
                    address=self.address,
                    num_cpus=None if self.address else self.workers,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                )
            holder = _attacker_holding(ray.put(scanner()))
            self._actors = [holder.remote() for _ in range(self.workers)]
        items = [_record_item(record, digest) for record, digest in zip(records, digests, strict=True)]
        actor = self._actors[self._handed % len(self._actors)]
        self._handed += 1
        pending = actor.attack.remote([item for item, _ in items], [vector for _, vector in items])

        def rows() -> list[RecordRow]:
            got = [_row_from(item) for item in ray.get(pending)]
            self._latest = time.monotonic()
            if self._first is None:
                self._first = self._latest
            else:
                self._after_first += len(got)
            return got

        return rows


def _attacker_holding(scanner: Any) -> Any:
    """The actor class, closing over the scanner's ref: as a constructor argument, Ray would warn that a
    restarted actor could find it gone. A lost actor fails the scan (run it again to resume)."""
    ray = _ray()

    @ray.remote(num_cpus=1, max_restarts=0)
    class Attacker:
        def __init__(self) -> None:
            self.scanner: Scanner = ray.get(scanner)
            freeze_long_lived()

        def attack(self, items: list[str], vectors: list[bytes]) -> list[str]:
            records, digests = zip(*map(_record_from, items, vectors), strict=True)
            return [_row_item(row) for row in self.scanner.attack_records(records, digests)]

    return Attacker


def _record_item(record: VectorRecord, digest: bytes) -> tuple[str, bytes]:
    """A record as JSON and its vector's float32 bytes: vdbguard's own exchanges with the actors are data, never
    pickles."""
    vector = None if record.vector is None else np.asarray(record.vector, dtype=np.float32)
    fields = {
        "id": record.id,
        "digest": digest.hex(),
        "payload": record.payload,
        "text": record.text,
        "collection": record.collection,
        "namespace": record.namespace,
        "named": sorted(record.named_vectors),  # a missing vector's problem names the ones the record holds
        "shape": None if vector is None else list(vector.shape),
    }
    return json.dumps(fields, default=str), b"" if vector is None else vector.tobytes()


def _record_from(item: str, vector: bytes) -> tuple[VectorRecord, bytes]:
    fields = json.loads(item)
    shape = fields["shape"]
    record = VectorRecord(
        fields["id"],
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


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise VdbguardError("--executor ray needs Ray", "pip install 'vdbguard[ray]', or drop --executor ray") from exc
    # Ray starts its processes with fork and exec, which LanceDB's fork hook warns about as if it forked alone.
    warnings.filterwarnings("ignore", message="lancedb fork support", category=RuntimeWarning)
    return ray
