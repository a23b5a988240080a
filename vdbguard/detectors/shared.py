"""A detector spread over worker processes, so a scan's PII detection uses every core, not one.

spaCy runs in one thread; on a store that keeps each chunk's text beside its vector, detection is most of a
fast-tier scan. Workers start once a scan has shown it is big, and they never change a result: each text gets
exactly what the detector finds here, in order. A scan about to read pages starts one early, before it opens the
store: the detector (spaCy and Presidio, about 2 s) then loads on another core while pages are read, and this
process loads its own only once the scan proves big.

A worker is ``python -m vdbguard.detectors.worker NAME``, spoken to in JSON lines over its pipes, not a
``multiprocessing`` child: that would re-run the caller's main script in every worker (a user's unguarded
ingestion script, scan and all), and nothing crosses the pipe as a pickle.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import IO

from vdbguard import plugins
from vdbguard.detectors.base import Detection, Detector, Reading, build_detector
from vdbguard.identifiers import DetectorSettings
from vdbguard.pii import pii_type_of

log = logging.getLogger(__name__)

START_AFTER = 2_000  # texts read in this process first: a small scan never pays a worker's start (~2 s of a core)
CHUNK = 64  # texts per request: small enough that no core waits long for the last one
READY = "ready"
SETTINGS_FLAG = "--settings-on-stdin"  # the worker reads its DetectorSettings as JSON from its first input line
START_TIMEOUT = 120.0  # seconds a worker may take to build its detector before this process detects instead
JOIN_POLL = 0.05  # seconds between a starting worker's checks on whether any chunk is left for it once it is built
MEMO_CHARS = 20_000_000  # characters of text whose detections a process keeps (see ``Memo``)


def detector_cores() -> int:
    """Processes an in-process scan detects PII with: every core this process may use, up to 4 (each worker
    holds its own spaCy pipeline, about 200 MiB)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, 4)


def worth_a_detector_worker(plugin: str) -> bool:
    """Whether a scan about to read should load detector ``plugin`` in a worker first: with a core to spare,
    and unless this process has loaded it already."""
    return detector_cores() > 1 and not plugins.load("detectors", plugin).loaded_here()


def encode(readings: list[Reading]) -> str:
    return json.dumps(
        [{"detections": [asdict(d) for d in r.detections], "unsure": r.unsure, "doubt": r.doubt} for r in readings]
    )


def decode(line: str) -> list[Reading]:
    return [
        Reading(
            [Detection(**{**d, "pii_type": pii_type_of(d["pii_type"])}) for d in reading["detections"]],
            bool(reading["unsure"]),
            float(reading["doubt"]),
        )
        for reading in json.loads(line)
    ]


class WorkerGone(Exception):
    """A worker exited or answered out of protocol; its chunk is detected in this process instead."""


class DetectorWorker:
    """One worker process building the detector plugin ``plugin`` (with ``settings``, sent as its first line of
    input: a customer deny list may be longer than a command line may be); ``ready`` is set once it has built it.

    A scan that is going to read pages starts one before it opens the store, so the detector loads on another
    core while the store is opened and the first pages are read and hashed.
    """

    def __init__(self, plugin: str, settings: DetectorSettings | None = None) -> None:
        self.plugin = plugin
        self.settings = None if settings is None or settings.is_default else settings
        self.process = subprocess.Popen(
            [sys.executable, "-m", "vdbguard.detectors.worker", plugin, *([SETTINGS_FLAG] if self.settings else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            encoding="utf-8",
        )
        self.ready = threading.Event()
        self.settled = threading.Event()  # ready, or gone before it was
        self.alive = True
        self._finalizer = weakref.finalize(self, _end, self.process)  # a scan that fails leaves no worker
        threading.Thread(target=self._await_ready, daemon=True, name="vdbguard-detector-start").start()

    def _await_ready(self) -> None:
        if self.settings is not None:
            try:
                self._send(self.settings.model_dump_json())
            except OSError:
                self.alive = False
                self.settled.set()
                return
        if self._read() == READY:
            self.ready.set()
        else:
            self.alive = False
        self.settled.set()

    def await_ready(self, timeout: float = START_TIMEOUT) -> bool:
        """Wait for the worker to build its detector: True once it has, False if it is gone or took too long."""
        if not self.settled.wait(timeout):
            log.warning("a PII detector worker did not start within %.0f s; this process detects instead", timeout)
            self.stop()
        return self.alive and self.ready.is_set()

    def _read(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().rstrip("\n")

    def _send(self, line: str) -> None:
        stdin: IO[str] | None = self.process.stdin
        assert stdin is not None
        stdin.write(line + "\n")
        stdin.flush()

    def matches(self, plugin: str, settings: DetectorSettings | None) -> bool:
        """Whether this worker builds ``plugin`` with ``settings`` (None and the defaults are the same)."""
        theirs = None if settings is None or settings.is_default else settings.digest()
        return self.plugin == plugin and (self.settings and self.settings.digest()) == theirs

    def read(self, texts: Sequence[str]) -> list[Reading]:
        """Each text's reading (``Detector.read_many``); a worker that answers out of protocol is gone."""
        try:
            self._send(json.dumps(list(texts)))
            answers = decode(self._read())
        except (OSError, ValueError, TypeError, KeyError) as exc:
            self.alive = False
            raise WorkerGone(str(exc)) from exc
        if len(answers) != len(texts):
            self.alive = False
            raise WorkerGone(f"{len(answers)} answers for {len(texts)} texts")
        return answers

    def stop(self) -> None:
        self.alive = False
        self._finalizer()


class WorkerSlot:
    """At most one early detector worker, for the scans of one job: started by the first scan that reads, used by
    the later ones, stopped by the slot's owner."""

    def __init__(self) -> None:
        self._worker: DetectorWorker | None = None

    def worker(self, plugin: str, settings: DetectorSettings | None = None) -> DetectorWorker:
        if self._worker is None or not self._worker.alive or not self._worker.matches(plugin, settings):
            self.close()
            self._worker = DetectorWorker(plugin, settings)
        return self._worker

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None


def _end(process: subprocess.Popen[str]) -> None:
    """End a worker between requests: it keeps nothing, and its own shutdown takes a good part of a second."""
    process.kill()
    process.wait()
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()


def _stop_all(workers: list[DetectorWorker]) -> None:
    for worker in workers:
        worker.stop()


class Memo:
    """Texts' readings, kept per detector (identity and cut-off) for the life of the process, the oldest dropped past
    ``MEMO_CHARS``: ``protect`` reads a collection's texts in its scan before the copy, then again to redact them,
    and a reading depends only on the detector and the text."""

    def __init__(self, limit: int = MEMO_CHARS) -> None:
        self.limit = limit
        self._held: dict[str, OrderedDict[str, Reading]] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, identity: str, texts: Sequence[str]) -> dict[str, Reading]:
        with self._lock:
            held = self._held.get(identity, {})
            return {text: held[text] for text in texts if text in held}

    def put(self, identity: str, found: dict[str, Reading]) -> None:
        with self._lock:
            held = self._held.setdefault(identity, OrderedDict())
            for text, reading in found.items():
                if text not in held and len(text) <= self.limit:
                    held[text] = reading
                    self._chars += len(text)
            while self._chars > self.limit:
                oldest = next(kept for kept in self._held.values() if kept)
                self._chars -= len(oldest.popitem(last=False)[0])

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._chars = 0


MEMO = Memo()


class ProcessSharedDetector(Detector):
    """``detector.detect_many`` over ``processes`` processes: this one and ``processes - 1`` workers, each
    building the detector plugin of the same name.

    ``detector`` is the plugin built here, or its class, built here only when needed: once the scan proves big
    (past ``start_after`` texts), or when no worker can detect. Given an ``early`` worker (already building
    the plugin), a small scan detects there alone and never loads the detector in this process. The early
    worker stays its caller's to stop; the workers started here stop with this detector.

    This process takes chunks from the end of a batch while each ready worker takes them from the front, so
    nothing waits for a worker still starting. A chunk a worker fails to answer is detected here: a result
    is never lost. Pickling gives the plain detector, so a distributed scan's workers run their own.
    """

    def __init__(
        self,
        detector: Detector | type[Detector],
        processes: int,
        start_after: int = START_AFTER,
        early: DetectorWorker | None = None,
        settings: DetectorSettings | None = None,
    ) -> None:
        self._plugin = detector if isinstance(detector, type) else type(detector)
        self._detector = None if isinstance(detector, type) else detector
        self.settings = settings if self._detector is None else self._detector.settings
        self.name = self._plugin.name  # type: ignore[misc]
        self.version = self._plugin.version  # type: ignore[misc]
        self.max_chars = self._plugin.max_chars  # type: ignore[misc]
        self.cutoff = self._plugin.cutoff  # type: ignore[misc]
        self.processes = processes
        self.start_after = start_after
        self._read = 0
        self._expected = 0
        self._workers: list[DetectorWorker] = [early] if early is not None else []
        self._started: list[DetectorWorker] = []
        self._finalizer = weakref.finalize(self, _stop_all, self._started)

    @property
    def detector(self) -> Detector:
        if self._detector is None:
            self._detector = build_detector(self._plugin, self.settings)
        return self._detector

    def __reduce__(self) -> tuple[object, ...]:
        return build_detector, (self._plugin, self.settings)

    def detect(self, text: str) -> list[Detection]:
        return self.detect_many([text])[0]

    def close(self) -> None:
        self._finalizer()

    def expect(self, texts: int) -> None:
        """Workers start now, when ``texts`` make a big job: they load while the first texts are read."""
        self._expected = max(self._expected, texts)
        if self._big():
            self._start_workers()

    def _big(self) -> bool:
        return self._read > self.start_after or self._expected >= self.start_after

    def _start_workers(self) -> None:
        if self.processes > 1 and len(self._workers) < self.processes - 1:
            started = [DetectorWorker(self.name, self.settings) for _ in range(self.processes - 1 - len(self._workers))]
            self._workers.extend(started)
            self._started.extend(started)

    def detect_many(self, texts: Sequence[str]) -> list[list[Detection]]:
        return [reading.detections for reading in self.read_many(texts)]

    def read_many(self, texts: Sequence[str]) -> list[Reading]:
        """Each text's reading: a text this process has read before is looked up (``Memo``)."""
        identity = json.dumps([*self.identity(), getattr(self._detector, "min_score", self.cutoff)])
        known = MEMO.get(identity, texts)
        fresh = [text for text in dict.fromkeys(texts) if text not in known]
        if fresh:
            found = dict(zip(fresh, self._read_fresh(fresh), strict=True))
            MEMO.put(identity, found)
            known |= found
        # each caller's list its own; the memo's are never handed out
        return [replace(known[text], detections=list(known[text].detections)) for text in texts]

    def _read_fresh(self, texts: Sequence[str]) -> list[Reading]:
        """Each text's reading, in order: chunks from the front go to the workers, from the end to this process (once
        the scan is big, or where the detector is loaded here), and a chunk a worker fails to answer is read here. A
        worker still building its detector takes chunks once it has: a scan's first pages need not wait for it."""
        self._read += len(texts)
        big = self._big()
        if big:
            self._start_workers()
        here = self._detector is not None or big or self._plugin.loaded_here()
        workers = [w for w in self._workers if w.alive] if here else self._ready_workers()
        if not workers or (here and len(texts) <= CHUNK):
            return self.detector.read_many(texts)
        chunks = [texts[start : start + CHUNK] for start in range(0, len(texts), CHUNK)]
        found: dict[int, list[Reading]] = {}
        pending, lock = deque(range(len(chunks))), threading.Lock()

        def feed(worker: DetectorWorker) -> None:
            while not worker.settled.wait(JOIN_POLL):
                with lock:
                    if not pending:
                        return
            while worker.alive and worker.ready.is_set():
                with lock:
                    if not pending:
                        return
                    index = pending.popleft()
                try:
                    found[index] = worker.read(chunks[index])
                except WorkerGone as exc:
                    log.warning("a PII detector worker stopped (%s); this process detects its share", exc)
                    with lock:
                        pending.appendleft(index)

        feeders = [threading.Thread(target=feed, args=(w,), name="vdbguard-detector-feed") for w in workers]
        for feeder in feeders:
            feeder.start()
        while here:
            with lock:
                if not pending:
                    break
                index = pending.pop()
            found[index] = self.detector.read_many(chunks[index])
        for feeder in feeders:
            feeder.join()
        for index in range(len(chunks)):  # what a worker gave back after this process had finished, or never
            if index not in found:
                found[index] = self.detector.read_many(chunks[index])
        return [answer for index in range(len(chunks)) for answer in found[index]]

    def _ready_workers(self) -> list[DetectorWorker]:
        """The workers that can take a chunk, once those still building their detector are built (nothing is built
        here to detect with meanwhile)."""
        for worker in self._workers:
            if worker.alive:
                worker.await_ready()
        return [w for w in self._workers if w.alive and w.ready.is_set()]
