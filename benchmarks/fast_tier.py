"""What sets the fast tier's rate (issue #14): the same first scan over four kinds of collection.

    python benchmarks/fast_tier.py --records 10000

Each collection is an embedded LanceDB table of ``--records`` 384-d vectors: random vectors with a short
distinct text in the payload (as ``benchmarks/export.py`` writes them), the same without text, MiniLM vectors of
that many distinct real sentences (shared/tools/real-text) and MiniLM vectors of 500 real sentences repeated
with a little noise (as ``benchmarks/rescan.py`` writes them at scale). Each is scanned in-process (fast tier,
profile small, pages of 1,000, calibration off) once to warm the models, then timed; the PII detector's
share is timed around ``PresidioDetector.detect_many`` with the number of texts it read. Prints one table.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from common import bench_parser
from export import make_records
from rescan import base_vectors, write
from vdbguard.connectors.lancedb import LanceDBConnector

from vdbguard.detectors.presidio import PresidioDetector
from vdbguard.embedders import Embedder
from vdbguard.scan.owner import OFF
from vdbguard.scan.run import scan_collection


def fill(path: Path, kind: str, n: int, work: Path) -> None:
    with LanceDBConnector(collection="bench", path=str(path)) as connector:
        connector.ensure_collection(384, "cosine")
        if kind.startswith("random"):
            records = make_records(n, 384)
            if kind == "random, no text":
                records = [dataclasses.replace(r, text=None) for r in records]
            connector.upsert(records)
        else:
            write(connector, base_vectors(n if kind == "real, distinct" else 500, work), np.arange(n), seed=0)


def timed_detector() -> tuple[dict[str, float], Callable[[], None]]:
    """Seconds in ``detect_many`` and texts it read, from here on; and a way to put the method back."""
    plain, spent = PresidioDetector.detect_many, {"seconds": 0.0, "texts": 0}

    def detect_many(self: PresidioDetector, texts: Sequence[str]) -> list:
        started = time.perf_counter()
        try:
            return plain(self, texts)
        finally:
            spent["seconds"] += time.perf_counter() - started
            spent["texts"] += len(texts)

    PresidioDetector.detect_many = detect_many  # type: ignore[method-assign]
    return spent, lambda: setattr(PresidioDetector, "detect_many", plain)


def main() -> None:
    options = bench_parser(__doc__, records=10_000).parse_args()
    kinds = ("random, text in payload", "random, no text", "real, distinct", "real, 500 repeated")
    embedder, rows = Embedder(), []
    with tempfile.TemporaryDirectory(prefix="vdbguard-fast-tier-") as tmp:
        for number, kind in enumerate(kinds):
            path = Path(tmp) / f"table{number}"
            fill(path, kind, options.records, Path(tmp))

            def scan(path: Path = path) -> int:
                with LanceDBConnector(collection="bench", path=str(path)) as connector:
                    report = scan_collection(
                        connector, connector_name="lancedb", location="bench", embedder=embedder,
                        profile="small", batch_size=1000, calibration=OFF,
                    )  # fmt: skip
                return report.summary.records_scanned

            scan()
            spent, restore = timed_detector()
            started = time.perf_counter()
            assert scan() == options.records
            seconds = time.perf_counter() - started
            restore()
            rows.append((kind, seconds, spent["seconds"], spent["texts"]))
    print(f"\n{options.records:,} records a collection, fast tier, profile small, models warm\n")
    print("| collection | scan (s) | records/s | PII detector (s) | share | texts the detector read |")
    print("|---|---|---|---|---|---|")
    for kind, seconds, detector, texts in rows:
        rate, share = options.records / seconds, detector / seconds
        print(f"| {kind} | {seconds:.1f} | {rate:,.0f} | {detector:.1f} | {share:.0%} | {texts:,} |")


if __name__ == "__main__":
    main()
