"""The PII detector in one process against one process plus workers (issue #14), on real sentences.

    python benchmarks/detector_workers.py --records 4000 [--processes 2]

Runs ``PresidioDetector.detect_many`` over ``--records`` real sentences (``common.real_sentences``) in this process,
then through ``ProcessSharedDetector`` with ``--processes`` processes, once its workers are ready. Prints both
times, whether the results are identical, how long a worker took to be ready, and each process's RSS.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from common import bench_parser
from rescan import real_lines

from vdbguard.detectors.presidio import PresidioDetector
from vdbguard.detectors.shared import ProcessSharedDetector


def rss_mib(pid: int) -> int:
    """Resident memory of a process, from Linux's /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def main() -> None:
    options = bench_parser(__doc__, records=4000, processes=2).parse_args()
    with tempfile.TemporaryDirectory() as folder:
        lines = real_lines(20_000 + options.records, Path(folder))[20_000:]
    alone = PresidioDetector()
    alone.detect_many(lines[:100])
    started = time.perf_counter()
    expected = alone.detect_many(lines)
    one = time.perf_counter() - started
    shared = ProcessSharedDetector(alone, options.processes, start_after=0)
    started = time.perf_counter()
    shared.detect_many(["start the workers"])
    for worker in shared._workers:
        worker.ready.wait()
    ready = time.perf_counter() - started
    started = time.perf_counter()
    found = shared.detect_many(lines)
    many = time.perf_counter() - started
    workers = [rss_mib(worker.process.pid) for worker in shared._workers]
    here = rss_mib(os.getpid())
    shared.close()
    print(f"{len(lines):,} real sentences: 1 process {one:.2f} s, {options.processes} processes {many:.2f} s")
    print(f"speed-up {one / many:.2f}x; identical results: {found == expected}")
    print(f"workers ready after {ready:.2f} s; RSS MiB: this process {here}, workers {workers}")


if __name__ == "__main__":
    main()
