"""The user's own command, timed as a user meets it: `vdbguard scan --connector X --path P --collection C --out O`,
default flags, in a fresh process with an empty home (cold: no cache of vdbguard's), on embedded Chroma and LanceDB
stores, small and large, with the text beside the vectors and without; beside it the raw export (every record read
through the connector, nothing attacked) and the same command again with the cache it left (warm).

    python benchmarks/scan_command.py [--large 20000] [--stores chroma,lancedb] [--out /tmp/scan-command] \
        [--before /tmp/old]   # a checkout of an earlier commit (git worktree add /tmp/old REV), timed alongside

Small is the demo's 2,000 notes (half with PII, the project's templates); large is real sentences of other
packages' documentation (the calibration split) with names and other PII placed where real text carries them, half
with PII (``real_corpus``), or a seeded sample of the lines of ``--sentences FILE``; embedded once with MiniLM and
written to every store. Prints one Markdown table.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import bench_parser

from vdbguard.records import VectorRecord

COMMAND = ["vdbguard", "scan", "--connector", "{connector}", "--path", "{path}", "--collection", "notes", "--out"]


def records_of(large: int, sentences: Path | None) -> dict[str, list[VectorRecord]]:
    from vdbguard.corpus.real import real_corpus
    from vdbguard.demo import demo_texts
    from vdbguard.embedders import Embedder

    if sentences is None:
        large_texts = [item.text for item in real_corpus(large // 2, large - large // 2, seed=7, split="calibration")]
    else:
        lines = [line.strip() for line in sentences.read_text(encoding="utf-8").splitlines() if line.strip()]
        large_texts = random.Random(7).sample(lines, large)
    texts = {"small": [text for text, _ in demo_texts(2000)], "large": large_texts}
    embedder = Embedder()
    made = {}
    for size, rows in texts.items():
        vectors = embedder.encode(rows)
        made[size] = [VectorRecord(f"r{i:06d}", v, text=t) for i, (t, v) in enumerate(zip(rows, vectors, strict=True))]
    return made


def fill(connector: str, path: Path, records: list[VectorRecord], with_text: bool) -> None:
    from vdbguard.connectors import load_connector

    rows = records if with_text else [VectorRecord(r.id, r.vector) for r in records]
    options = {"create": True} if connector == "chroma" else {}
    with load_connector(connector)(collection="notes", path=path, **options) as store:
        store.ensure_collection(len(rows[0].vector), "cosine")
        for start in range(0, len(rows), 1000):
            store.upsert(rows[start : start + 1000])


def export_seconds(connector: str, path: Path) -> float:
    """Every record read through the connector, as a scan reads a page: ids, vectors and texts."""
    code = (
        f"import time; from vdbguard.connectors import load_connector; cls = load_connector({connector!r})\n"
        "t = time.monotonic()\n"
        f"with cls(collection='notes', path={str(path)!r}) as c:\n"
        "    n = sum(len(b.source_texts()) for b in c.iter_batches(batch_size=256))\n"
        "print(time.monotonic() - t)"
    )
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)


def scan_seconds(connector: str, path: Path, out: Path, home: Path, code: Path | None = None) -> float:
    """The README's command, with its default flags (exit 0 or 1, never 2); ``code``: another checkout's package
    in place of this one (``--before``)."""
    command = [part.format(connector=connector, path=path) for part in COMMAND] + [str(out)]
    environment = {**os.environ, "HOME": str(home), "HF_HUB_OFFLINE": "1"}
    environment.pop("VDBGUARD_CACHE_DIR", None)
    if code is not None:
        environment["PYTHONPATH"] = str(code)
    started = time.monotonic()
    result = subprocess.run(command, env=environment, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return seconds


def rate(records: int, seconds: float) -> str:
    return f"{seconds:.1f} s ({records / seconds:,.0f}/s)"


def main() -> None:
    parser = bench_parser(__doc__, large=20_000)
    parser.add_argument("--stores", default="chroma,lancedb")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--before", type=Path, help="a checkout of an earlier commit: its command timed alongside")
    parser.add_argument("--sentences", type=Path, help="the large store's text: a seeded sample of this file's lines")
    parser.add_argument("--sizes", default="small,large")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="scan-command-"))
    made = {size: records for size, records in records_of(args.large, args.sentences).items() if size in args.sizes}
    versions = [("now", None)] + ([("before", args.before)] if args.before else [])
    header = ["store", "records", "text", "raw export"]
    header += [f"scan cold{'' if name == 'now' else ', before'}" for name, _ in versions]
    header += [f"scan warm{'' if name == 'now' else ', before'}" for name, _ in versions]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for connector in args.stores.split(","):
        for size, records in made.items():
            for with_text in (True, False):
                where = root / f"{connector}-{size}-{'text' if with_text else 'vectors'}"
                fill(connector, where / "store", records, with_text)
                n = len(records)
                cells = [
                    connector,
                    f"{n:,}",
                    "kept" if with_text else "none",
                    rate(n, export_seconds(connector, where / "store")),
                ]
                for run in ("cold", "warm"):  # alternating versions, so a busier minute weighs on both
                    for name, code in versions:
                        home = where / f"home-{name}"
                        cells.append(
                            rate(n, scan_seconds(connector, where / "store", where / f"{run}-{name}", home, code))
                        )
                rows.append("| " + " | ".join(cells) + " |")
                print(rows[-1], flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
