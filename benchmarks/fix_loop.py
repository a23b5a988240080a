"""The loop a user runs on a store that leaks, as the README gives it: `vdbguard scan`, then `vdbguard protect
--transform redact` into a new collection, then `vdbguard scan --collection '*'`; each command's exit code, the copy's
rate, and the records with a PERSON finding (medium or worse) before and after protection.

    python benchmarks/fix_loop.py [--records 2000] [--out /tmp/fix-loop]

Two embedded Chroma stores of text kept beside MiniLM vectors: the demo's notes (the project's templates, half with
PII: a smoke test) and real sentences of other packages' documentation (the calibration split) with PII placed where
real text carries it, half with PII (``real_corpus``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from common import bench_parser

from vdbguard.records import VectorRecord
from vdbguard.reports.schema import Report, Severity


def build(store: Path, texts: list[str]) -> None:
    from vdbguard.connectors.chroma import ChromaConnector

    from vdbguard.embedders import Embedder

    vectors = Embedder().encode(texts)
    records = [VectorRecord(f"r{i:05d}", v, text=t) for i, (t, v) in enumerate(zip(texts, vectors, strict=True))]
    with ChromaConnector(collection="notes", path=store, create=True) as connector:
        for start in range(0, len(records), 1000):
            connector.upsert(records[start : start + 1000])


def run(*arguments: str) -> tuple[int, str]:
    environment = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(["vdbguard", *arguments], env=environment, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def person_records(report: Path) -> int:
    found = Report.model_validate_json(report.read_text()).iter_findings()
    return len({f.record_id for f in found if "PERSON" in f.pii_types and f.severity.rank >= Severity.MEDIUM.rank})


def loop(name: str, store: Path, out: Path) -> dict[str, object]:
    where = ["--connector", "chroma", "--path", str(store)]
    first, _ = run("scan", *where, "--collection", "notes", "--out", str(out / "scan"))
    protect, log = run(
        "protect", *where, "--collection", "notes", "--to-collection", "notes_safe", "--transform", "redact",
        "--out", str(out / "protect"),
    )  # fmt: skip
    copied = re.search(r"Protecting notes -> notes_safe: done, (\d+)/\d+ in (\d+)s, ([\d.]+)/s", log)
    every, _ = run("scan", *where, "--collection", "*", "--out", str(out / "every"))
    summary = json.loads((out / "every" / "store-summary.json").read_text())
    before, after = (person_records(out / "protect" / stage / "report.json") for stage in ("before", "after"))
    return {
        "store": name,
        "exit codes (scan, protect, scan '*')": (first, protect, every),
        "copy": f"{copied.group(1)} records in {copied.group(2)} s, {copied.group(3)}/s" if copied else log[-500:],
        "PERSON records, medium or worse, before -> after": f"{before} -> {after} ({1 - after / before:.1%} fewer)",
        "failed collections": len(summary["failed"]),
    }


def main() -> None:
    from vdbguard.corpus.real import real_corpus
    from vdbguard.demo import demo_texts

    parser = bench_parser(__doc__, records=2000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="fix-loop-"))
    half = args.records // 2
    stores = {
        "demo notes": [text for text, _ in demo_texts(args.records)],
        "real sentences": [item.text for item in real_corpus(half, args.records - half, seed=52, split="calibration")],
    }
    for name, texts in stores.items():
        folder = root / name.replace(" ", "-")
        build(folder / "store", texts)
        print(json.dumps(loop(name, folder / "store", folder)), flush=True)


if __name__ == "__main__":
    main()
