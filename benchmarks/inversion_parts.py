"""An unbudgeted inversion run split across processes: ``evaluate-attacks`` on one set, a share of rows each.

``run`` inverts rows ``--start`` to ``--stop`` of a JSONL set (``{"text": ...}`` per line) with adversarial
decoding's defaults, one torch thread, and keeps each record's recovered text in ``--out`` after every chunk of 5
(the language model, the generative model and the vocabulary table are loaded before the clock starts).
``score`` reads the parts and scores all their records at once with ``inversion_scores``, the scorer
``evaluate-attacks`` uses, adding CPU-seconds and encoder queries per record. Run from the repository root:

    OMP_NUM_THREADS=1 python benchmarks/inversion_parts.py run --data SET --start 0 --stop 20 --out a.json \\
        --embedder all-mpnet-base-v2 &
    OMP_NUM_THREADS=1 python benchmarks/inversion_parts.py run --data SET --start 20 --stop 40 --out b.json \\
        --embedder all-mpnet-base-v2
    python benchmarks/inversion_parts.py score a.json b.json --embedder all-mpnet-base-v2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from vdbguard.embedders import Embedder

CHUNK = 5


def run(args: argparse.Namespace) -> None:
    from vdbguard.attacks.adversarial_decoding import (
        AdversarialDecoding,
        _generative,
        _language_model,
        vocabulary_table,
    )
    from vdbguard.attacks.decoder import load_tokenizer

    lines = Path(args.data).read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()][args.start : args.stop]
    embedder = Embedder(args.embedder)
    attack = AdversarialDecoding(threads=1)
    attack.embedder = embedder
    started = time.process_time()
    _language_model(), load_tokenizer(), vocabulary_table(embedder), _generative(embedder)
    loading = time.process_time() - started
    targets = embedder.encode([row["text"] for row in rows])
    done: list[dict] = []
    cpu = 0.0
    for start in range(0, len(rows), CHUNK):
        started = time.process_time()
        found = attack.infer(targets[start : start + CHUNK])
        cpu += time.process_time() - started
        done += [{**row, "hyp": f.recovered_text} for row, f in zip(rows[start : start + CHUNK], found, strict=True)]
        part = {"rows": done, "cpu": cpu, "queries": attack.encoder_queries, "loading_cpu": loading}
        Path(args.out).write_text(json.dumps(part, indent=1))
        print(f"{len(done)} of {len(rows)}: {cpu / len(done):.1f} CPU-s a record", flush=True)


def score(args: argparse.Namespace) -> None:
    from vdbguard.evaluate.inversion import inversion_scores

    embedder = Embedder(args.embedder)
    rows, cpu, queries = [], 0.0, 0
    for path in args.parts:
        part = json.loads(Path(path).read_text())
        rows, cpu, queries = rows + part["rows"], cpu + part["cpu"], queries + part["queries"]
    texts = [row["text"] for row in rows]
    names = [row.get("names", []) for row in rows]
    metrics = inversion_scores(embedder, embedder.encode(texts), [row["hyp"] for row in rows], texts, names)
    metrics["cpu_seconds_per_record"] = round(cpu / len(rows), 2)
    metrics["encoder_queries_per_record"] = round(queries / len(rows), 1)
    print(json.dumps(metrics))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    running = commands.add_parser("run")
    running.add_argument("--data", required=True)
    running.add_argument("--start", type=int, default=0)
    running.add_argument("--stop", type=int, default=None)
    running.add_argument("--out", required=True)
    scoring = commands.add_parser("score")
    scoring.add_argument("parts", nargs="+")
    for command in (running, scoring):
        command.add_argument("--embedder", default="all-MiniLM-L6-v2")
    args = parser.parse_args()
    run(args) if args.command == "run" else score(args)


if __name__ == "__main__":
    main()
