"""Where a warm first scan spends its time, stage by stage (issue #14).

    python benchmarks/scan_stages.py --records 20000

An embedded LanceDB table of ``--records`` MiniLM vectors of real sentences (the first ``--sentences`` lines of
``common.real_sentences``, repeated with a little noise, no text, as ``benchmarks/rescan.py`` writes them) is
scanned in this process (fast tier, profile small, pages of 1,000, calibration off) once to load the models, then
once more timed. Printed: the timed scan's wall seconds and how many texts the PII detector read, the seconds
inside each ``Scanner`` stage (nested stages are inside their callers: ``_best_scores`` is part of ``_fused``), and
the seconds the cyclic garbage collector ran, per generation. To time older code, put its checkout first on
``PYTHONPATH``.
"""

from __future__ import annotations

import collections
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import bench_parser
from rescan import base_vectors, connector_to, write

import vdbguard.scan.engine as engine
from vdbguard.detectors.shared import ProcessSharedDetector
from vdbguard.embedders import Embedder
from vdbguard.scan.owner import OFF
from vdbguard.scan.run import scan_collection
from vdbguard.scan.settings import ScanSettings, ScanTarget

spent: collections.Counter[str] = collections.Counter()
texts_read = [0]


def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started

    return wrapper


def count_collections() -> None:
    began = [0.0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            spent[f"garbage collector, generation {info['generation']}"] += time.perf_counter() - began[0]

    gc.callbacks.append(callback)


def main() -> None:
    parser = bench_parser(__doc__, records=20_000, sentences=5_000)
    options = parser.parse_args()
    for name in ("attack_records", "_infer", "_candidates", "_fused", "_row"):
        setattr(engine.Scanner, name, timed(name, getattr(engine.Scanner, name)))
    engine._best_scores = timed("_best_scores", engine._best_scores)
    detect_many = timed("detect_many", ProcessSharedDetector.detect_many)

    def counted(detector: ProcessSharedDetector, texts: Any) -> Any:
        texts_read[0] += len(texts)
        return detect_many(detector, texts)

    ProcessSharedDetector.detect_many = counted  # type: ignore[method-assign]
    count_collections()
    embedder = Embedder()
    with tempfile.TemporaryDirectory(prefix="vdbguard-stages-") as tmp:
        store = Path(tmp) / "lancedb"
        with connector_to("lancedb", store) as connector:
            base = base_vectors(options.sentences, Path(tmp))
            connector.ensure_collection(base.shape[1], "cosine")
            write(connector, base, np.arange(options.records), seed=0)

        def scan() -> int:
            with connector_to("lancedb", store) as connector:
                report = scan_collection(
                    connector, ScanTarget("lancedb", "bench"),
                    ScanSettings(profile="small", batch_size=1000, calibration=OFF), embedder=embedder,
                )  # fmt: skip
            return len(report.findings)

        scan()
        spent.clear()
        texts_read[0] = 0
        started = time.perf_counter()
        findings = scan()
        wall = time.perf_counter() - started
    detected = f"{texts_read[0]:,} texts detected"
    print(f"\n{options.records:,} records, a warm first scan: {wall:.2f} s, {findings:,} findings, {detected}\n")
    print("| stage | seconds |\n|---|---|")
    for name, seconds in spent.most_common():
        print(f"| {name} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
