"""SIGKILL `vdbguard scan` (or `protect`) at random points, resume it until it finishes, and check that every
record of the collection was scanned (copied) exactly once: none skipped, none twice, the store untouched.
`protect --in-place` with each transform that is not idempotent (noise, a keyed rotation, DCPE) is killed and
resumed too, then run again without its state: every stored vector must be its original through the transform
exactly once.

The fault tests run it with a few kills; the benchmark with many (BENCHMARKS.md, "Kill and resume"):

    HF_HUB_OFFLINE=1 python -m tests.faults.kill_resume --records 20000 --kills 20 --work /tmp/faults
    HF_HUB_OFFLINE=1 python -m tests.faults.kill_resume --records 400 --kills 21 --commands in-place --work /tmp/ip
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from vdbguard.records import VectorRecord

COLLECTION = "tickets"
ROTATION_KEY = "kill-resume-test-key-0123456789abcdef"
# the transforms that are not idempotent, each at a strength `protect --in-place` runs it with
IN_PLACE = {"gaussian": 0.02, "rotation": 1.0, "dcpe": 1.0}
IN_PLACE_DIMENSION = 512  # a noise distance's relative spread is about 1/sqrt(2d): once and twice stay apart


@dataclass
class Outcome:
    """What one killed-and-resumed command did, and what the checks found."""

    command: str
    records: int
    kills: int = 0
    kills_mid_work: int = 0  # kills after the state or copy had started to fill
    redone: int = 0  # in place: records a killed run wrote after its last saved state (found marked on resume)
    runs: int = 0
    reference_seconds: float = 0.0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


def chroma_client(where: Path | str) -> Any:
    """An embedded store's client for a folder, a server's for a URL."""
    import chromadb

    if isinstance(where, Path):
        return chromadb.PersistentClient(path=str(where))
    parts = urlsplit(where)
    return chromadb.HttpClient(host=parts.hostname or "127.0.0.1", port=parts.port or 8000)


def store_records(records: int, seed: int = 0) -> list[VectorRecord]:
    """``records`` embedded sentences, one in four naming someone or a contact."""
    from vdbguard.corpus import synthetic_pii
    from vdbguard.corpus.generator import synthetic_clean
    from vdbguard.embedders import Embedder

    pii = synthetic_pii(records // 4, seed=seed)
    texts = [item.text for item in pii] + [item.text for item in synthetic_clean(records - len(pii), seed=seed)]
    vectors = Embedder().encode(texts)
    return [VectorRecord(id=f"t-{i:06d}", vector=vectors[i], text=texts[i]) for i in range(records)]


def build_store(where: Path | str, records: int, seed: int = 0, collection: str = COLLECTION) -> list[str]:
    """A Chroma collection of ``store_records``; their ids."""
    made = store_records(records, seed)
    ids, texts = [r.id for r in made], [r.text or "" for r in made]
    vectors = np.stack([r.vector for r in made if r.vector is not None])
    stored = chroma_client(where).get_or_create_collection(collection, metadata={"hnsw:space": "cosine"})
    for start in range(0, records, 4096):
        end = start + 4096
        stored.add(ids=ids[start:end], embeddings=vectors[start:end].tolist(), documents=texts[start:end])
    return ids


def unit_vectors(records: int, dimension: int = IN_PLACE_DIMENSION, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((records, dimension)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def build_vector_store(where: Path, records: int, seed: int = 0) -> np.ndarray:
    """A Chroma collection (l2) of ``unit_vectors``, a short note each, no model to load (in place, protect
    changes vectors only); the vectors, row i under id t-00000i."""
    vectors = unit_vectors(records, seed=seed)
    stored = chroma_client(where).get_or_create_collection(COLLECTION, metadata={"hnsw:space": "l2"})
    ids, notes = [f"t-{i:06d}" for i in range(records)], [f"note {i}" for i in range(records)]
    stored.add(ids=ids, embeddings=vectors.tolist(), documents=notes)
    return vectors


def committed(store: Path) -> tuple[int, int] | None:
    """An embedded Chroma store's database as last committed (its time and size), None while a transaction is
    open (SQLite's rollback journal beside it: a kill then undoes the write)."""
    database = store / "chroma.sqlite3"
    if database.with_name("chroma.sqlite3-journal").exists():
        return None
    try:
        stat = database.stat()
    except FileNotFoundError:
        return None
    return stat.st_mtime_ns, stat.st_size


def tree_digest(path: Path) -> str:
    """One hash over every file's relative path and bytes: equal before and after means nothing was written."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def vdbguard_command(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "vdbguard"), *args]


def cli_env(work: Path | None = None) -> dict[str, str]:
    """The commands' environment; with ``work``, their temp dir is ``work/tmp``, where nothing may outlive them."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VDBGUARD_TRANSFORM_KEY": ROTATION_KEY, "NO_COLOR": "1"}
    if work is not None:
        (work / "tmp").mkdir(parents=True, exist_ok=True)
        env["TMPDIR"] = str(work / "tmp")
    return env


def scratch_left(work: Path) -> list[str]:
    """The commands' scratch folders (private copies, temporary states) still in their temp dir."""
    return sorted(path.name for path in (work / "tmp").glob("vdbguard-*"))


def scan_command(
    store: Path | str,
    out: Path,
    state: Path | None = None,
    collection: str = COLLECTION,
    connector: str = "chroma",
    batch_size: int = 128,
) -> list[str]:
    """`vdbguard scan` of an embedded store (a folder) or a server (a URL), small profile, JSON report."""
    where = ["--path", str(store)] if isinstance(store, Path) else ["--url", store]
    command = ["scan", "--connector", connector, "--collection", collection, *where, "--profile", "small"]
    command += ["--format", "json", "--batch-size", str(batch_size), "--out", str(out)]
    return vdbguard_command(*command, *(["--state", str(state)] if state else []))


def _run(command: list[str], log: Path) -> int:
    with log.open("ab") as out:
        return subprocess.run(
            command, stdout=out, stderr=subprocess.STDOUT, env=cli_env(log.parent), check=False
        ).returncode


@dataclass
class Killer:
    """When to kill: after a random time up to ``seconds`` (anywhere: loading, calibrating, scanning, writing),
    or, with ``total``, when ``done()`` passes the next of ``kills`` points drawn uniformly over the records
    (always mid-work; a point a batch has already passed is dropped, so there may be fewer kills)."""

    rng: np.random.Generator
    done: Callable[[], int]
    seconds: float
    total: int = 0
    kills: int = 0
    jitter: float = 0.0  # with total: a kill waits up to this long past its point, landing anywhere in a batch
    # with total, a probe of the store (None while a write is open): half the kills wait past their point for it to
    # change (the next batch's write committed) and kill at once, between that write and the state recording it
    written: Callable[[], object] | None = None
    points: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.total:
            self.points = sorted(self.rng.uniform(0, self.total, self.kills))

    def wait(self, process: subprocess.Popen[bytes]) -> int | None:
        """The exit code, or None if the process was killed first."""
        if not self.total:
            try:
                return process.wait(timeout=self.rng.uniform(0.0, self.seconds))
            except subprocess.TimeoutExpired:
                return self._kill(process)
        done = self.done()
        self.points = [point for point in self.points if point > done]
        if not self.points:
            return process.wait()
        at = self.points.pop(0)
        while process.poll() is None:
            if self.done() >= at:
                if self.written is not None and self.rng.random() < 0.5:
                    return self._kill_at_write(process, self.written)
                try:
                    return process.wait(timeout=self.rng.uniform(0.0, self.jitter))
                except subprocess.TimeoutExpired:
                    return self._kill(process)
            time.sleep(0.05)
        return process.returncode

    def _kill_at_write(self, process: subprocess.Popen[bytes], written: Callable[[], object]) -> int | None:
        before = written()
        while process.poll() is None:
            now = written()
            if before is None:
                before = now
            elif now is not None and now != before:
                return self._kill(process)
            time.sleep(0.002)
        return process.returncode

    @staticmethod
    def _kill(process: subprocess.Popen[bytes]) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait()
        return None


def kill_until_done(command: list[str], kills: int, killer: Killer, log: Path) -> tuple[int, int, int]:
    """Run ``command``, killing it ``kills`` times as ``killer`` decides, then let it finish. Returns the kills,
    those that landed mid-work (records done, more than before), and the runs; fails on an unexpected exit."""
    killed = mid_work = runs = 0
    while True:
        runs += 1
        before = killer.done()
        with log.open("ab") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=cli_env(log.parent))
        code = killer.wait(process) if killed < kills else process.wait()
        if code is None:
            killed += 1
            mid_work += before < killer.done()
            continue
        if code not in (0, 1):  # 1: findings at or over --fail-on
            raise AssertionError(f"{command[1]} exited {code}; see {log}")
        return killed, mid_work, runs


def state_ids(state: Path) -> list[str]:
    if not state.exists():
        return []
    with sqlite3.connect(state) as db:
        try:
            return [row[0] for row in db.execute("SELECT record_id FROM records")]
        except sqlite3.OperationalError:  # killed before it made its tables
            return []


def _copied(state: Path, count: str = "copied") -> int:
    try:
        return int(json.loads(state.read_text())[count])
    except (OSError, ValueError, KeyError):  # not written yet
        return 0


def copy_contents(store: str, collection: str) -> dict[str, Any]:
    """A collection's sorted ids and one hash over every record's id, vector, document and metadata."""
    got = chroma_client(Path(store)).get_collection(collection).get(include=["embeddings", "documents", "metadatas"])
    digest = hashlib.sha256()
    for i in np.argsort(got["ids"]):
        digest.update(got["ids"][i].encode())
        digest.update(np.asarray(got["embeddings"][i], dtype=np.float32).tobytes())
        digest.update(json.dumps([got["documents"][i], got["metadatas"][i]], sort_keys=True).encode())
    return {"ids": sorted(got["ids"]), "digest": digest.hexdigest()}


def _fresh_copy_contents(store: Path, collection: str) -> dict[str, Any]:
    """``copy_contents`` in a new process: a chromadb client made before other processes wrote the store
    keeps a stale view of it."""
    call = f"copy_contents({str(store)!r}, {collection!r})"
    code = f"import json; from tests.faults.kill_resume import copy_contents; print(json.dumps({call}))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).parents[2]
    )
    return json.loads(result.stdout.splitlines()[-1])


def _findings(report: Path) -> set[tuple[str, str, tuple[str, ...]]]:
    data = json.loads(report.read_text())
    return {(f["record_id"], f["kind"], tuple(sorted(f["pii_types"]))) for f in data["findings"]}


def scan_outcome(
    work: Path,
    store: Path | str,
    ids: Sequence[str],
    kills: int,
    seed: int,
    *,
    by_progress: bool = False,
    collection: str = COLLECTION,
) -> Outcome:
    """The scan of an embedded store (a folder) or a server (a URL), killed and resumed, against a clean scan."""
    log, outcome = work / "scan.log", Outcome("scan", len(ids))
    before = tree_digest(store) if isinstance(store, Path) else None
    started = time.monotonic()
    _run(scan_command(store, work / "reference", collection=collection), log)
    outcome.reference_seconds = round(time.monotonic() - started, 1)
    state = work / "scan.sqlite"
    killer = Killer(
        np.random.default_rng(seed),
        lambda: len(state_ids(state)),
        outcome.reference_seconds,
        by_progress * len(ids),
        kills,
    )
    started = time.monotonic()
    command = scan_command(store, work / "resumed", state, collection)
    outcome.kills, outcome.kills_mid_work, outcome.runs = kill_until_done(command, kills, killer, log)
    outcome.seconds = round(time.monotonic() - started, 1)

    scanned = state_ids(state)
    report = json.loads((work / "resumed" / "report.json").read_text())
    problems = outcome.problems
    if sorted(scanned) != sorted(ids):
        missing, extra = set(ids) - set(scanned), set(scanned) - set(ids)
        problems.append(f"state holds {len(scanned)} ids: {len(missing)} missing, {len(extra)} not in the store")
    if report["summary"]["records_scanned"] != len(ids):
        problems.append(f"report counts {report['summary']['records_scanned']} records scanned, not {len(ids)}")
    flagged = [(f["record_id"], f["kind"]) for f in report["findings"]]  # a vector and a stored-text finding each
    if len(flagged) != len(set(flagged)):
        problems.append(f"{len(flagged) - len(set(flagged))} records reported twice")
    reference, resumed = _findings(work / "reference" / "report.json"), _findings(work / "resumed" / "report.json")
    if reference != resumed:
        problems.append(f"findings differ from a clean scan: {len(reference ^ resumed)} records")
    if isinstance(store, Path) and tree_digest(store) != before:
        problems.append("the store's files changed")
    if left := scratch_left(work):
        problems.append(f"scratch folders outlived the runs: {left}")
    return outcome


def protect_outcome(
    work: Path, store: Path, ids: Sequence[str], kills: int, seed: int, *, by_progress: bool = False
) -> Outcome:
    """`protect` (a keyed rotation, deterministic), killed and resumed, against a clean copy. Without the scans
    before and after: a killed scan resuming is tested on its own, and here every kill lands in the copy."""
    base = ["protect", "--connector", "chroma", "--collection", COLLECTION, "--path", str(store)]
    base += ["--transform", "rotation", "--strength", "1", "--batch-size", "32", "--no-scan"]
    log, outcome = work / "protect.log", Outcome("protect", len(ids))
    started = time.monotonic()
    _run(vdbguard_command(*base, "--to-collection", "reference"), log)
    outcome.reference_seconds = round(time.monotonic() - started, 1)
    state = work / "protect.state"
    killer = Killer(
        np.random.default_rng(seed + 1),
        lambda: _copied(state),
        outcome.reference_seconds,
        by_progress * len(ids),
        kills,
    )
    started = time.monotonic()
    command = vdbguard_command(*base, "--to-collection", "resumed", "--state", str(state))
    outcome.kills, outcome.kills_mid_work, outcome.runs = kill_until_done(command, kills, killer, log)
    outcome.seconds = round(time.monotonic() - started, 1)

    reference, resumed = (_fresh_copy_contents(store, name) for name in ("reference", "resumed"))
    if resumed["ids"] != sorted(ids):
        missing = len(set(ids) - set(resumed["ids"]))
        outcome.problems.append(f"the resumed copy holds {len(resumed['ids'])} records ({missing} missing)")
    elif resumed != reference:
        outcome.problems.append("the resumed copy differs from a clean copy")
    if left := scratch_left(work):
        outcome.problems.append(f"scratch folders outlived the runs: {left}")
    return outcome


def in_place_command(store: Path, transform: str, state: Path | None, batch_size: int = 20) -> list[str]:
    command = ["protect", "--connector", "chroma", "--collection", COLLECTION, "--path", str(store)]
    command += ["--in-place", "--yes", "--to-collection", COLLECTION, "--transform", transform]
    command += ["--strength", str(IN_PLACE[transform]), "--batch-size", str(batch_size), "--no-scan"]
    return vdbguard_command(*command, *(["--state", str(state)] if state else []))


def applied_more_or_less_than_once(transform: str, originals: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """Which stored rows are not their original through ``transform`` exactly once (a second pass, or none)."""
    from vdbguard.transforms.dcpe import DcpeScaleAndPerturb
    from vdbguard.transforms.gaussian import GaussianNoise
    from vdbguard.transforms.rotation import SecretRotation

    strength = IN_PLACE[transform]
    if transform == "gaussian":  # one draw moves a unit row by m, a second by about sqrt(2)·m: 2^(1/4) is halfway
        typical = float(np.median(np.linalg.norm(GaussianNoise(strength).apply(originals) - originals, axis=1)))
        moved = np.linalg.norm(stored - originals, axis=1)
        return (moved < typical / 2**0.25) | (moved > typical * 2**0.25)  # 6 spreads from once, 5 from twice
    if transform == "rotation":  # no noise: the original through the keyed rotation, to float32 rounding
        return ~np.isclose(stored, SecretRotation(key=ROTATION_KEY).apply(originals), atol=1e-5).all(axis=1)
    # dcpe: s·shuffle(x) + u with u in the ball of radius s·β/4; apply_query gives s·shuffle(x), of norm s here
    clean = DcpeScaleAndPerturb(strength, key=ROTATION_KEY).apply_query(originals)
    radius = np.linalg.norm(clean, axis=1) * strength / 4
    return np.linalg.norm(stored - clean, axis=1) > radius * (1 + 1e-3)


def in_place_outcome(
    work: Path,
    template: Path,
    originals: np.ndarray,
    transform: str,
    kills: int,
    seed: int,
    *,
    by_progress: bool = True,
    batch_size: int = 20,
) -> Outcome:
    """`protect --in-place` over a copy of ``template`` (``build_vector_store``, its vectors ``originals``), killed
    and resumed, then run again with its finished state and without a state (lost, or a job run twice): every
    vector must be its original through ``transform`` exactly once, and marked so."""
    from vdbguard.protect import MARK_KEY

    store, state, log = work / f"in-place-{transform}", work / f"in-place-{transform}.state", work / "in-place.log"
    shutil.copytree(template, store)  # a folder this process has no client of: read at the end, it is current
    outcome = Outcome(f"protect --in-place --transform {transform}", len(originals))
    started = time.monotonic()
    rng, total = np.random.default_rng(seed + 2), by_progress * len(originals)
    # by time: anywhere in a run (about 3 s to start, 40 records a second in place on the 2-core machine); by
    # progress: anywhere in the batch after a point, or as its write reaches the store, before its state is saved
    seconds = 3 + len(originals) / 40
    killer = Killer(rng, lambda: _copied(state), seconds, total, kills, batch_size / 40, lambda: committed(store))
    command = in_place_command(store, transform, state, batch_size)
    outcome.kills, outcome.kills_mid_work, outcome.runs = kill_until_done(command, kills, killer, log)
    outcome.seconds = round(time.monotonic() - started, 1)
    outcome.redone = _copied(state, "already")
    for again, says in ((state, "finished before"), (None, f"{len(originals)} records already carried its mark")):
        rerun = subprocess.run(
            in_place_command(store, transform, again, batch_size), capture_output=True, text=True, env=cli_env(work)
        )
        with log.open("a") as out:
            out.write(rerun.stdout + rerun.stderr)
        if rerun.returncode != 0 or says not in rerun.stdout + rerun.stderr:
            outcome.problems.append(f"a rerun {'with' if again else 'without'} the state did not say {says!r}")

    got = chroma_client(store).get_collection(COLLECTION).get(include=["embeddings", "metadatas"])
    order = np.argsort(got["ids"])
    stored = np.asarray(got["embeddings"], dtype=np.float32)[order]
    if stored.shape != originals.shape:
        outcome.problems.append(f"the store holds {stored.shape[0]} vectors, not {len(originals)}")
        return outcome
    if wrong := int(applied_more_or_less_than_once(transform, originals, stored).sum()):
        outcome.problems.append(f"{wrong} records do not hold {transform} applied exactly once")
    marks = [json.loads((got["metadatas"][i] or {}).get(MARK_KEY, "[]")) for i in order]
    if unmarked := sum([mark["transform"] for mark in marks_of] != [transform] for marks_of in marks):
        outcome.problems.append(f"{unmarked} records are not marked as protected once by {transform}")
    return outcome


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, required=True, help="an empty folder for the store, states, reports")
    parser.add_argument("--commands", default="scan,protect", help="any of scan, protect, in-place")
    parser.add_argument("--by-progress", action="store_true", help="kill mid-work only (else at any time)")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    store, commands = args.work / "store", args.commands.split(",")
    ids = build_store(store, args.records, args.seed) if {"scan", "protect"} & set(commands) else []
    outcomes = []
    for command in commands:
        if command == "in-place":
            vectors = build_vector_store(args.work / "vectors", args.records, args.seed)
            for transform in sorted(IN_PLACE):
                run_in_place = functools.partial(in_place_outcome, args.work, args.work / "vectors", vectors)
                outcomes.append(run_in_place(transform, args.kills, args.seed, by_progress=args.by_progress))
                print(json.dumps(asdict(outcomes[-1])), flush=True)
            continue
        run = scan_outcome if command == "scan" else protect_outcome
        outcomes.append(run(args.work, store, ids, args.kills, args.seed, by_progress=args.by_progress))
        print(json.dumps(asdict(outcomes[-1])), flush=True)
    sys.exit(1 if any(o.problems for o in outcomes) else 0)


if __name__ == "__main__":
    main()
