"""What the CLI's fixed malloc thresholds cost and buy (issues #13, #14): the same scans, alternated in one run.

    python benchmarks/malloc_thresholds.py --records 100000 --repeats 2

Fills an embedded LanceDB table as ``rescan.py`` does, then alternates three settings for each run:
``glibc`` (``MALLOC_ARENA_MAX`` at glibc's own default, so the CLI leaves glibc's thresholds alone), ``arena2``
(``MALLOC_ARENA_MAX=2``, likewise) and ``cli`` (no ``MALLOC_*``: the CLI fixes the mmap and trim thresholds).
Each setting gets ``--repeats`` first scans (each with a fresh state) and ``--repeats`` re-scans of the same 1%
changed records from one saved state. Prints wall seconds and peak RSS per run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
from common import bench_parser
from rescan import GLIBC_ARENAS, base_vectors, connector_to, scan_args, timed_scan, write

SETTINGS = {"glibc": GLIBC_ARENAS, "arena2": "2", "cli": None}


def use(setting: str) -> None:
    os.environ.pop("MALLOC_ARENA_MAX", None)
    if SETTINGS[setting] is not None:
        os.environ["MALLOC_ARENA_MAX"] = SETTINGS[setting]


def main() -> None:
    options = bench_parser(__doc__, records=100_000, repeats=2).parse_args()
    with tempfile.TemporaryDirectory(prefix="vdbguard-malloc-") as tmp:
        work = Path(tmp)
        store, state, saved = work / "lancedb", work / "state.sqlite", work / "saved.sqlite"
        base = base_vectors(5000, work)
        ids = np.arange(options.records)
        with connector_to("lancedb", store) as connector:
            connector.ensure_collection(base.shape[1], "cosine")
            write(connector, base, ids, seed=0)

        def scan(state_file: Path) -> list[str]:
            return [*scan_args("lancedb", store, state_file, "default"), "--out", str(work / "out")]

        use("cli")
        timed_scan(scan(saved))
        changed = np.random.default_rng(1).choice(ids, size=max(options.records // 100, 1), replace=False)
        with connector_to("lancedb", store) as connector:
            write(connector, base, np.sort(changed), seed=10**9)
        print("| run | setting | wall (s) | peak RSS (MiB) |\n|---|---|---|---|")
        for run in ("first scan", "re-scan, 1% changed"):
            for _ in range(options.repeats):
                for setting in SETTINGS:
                    use(setting)
                    for old in work.glob("state.sqlite*"):
                        old.unlink()
                    if run != "first scan":
                        shutil.copy(saved, state)
                    seconds, rss, *_ = timed_scan(scan(state))
                    print(f"| {run} | {setting} | {seconds:.1f} | {rss:.0f} |", flush=True)


if __name__ == "__main__":
    main()
