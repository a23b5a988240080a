"""Throughput of each write-path transform's ``apply()``: vectors per second, one markdown table.

    python benchmarks/transforms.py [--n 100000] [--dim 384] [--repeats 3] [--only gaussian,int8,...]
    python benchmarks/transforms.py --alignment   # also the SAP-vs-alignment-attack table (real MiniLM)

Data: ``--n`` clustered unit float32 rows (throughput does not depend on content; the rejection
samplers' acceptance does not depend on it either). Fitted transforms are fitted once on
``--fit-n`` rows, timed separately. Each ``apply()`` runs once to warm up (keyed transforms build
their key map on first use), then ``--repeats`` times; the table shows the best run (least disturbed by other
processes on a shared machine) and the median.
"""

from __future__ import annotations

import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
from common import bench_parser

from vdbguard.transforms.base import Transform
from vdbguard.transforms.dcpe import DcpeScaleAndPerturb
from vdbguard.transforms.gaussian import GaussianNoise
from vdbguard.transforms.keyed import alignment_attack
from vdbguard.transforms.ldp import GeneralizedLaplace, Purkayastha
from vdbguard.transforms.quantize import BinaryQuantize, Int8Quantize, PcaReduce, ProductQuantize
from vdbguard.transforms.rotation import SecretRotation

BENCH_KEY = bytes(range(32))  # a fixed, public benchmark key: never use it for real data

# name -> (strength label, factory)
CASES: dict[str, tuple[str, Callable[[], Transform]]] = {
    "gaussian": ("λ = 0.01", lambda: GaussianNoise(0.01, seed=0)),
    "laplace": ("ε = 2500", lambda: GeneralizedLaplace(2500, seed=0)),
    "purkayastha": ("ε = 5000 (vmf)", lambda: Purkayastha(5000, seed=0)),
    "purkayastha-angular": ("ε = 5000 (angular)", lambda: Purkayastha(5000, seed=0, kernel="angular")),
    "int8": ("8 bits", lambda: Int8Quantize(8)),
    "binary": ("-", lambda: BinaryQuantize()),
    "pq": ("8 bits × d/8 subspaces", lambda: ProductQuantize(8, seed=0)),
    "pca": ("k = 128", lambda: PcaReduce(128)),
    "dcpe": ("β = 1", lambda: DcpeScaleAndPerturb(1.0, seed=0, key=BENCH_KEY)),
    "dcpe-rotate": ("β = 1, rotate", lambda: DcpeScaleAndPerturb(1.0, seed=0, key=BENCH_KEY, rotate=True)),
    "rotation": ("-", lambda: SecretRotation(key=BENCH_KEY)),
}


def clustered_rows(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((256, dim)).astype(np.float32)
    x = centres[rng.integers(256, size=n)]
    x += 0.5 * rng.standard_normal((n, dim), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def throughput(
    names: list[str], n: int, dim: int, fit_n: int, repeats: int
) -> list[tuple[str, str, str, float, float]]:
    data = clustered_rows(n, dim)
    sample = data[:fit_n]
    rows = []
    for name in names:
        label, make = CASES[name]
        transform = make()
        fit_s = float("nan")
        if transform.needs_fit:
            start = time.perf_counter()
            transform.fit(sample)
            fit_s = time.perf_counter() - start
        transform.apply(data[:1000])  # warm-up
        times, cpu = [], []
        for _ in range(repeats):
            start, start_cpu = time.perf_counter(), time.process_time()
            out = transform.apply(data)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            assert out.dtype == np.float32 and len(out) == n
        best, median = min(times), statistics.median(times)
        rows.append((name, label, f"{fit_s:.2f}" if transform.needs_fit else "-", best, median, min(cpu)))
        print(f"  {name}: {n / best:,.0f} vectors/s", file=sys.stderr, flush=True)
    return rows


def alignment_table() -> None:
    """SAP vs the ALGEN-style alignment attack on real MiniLM embeddings (998 known pairs, 346 unseen)."""
    from vdbguard.corpus import human_sentences
    from vdbguard.embedders import Embedder

    train, holdout = human_sentences("train"), human_sentences("holdout")
    vectors = Embedder().encode([*train, *holdout])
    known, unseen = vectors[: len(train)], vectors[len(train) :]

    def l2_top(q: np.ndarray, d: np.ndarray) -> np.ndarray:
        return np.argsort((q * q).sum(1)[:, None] - 2 * q @ d.T + (d * d).sum(1)[None], axis=1)[:, :10]

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.mean(np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)))

    truth = l2_top(unseen, known)
    print(f"\n| transform | recall@10 | attack cosine, lstsq ({len(known)} pairs) | attack cosine, Procrustes |")
    print("|---|---|---|---|")
    cases: list[tuple[str, Transform]] = [("rotation", SecretRotation(key=BENCH_KEY))]
    cases += [(f"dcpe β = {b}", DcpeScaleAndPerturb(b, seed=0, key=BENCH_KEY)) for b in (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)]
    for label, t in cases:
        stored, target = t.apply(known), t.apply(unseen)
        found = l2_top(t.apply_query(unseen), stored)
        recall = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(truth, found, strict=True)]))
        lstsq = cos(alignment_attack(known, stored, target, "lstsq"), unseen)
        procrustes = cos(alignment_attack(known, stored, target, "procrustes"), unseen)
        print(f"| {label} | {recall:.3f} | {lstsq:.4f} | {procrustes:.4f} |")


def main() -> None:
    parser = bench_parser(__doc__, n=100_000, dim=384, fit_n=10_000, repeats=5)
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated subset of: " + ", ".join(CASES))
    parser.add_argument("--alignment", action="store_true", help="also print the SAP vs alignment-attack table")
    args = parser.parse_args()
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        parser.error(f"unknown transforms: {', '.join(unknown)}")

    rows = throughput(names, args.n, args.dim, args.fit_n, args.repeats)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n`{shlex.join(['python', 'benchmarks/transforms.py', *sys.argv[1:]])}`\n")
    print(
        f"{args.n:,} × {args.dim} float32 rows; {os.cpu_count()} CPUs, load average {load:.1f} at the end; "
        f"numpy {np.__version__}; Python {platform.python_version()}; best and median of {args.repeats} runs\n"
    )
    print(
        f"| transform | strength | fit, {args.fit_n:,} rows (s) | best apply (s) | vectors/s best "
        "| vectors/s median | vectors per CPU-second |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, label, fit_s, best, median, cpu in rows:
        print(
            f"| {name} | {label} | {fit_s} | {best:.3f} | {args.n / best:,.0f} | {args.n / median:,.0f} "
            f"| {args.n / cpu:,.0f} |"
        )
    if args.alignment:
        alignment_table()


if __name__ == "__main__":
    main()
