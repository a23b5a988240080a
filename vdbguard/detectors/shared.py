"""A detector spread over worker processes, so a scan's PII detection uses every core, not one.

spaCy runs in one thread; on a store that keeps each chunk's text beside its vector, detection is most of a
fast-tier scan. Workers start only once a scan has shown it is big, and they never change a result: each text
gets exactly what the detector finds here, in order.

A worker is ``python -m vdbguard.detectors.worker NAME``, spoken to in JSON lines over its pipes, not a
``multiprocessing`` child: that would re-run the caller's main script in every worker (a user's unguarded
ingestion script, scan and all), and nothing crosses the pipe as a pickle.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict
from typing import IO

from vdbguard.detectors.base import Detection, Detector
from vdbguard.pii import PiiType

log = logging.getLogger(__name__)

START_AFTER = 2_000  # texts read in this process first: a small scan never pays a worker's start (~2 s of a core)
CHUNK = 64  # texts per request: small enough that no core waits long for the last one
READY = "ready"


def detector_cores() -> int:
    """Processes an in-process scan detects PII with: every core this process may use, up to 4 (each worker
    holds its own spaCy pipeline, about 200 MiB)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, 4)


def encode(detections: list[list[Detection]]) -> str:
    return json.dumps([[asdict(d) for d in found] for found in detections])


def decode(line: str) -> list[list[Detection]]:
    return [[Detection(**{**d, "pii_type": PiiType(d["pii_type"])}) for d in found] for found in json.loads(line)]


class WorkerGone(Exception):
    """A worker exited or answered out of protocol; its chunk is detected in this process instead."""


class _Worker:
    """One worker process; ``ready`` is set once it has built its detector."""

    def __init__(self, plugin: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "vdbguard.detectors.worker", plugin],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            encoding="utf-8",
        )
        self.ready = threading.Event()
        self.alive = True
        threading.Thread(target=self._await_ready, daemon=True, name="vdbguard-detector-start").start()

    def _await_ready(self) -> None:
        if self._read() == READY:
            self.ready.set()
        else:
            self.alive = False

    def _read(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().rstrip("\n")

    def detect(self, texts: Sequence[str]) -> list[list[Detection]]:
        stdin: IO[str] | None = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(list(texts)) + "\n")
            stdin.flush()
            found = decode(self._read())
        except (OSError, ValueError, TypeError, KeyError) as exc:
            self.alive = False
            raise WorkerGone(str(exc)) from exc
        if len(found) != len(texts):
            self.alive = False
            raise WorkerGone(f"{len(found)} answers for {len(texts)} texts")
        return found

    def stop(self) -> None:
        self.alive = False
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()  # the worker exits at the end of its input
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()


def _stop_all(workers: list[_Worker]) -> None:
    for worker in workers:
        worker.stop()


class ProcessSharedDetector(Detector):
    """``detector.detect_many`` over ``processes`` processes: this one and ``processes - 1`` workers, each
    building the detector plugin of the same name.

    This process takes chunks from the end of a batch while each ready worker takes them from the front, so
    nothing waits for a worker still starting. A chunk a worker fails to answer is detected here: a result
    is never lost. Pickling gives the wrapped detector, so a distributed scan's workers run their own.
    """

    def __init__(self, detector: Detector, processes: int, start_after: int = START_AFTER) -> None:
        self.detector = detector
        self.name = detector.name  # type: ignore[misc]
        self.version = detector.version  # type: ignore[misc]
        self.max_chars = detector.max_chars  # type: ignore[misc]
        self.processes = processes
        self.start_after = start_after
        self._read = 0
        self._workers: list[_Worker] = []
        self._finalizer = weakref.finalize(self, _stop_all, self._workers)

    def __reduce__(self) -> tuple[object, ...]:
        return self.detector.__reduce__()

    def detect(self, text: str) -> list[Detection]:
        return self.detector.detect(text)

    def close(self) -> None:
        self._finalizer()

    def detect_many(self, texts: Sequence[str]) -> list[list[Detection]]:
        self._read += len(texts)
        if not self._workers and self.processes > 1 and self._read > self.start_after:
            self._workers.extend(_Worker(self.detector.name) for _ in range(self.processes - 1))
        ready = [w for w in self._workers if w.alive and w.ready.is_set()]
        if not ready or len(texts) <= CHUNK:
            return self.detector.detect_many(texts)
        chunks = [texts[start : start + CHUNK] for start in range(0, len(texts), CHUNK)]
        found: dict[int, list[list[Detection]]] = {}
        pending, lock = deque(range(len(chunks))), threading.Lock()

        def feed(worker: _Worker) -> None:
            while worker.alive:
                with lock:
                    if not pending:
                        return
                    index = pending.popleft()
                try:
                    found[index] = worker.detect(chunks[index])
                except WorkerGone as exc:
                    log.warning("a PII detector worker stopped (%s); this process detects its share", exc)
                    with lock:
                        pending.appendleft(index)

        feeders = [threading.Thread(target=feed, args=(w,), name="vdbguard-detector-feed") for w in ready]
        for feeder in feeders:
            feeder.start()
        while True:
            with lock:
                if not pending:
                    break
                index = pending.pop()
            found[index] = self.detector.detect_many(chunks[index])
        for feeder in feeders:
            feeder.join()
        for index in range(len(chunks)):  # what a worker gave back after this process had finished
            if index not in found:
                found[index] = self.detector.detect_many(chunks[index])
        return [detections for index in range(len(chunks)) for detections in found[index]]
