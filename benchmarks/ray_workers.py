"""Distributed scans (issue #14): the fast tier on a local Ray cluster of 1 and 2 workers, and in-process.

    python benchmarks/ray_workers.py --records 20000 [--profile small]

Fills an embedded LanceDB table as ``benchmarks/rescan.py`` does (MiniLM vectors of real sentences with a
little noise, no text), then runs three first scans of it, each with its own state, one after the other:
in-process, ``--executor ray --workers 1`` and ``--executor ray --workers 2`` (a local cluster of that many
CPUs, started by the scan). Prints one Markdown table and checks that the three reports agree. Besides the whole
command's time, the table gives the Ray scan's own account: how long until the first outcomes reached the
state (cluster, actors loading the attacks, the first pages) and the rate from then on.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import numpy as np
from common import bench_parser
from rescan import base_vectors, timed_scan, write


def main() -> None:
    parser = bench_parser(__doc__, records=20_000)
    parser.add_argument("--profile", default="small")
    options = parser.parse_args()
    from vdbguard.connectors.lancedb import LanceDBConnector

    with tempfile.TemporaryDirectory(prefix="vdbguard-ray-") as tmp:
        workdir = Path(tmp)
        store = workdir / "lance"
        base = base_vectors(5000, workdir)
        with LanceDBConnector(collection="bench", path=str(store)) as connector:
            connector.ensure_collection(base.shape[1], "cosine")
            write(connector, base, np.arange(options.records), seed=0)
        scan = [
            "scan", "--connector", "lancedb", "--path", str(store), "--collection", "bench",
            "--profile", options.profile, "--batch-size", "1000", "--format", "json", "--fail-on", "never",
        ]  # fmt: skip
        runs = {
            "in-process": [],
            "ray, 1 worker": ["--executor", "ray", "--workers", "1"],
            "ray, 2 workers": ["--executor", "ray", "--workers", "2"],
        }
        rows, reports = [], []
        for i, (name, extra) in enumerate(runs.items()):
            out, state = workdir / f"out{i}", workdir / f"{i}.sqlite"
            seconds, rss, output, _ = timed_scan([*scan, *extra, "--state", str(state), "--out", str(out)])
            steady = re.search(r"first outcomes after ([\d.]+) s .*then (\d+) records/s", output)
            report = json.loads((out / "report.json").read_text())
            reports.append({k: report[k] for k in ("summary", "findings", "record_problems")})
            rows.append((name, seconds, rss, steady and (float(steady[1]), int(steady[2]))))
    print(f"\n{options.records:,} records, profile {options.profile}, first scans, the same report each way: "
          f"{all(r == reports[0] for r in reports)}\n")  # fmt: skip
    print("| executor | wall (s) | records/s | vs 1 Ray worker | first outcomes after (s) | then records/s | vs 1 Ray "
          "worker | peak RSS of the scan command (MiB) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    one, one_steady = rows[1][1], rows[1][3][1]
    for name, seconds, rss, steady in rows:
        after, rate = steady or ("—", None)
        then = f"{rate:,} | {rate / one_steady:.2f}×" if rate else "— | —"
        print(f"| {name} | {seconds:.1f} | {options.records / seconds:,.0f} | {one / seconds:.2f}× | {after} | {then} "
              f"| {rss:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
