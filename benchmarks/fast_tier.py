"""What sets the fast tier's rate (issue #14): the same first scan over five kinds of collection.

    python benchmarks/fast_tier.py --records 10000 [--kinds text,random,real,repeated,stored]

Each collection is an embedded LanceDB table of ``--records`` 384-d vectors:
- ``text``: random vectors with a short distinct text in the payload (as ``benchmarks/export.py`` writes them);
- ``random``: the same without text;
- ``real``: MiniLM vectors of that many distinct real sentences (``common.real_sentences``), no text;
- ``repeated``: MiniLM vectors of 500 real sentences repeated with a little noise (as ``benchmarks/rescan.py``
  writes them at scale), no text;
- ``stored``: as a RAG store keeps them, MiniLM vectors of distinct real sentences, each stored beside its
  vector (at most 50,000 records).
Each is scanned in-process (fast tier, profile small, pages of 1,000, calibration off) once to warm the models (the
first also once with the detector in this process), then timed with the PII detector in one process and in as many
as ``detector_cores()`` gives (each timed scan starts its own workers); the detector's share is timed around the
scan's ``detect_many`` calls, with the number of texts it read, and the attacks' around ``Scanner._infer``. Prints
one table, then the floor: each fast-tier attack's ``infer`` alone on the last collection's vectors in pages of
1,000 (best of 3 passes), with numpy's BLAS on one thread and on every core, and the bag-of-words network's two
matrix products alone.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from common import bench_parser
from export import make_records
from rescan import base_vectors, real_lines, write
from threadpoolctl import threadpool_limits
from vdbguard.connectors.lancedb import LanceDBConnector

from vdbguard.detectors.presidio import PresidioDetector
from vdbguard.detectors.shared import ProcessSharedDetector, detector_cores
from vdbguard.embedders import Embedder
from vdbguard.records import VectorRecord
from vdbguard.scan import run as run_module
from vdbguard.scan.engine import Scanner
from vdbguard.scan.owner import OFF
from vdbguard.scan.run import scan_collection
from vdbguard.scan.settings import ScanSettings, ScanTarget

KINDS = {
    "text": "random, text in payload",
    "random": "random, no text",
    "real": "real, distinct",
    "repeated": "real, 500 repeated",
    "stored": "real, the sentence in payload",
}


def fill(path: Path, kind: str, n: int, work: Path) -> None:
    with LanceDBConnector(collection="bench", path=str(path)) as connector:
        connector.ensure_collection(384, "cosine")
        if kind.startswith("random"):
            records = make_records(n, 384)
            if kind == "random, no text":
                records = [dataclasses.replace(r, text=None) for r in records]
            connector.upsert(records)
        elif kind == KINDS["stored"]:
            lines = real_lines(n, work)
            vectors = Embedder().encode(lines)
            pairs = enumerate(zip(vectors, lines, strict=True))
            connector.upsert([VectorRecord(id=f"doc-{i:07d}", vector=v, text=t) for i, (v, t) in pairs])
        else:
            write(connector, base_vectors(n if kind == "real, distinct" else 500, work), np.arange(n), seed=0)


def timed_detector() -> tuple[dict[str, float], Callable[[], None]]:
    """Seconds in the scan's ``detect_many`` calls and texts they read, from here on; and a way to put the
    methods back. Counted once per scan call, whether one process or several detected."""
    patched = (PresidioDetector, ProcessSharedDetector)
    plain = {cls: cls.detect_many for cls in patched}
    spent, depth = {"seconds": 0.0, "texts": 0}, [0]

    def timed(cls: type) -> Callable[..., list]:
        def detect_many(self: object, texts: Sequence[str]) -> list:
            depth[0] += 1
            started = time.perf_counter()
            try:
                return plain[cls](self, texts)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    spent["seconds"] += time.perf_counter() - started
                    spent["texts"] += len(texts)

        return detect_many

    def restore() -> None:
        for cls, method in plain.items():
            cls.detect_many = method  # type: ignore[method-assign]

    for cls in patched:
        cls.detect_many = timed(cls)  # type: ignore[method-assign]
    return spent, restore


def timed_inference() -> tuple[dict[str, Any], Callable[[], None]]:
    """Seconds in the scan's ``Scanner._infer`` (every attack on a page), and the scanner; and a way to put it back."""
    plain, spent = Scanner._infer, {"seconds": 0.0, "scanner": None}

    def infer(self: Scanner, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return plain(self, *args)
        finally:
            spent["seconds"] += time.perf_counter() - started
            spent["scanner"] = self

    Scanner._infer = infer  # type: ignore[method-assign]
    return spent, lambda: setattr(Scanner, "_infer", plain)


def attack_floor(scanner: Scanner, matrix: np.ndarray) -> list[tuple[str, int, float]]:
    """Records/s of each attack's ``infer`` alone, and of the bag-of-words network's matrix products, on 1 BLAS
    thread and on every core: what a scan could not beat with no other work at all."""
    pages = [matrix[start : start + 1000] for start in range(0, len(matrix), 1000)]
    work: dict[str, Callable[[np.ndarray], Any]] = {attack.name: attack.infer for attack in scanner.attacks}
    for attack in scanner.attacks:
        weights = getattr(attack, "weights", None)
        if weights is not None:
            work[f"{attack.name}: its two matrix products"] = lambda x, w=weights: (x @ w.hidden.T) @ w.out.T
    rows = []
    for threads in (1, os.cpu_count() or 1):
        with threadpool_limits(limits=threads):
            for name, function in work.items():
                function(pages[0])
                best = float("inf")
                for _ in range(3):
                    started = time.perf_counter()
                    for page in pages:
                        function(page)
                    best = min(best, time.perf_counter() - started)
                rows.append((name, threads, len(matrix) / best))
    return rows


def main() -> None:
    parser = bench_parser(__doc__, records=10_000)
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    options = parser.parse_args()
    kinds = [KINDS[key] for key in options.kinds.split(",")]
    if KINDS["stored"] in kinds and options.records > 50_000:
        parser.error("the stored-text collection holds distinct real sentences: at most 50,000 records")
    embedder, rows = Embedder(), []
    with tempfile.TemporaryDirectory(prefix="vdbguard-fast-tier-") as tmp:
        for number, kind in enumerate(kinds):
            path = Path(tmp) / f"table{number}"
            fill(path, kind, options.records, Path(tmp))

            def scan(path: Path = path) -> int:
                with LanceDBConnector(collection="bench", path=str(path)) as connector:
                    report = scan_collection(
                        connector, ScanTarget("lancedb", "bench"),
                        ScanSettings(profile="small", batch_size=1000, calibration=OFF), embedder=embedder,
                    )  # fmt: skip
                return report.summary.records_scanned

            if number == 0:  # a one-process scan detects in this process: its detector loads before any timing
                run_module.detector_cores = lambda: 1  # type: ignore[misc]
                scan()
                run_module.detector_cores = detector_cores  # type: ignore[misc]
            scan()
            for processes in (1, detector_cores()):
                run_module.detector_cores = lambda processes=processes: processes  # type: ignore[misc]
                spent, restore = timed_detector()
                inference, restore_inference = timed_inference()
                started = time.perf_counter()
                assert scan() == options.records
                seconds = time.perf_counter() - started
                restore()
                restore_inference()
                rows.append((kind, processes, seconds, spent["seconds"], spent["texts"], inference["seconds"]))
        with LanceDBConnector(collection="bench", path=str(path)) as connector:
            pages = connector.iter_batches(batch_size=1000)
            matrix = np.array([record.vector for batch in pages for record in batch.records], dtype=np.float32)
        floor = attack_floor(inference["scanner"], matrix)
    print(f"\n{options.records:,} records a collection, fast tier, profile small, models warm\n")
    columns = ["collection", "detector processes", "scan (s)", "records/s", "PII detector (s)", "share"]
    columns += ["texts it read", "attacks (s)"]
    print("| " + " | ".join(columns) + " |\n" + "|---" * len(columns) + "|")
    for kind, processes, seconds, detector, texts, attacks in rows:
        cells = [kind, processes, f"{seconds:.1f}", f"{options.records / seconds:,.0f}", f"{detector:.1f}"]
        cells += [f"{detector / seconds:.0%}", f"{texts:,}", f"{attacks:.1f}"]
        print("| " + " | ".join(map(str, cells)) + " |")
    print(f"\nEach attack alone on the {kinds[-1]} vectors, pages of 1,000, records/s\n")
    print("| work | BLAS threads | records/s |\n|---|---|---|")
    for name, threads, rate in floor:
        print(f"| {name} | {threads} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
