"""Incremental re-scans (issue #13): first scan vs re-scan of the same collection, unchanged and 1% changed.

    python benchmarks/rescan.py --records 100000 [--store lancedb|chroma] [--sample-percent 100] [--profile small]
        [--malloc cli|glibc] [--ids ordered|uuid]

Fills an embedded LanceDB table (or Chroma collection) with ``--records`` vectors: MiniLM embeddings of 5,000 real
sentences (``common.real_sentences``) with a little noise, so every vector is distinct and each looks
like a real sentence's; the payload is an id and no text. Then runs ``vdbguard scan --state`` three
times as a subprocess, each timed with its own peak memory (``wait4``): the first scan, a re-scan of the
unchanged table (the store names the same content version: nothing is read), a re-scan after a write that
changed no row (LanceDB: an empty ``add``; Chroma: one record written again as it was; either way a new version,
so every page is read, hashed and looked up), and a re-scan after 1% of the records got new vectors. Prints one
Markdown table.
Needs GNU time (Debian package `time`) for the peak memory.
``--sample-percent`` makes the first scan attack a sample, for a 1M-record run that fits in a session
(the re-scans then carry the sampled verdicts over and read the rest).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import NamedTuple

import numpy as np
from common import bench_parser, real_sentences

from vdbguard.embedders import Embedder
from vdbguard.records import VectorRecord

CHUNK = 50_000
GLIBC_ARENAS = str(8 * (os.cpu_count() or 1))  # glibc's own MALLOC_ARENA_MAX: set, it keeps the CLI off malloc


def real_lines(n: int, workdir: Path) -> list[str]:
    """The first ``n`` sentences of ``common.real_sentences`` (about 57,000 in all)."""
    return real_sentences(workdir / "real.txt")[:n]


def base_vectors(n: int, workdir: Path) -> np.ndarray:
    return Embedder().encode(real_lines(n, workdir))


def noisy(base: np.ndarray, ids: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = base[ids % len(base)] + rng.normal(0, 0.01, (len(ids), base.shape[1])).astype(np.float32)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def record_id(i: int, kind: str = "ordered") -> str:
    """``doc-0000042``, in the order the store hands records out (as the state file sorts them), or a UUID made
    from ``i``, in no order the state file shares (as most stores' ids are)."""
    if kind == "uuid":
        return str(uuid.UUID(bytes=hashlib.blake2b(str(i).encode(), digest_size=16).digest()))
    return f"doc-{i:07d}"


def write(connector, base: np.ndarray, ids: np.ndarray, seed: int, id_kind: str = "ordered") -> None:
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        vectors = noisy(base, chunk, seed + start)
        connector.upsert(
            [
                VectorRecord(id=record_id(int(i), id_kind), vector=v, payload={"doc": int(i)})
                for i, v in zip(chunk, vectors, strict=True)
            ]
        )


def connector_to(kind: str, path: Path):
    """The benchmark's collection ``bench`` in an embedded LanceDB or Chroma store at ``path``."""
    from vdbguard.connectors import load_connector

    if kind == "chroma":
        return load_connector("chroma")(collection="bench", path=str(path), create=True)
    return load_connector("lancedb")(collection="bench", path=str(path))


def scan_args(
    kind: str, store: Path, state: Path, profile: str, sample: float = 1.0, formats: str = "json"
) -> list[str]:
    """``vdbguard scan`` of that collection with a job state, 1,000-record pages, never failing on findings."""
    return [
        "scan", "--connector", kind, "--path", str(store), "--collection", "bench", "--profile", profile,
        "--state", str(state), "--batch-size", "1000", "--sample", str(sample), "--format", formats,
        "--fail-on", "never",
    ]  # fmt: skip


class Timed(NamedTuple):
    seconds: float
    rss: float  # MiB, the largest process's peak (GNU time: a forked child's own ru_maxrss starts at the parent's)
    output: str
    tree_rss: float  # MiB, the peak of the sum over the scan and its worker processes, sampled every 0.1 s


def tree_rss_mib(root: int) -> float:
    """Resident memory of ``root`` and every process under it now, from Linux's /proc (shared pages count once
    per process: an upper bound)."""
    pending, total = [root], 0
    while pending:
        pid = pending.pop()
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
            for children in Path(f"/proc/{pid}/task").glob("*/children"):
                pending.extend(int(child) for child in children.read_text().split())
        except (OSError, ValueError):
            continue  # gone meanwhile
    return total * os.sysconf("SC_PAGE_SIZE") / 2**20


def timed_scan(args: list[str]) -> Timed:
    """``vdbguard ARGS`` timed, with its peak memory measured two ways."""
    command = ["/usr/bin/time", "-f", "maxrss_kb=%M", str(Path(sys.executable).with_name("vdbguard")), *args]
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak, done = [0.0], threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            peak[0] = max(peak[0], tree_rss_mib(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = proc.communicate()
    seconds = time.monotonic() - started
    done.set()
    sampler.join()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"scan failed:\n{output}")
    rss_kb = int(output.rsplit("maxrss_kb=", 1)[1].split()[0])
    return Timed(seconds, rss_kb / 1024, output, peak[0])


def main() -> None:
    parser = bench_parser(__doc__, records=100_000, sample_percent=100)
    parser.add_argument("--profile", default="small")
    parser.add_argument("--formats", default="json", help="report formats each scan writes: json,md,html,sarif,csv")
    parser.add_argument("--store", choices=("lancedb", "chroma"), default="lancedb")
    parser.add_argument("--ids", choices=("ordered", "uuid"), default="ordered", help="record ids: see record_id")
    parser.add_argument(
        "--malloc",
        choices=("cli", "glibc"),
        default="cli",
        help="glibc: glibc's own malloc thresholds (MALLOC_ARENA_MAX at its default, so the CLI leaves them)",
    )
    options = parser.parse_args()
    if options.malloc == "glibc":
        os.environ["MALLOC_ARENA_MAX"] = GLIBC_ARENAS
    with tempfile.TemporaryDirectory(prefix="vdbguard-rescan-") as tmp:
        workdir = Path(tmp)
        store, state = workdir / options.store, workdir / "state.sqlite"
        base = base_vectors(5000, workdir)
        ids = np.arange(options.records)
        fill_started = time.monotonic()
        with connector_to(options.store, store) as connector:
            connector.ensure_collection(base.shape[1], "cosine")
            write(connector, base, ids, seed=0, id_kind=options.ids)
        fill_s = time.monotonic() - fill_started
        scan = scan_args(options.store, store, state, options.profile, options.sample_percent / 100, options.formats)
        rows = []
        first = timed_scan([*scan, "--out", str(workdir / "first")])
        rows.append(("first scan", first))
        rows.append(("re-scan, unchanged", timed_scan([*scan, "--out", str(workdir / "same")])))
        with connector_to(options.store, store) as connector:
            if options.store == "lancedb":
                table = connector._open()
                table.add(table.schema.empty_table())  # a new version, every row as it was
            else:
                connector.upsert(next(connector.iter_batches(batch_size=1)).records)
        rows.append(("re-scan, unchanged rows, new version", timed_scan([*scan, "--out", str(workdir / "read")])))
        changed = np.random.default_rng(1).choice(ids, size=max(options.records // 100, 1), replace=False)
        with connector_to(options.store, store) as connector:
            write(connector, base, np.sort(changed), seed=10**9, id_kind=options.ids)
        rows.append(("re-scan, 1% changed", timed_scan([*scan, "--out", str(workdir / "changed")])))
        state_mib = sum(p.stat().st_size for p in workdir.glob("state.sqlite*")) / 2**20

    print(f"\n{options.store}, {options.records:,} records (fill {fill_s:.0f} s), profile {options.profile}, "
          f"malloc {options.malloc}, ids {options.ids}, "
          f"first-scan sample {options.sample_percent}%, formats {options.formats}, "
          f"state file {state_mib:.1f} MiB\n")  # fmt: skip
    print("| run | wall (s) | speed-up vs first | peak RSS, largest process (MiB) | peak RSS, all processes (MiB) |")
    print("|---|---|---|---|---|")
    for name, timed in rows:
        print(
            f"| {name} | {timed.seconds:.1f} | {first.seconds / timed.seconds:.1f}× | {timed.rss:.0f} "
            f"| {timed.tree_rss:.0f} |"
        )
    for name, timed in rows:
        coverage = [line for line in timed.output.splitlines() if line.startswith("attacked ")]
        print(f"- {name}: {coverage[-1] if coverage else '(no coverage line)'}")


if __name__ == "__main__":
    main()
