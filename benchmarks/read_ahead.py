"""Reading the next pages while the attacks run (issue #14): a first scan with and without read-ahead.

    python benchmarks/read_ahead.py --records 20000 [--latency-ms 0,300] [--repeats 2]

Fills an embedded Chroma collection with ``--records`` MiniLM vectors of real sentences (as
``benchmarks/rescan.py`` does), then times ``vdbguard scan`` (fast tier, profile small, pages of 1,000) as a
subprocess, with read-ahead and with the pages read in turn, alternating, best of ``--repeats``. A latency
per page stands in for a store across a network (the page waits that long before it arrives, holding no lock,
as a socket read would); 0 is the embedded store as it is. Prints one Markdown table; the findings of both
ways are compared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import bench_parser
from rescan import base_vectors, noisy

from vdbguard.records import VectorRecord


def scan_here() -> None:
    """The child: ``vdbguard scan`` with the page latency and read-ahead the parent asked for."""
    from vdbguard.connectors.chroma import ChromaConnector

    import vdbguard.scan.engine as engine
    from vdbguard.cli import main

    if os.environ["BENCH_WAY"] == "in turn":
        engine.read_ahead = lambda pages, **_: pages
    latency, plain = float(os.environ["BENCH_LATENCY"]), ChromaConnector.iter_batches

    def delayed(self: ChromaConnector, *args: object, **kwargs: object):
        for page in plain(self, *args, **kwargs):
            time.sleep(latency)
            yield page

    ChromaConnector.iter_batches = delayed  # type: ignore[method-assign]
    main(sys.argv[2:])


def timed(store: Path, out: Path, way: str, latency: float) -> tuple[float, list]:
    env = {**os.environ, "BENCH_WAY": way, "BENCH_LATENCY": str(latency), "HF_HUB_OFFLINE": "1"}
    args = ["scan", "--connector", "chroma", "--path", str(store), "--collection", "bench", "--profile", "small"]
    args += ["--batch-size", "1000", "--fail-on", "never", "--format", "json", "--out", str(out)]
    started = time.monotonic()
    child = subprocess.run([sys.executable, __file__, "--child", *args], env=env, capture_output=True, text=True)
    if child.returncode != 0:
        raise SystemExit(f"scan failed ({way}):\n{child.stderr[-3000:]}")
    seconds = time.monotonic() - started
    findings = json.loads((out / "report.json").read_text())["findings"]
    return seconds, sorted((f["record_id"], f["severity"]) for f in findings)


def main() -> None:
    parser = bench_parser(__doc__, records=20_000, repeats=2)
    parser.add_argument("--latency-ms", default="0,300")
    options = parser.parse_args()
    from vdbguard.connectors.chroma import ChromaConnector

    with tempfile.TemporaryDirectory(prefix="vdbguard-read-ahead-") as tmp:
        work = Path(tmp)
        base, ids = base_vectors(5000, work), np.arange(options.records)
        with ChromaConnector(collection="bench", path=work / "chroma", create=True) as connector:
            connector.ensure_collection(base.shape[1], "cosine")
            for start in range(0, len(ids), 5000):
                chunk = ids[start : start + 5000]
                records = [
                    VectorRecord(id=f"doc-{i:07d}", vector=v, payload={"doc": int(i)})
                    for i, v in zip(chunk, noisy(base, chunk, start), strict=True)
                ]
                connector.upsert(records)
        print(f"\n{options.records:,} records, embedded Chroma, pages of 1,000, best of {options.repeats}\n")
        print("| latency per page | pages read in turn (s) | read ahead (s) | saved |\n|---|---|---|---|")
        for latency_ms in (int(x) for x in options.latency_ms.split(",")):
            best, reports = {"in turn": float("inf"), "ahead": float("inf")}, set()
            for _ in range(options.repeats):
                for way in best:
                    seconds, findings = timed(work / "chroma", work / way, way, latency_ms / 1000)
                    best[way] = min(best[way], seconds)
                    reports.add(json.dumps(findings))
            assert len(reports) == 1, "both ways must report the same findings"
            turn, ahead = best["in turn"], best["ahead"]
            print(f"| {latency_ms} ms | {turn:.1f} | {ahead:.1f} | {1 - ahead / turn:.0%} |", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        scan_here()
    else:
        main()
