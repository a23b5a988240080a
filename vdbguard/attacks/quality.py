"""Which inversion attack is strongest, by measurement: held-out token F1 per embedder.

Two sources, the local one winning: ``vdbguard/data/attack_quality.json`` ships the benchmark's numbers
(BENCHMARKS.md, real text nobody on the project wrote), and every ``vdbguard evaluate-attacks`` run records
its own result under the cache, so a team that measures on its own text gets its own strongest attack.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from vdbguard.cache import cache_root, write_json_atomic

MIN_RECORDS = 20  # fewer held-out records than this is too noisy to rank attacks by
Measurements = dict[str, dict[str, dict[str, float]]]  # embedder name -> attack name -> metrics


def _local_path(cache_dir: Path | None = None) -> Path:
    return (cache_dir or cache_root()) / "measurements" / "attack-quality.json"


def _read(path: Path) -> Measurements:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def measured_quality(embedder: str, cache_dir: Path | None = None) -> dict[str, dict[str, float]]:
    """Attack name -> its measured metrics on ``embedder``: a local run on enough records, else the packaged
    benchmark's, else whatever local run there is."""
    packaged = json.loads(resources.files("vdbguard.data").joinpath("attack_quality.json").read_text())
    merged = dict(packaged.get(embedder, {}))
    for attack, metrics in _read(_local_path(cache_dir)).get(embedder, {}).items():
        if metrics.get("n", 0) >= MIN_RECORDS or attack not in merged:
            merged[attack] = metrics
    return merged


def record_quality(
    embedder: str, attack: str, metrics: Mapping[str, float | int | None], cache_dir: Path | None = None
) -> None:
    """Keep an evaluate-attacks result, so ``--attack strongest`` can rank by it."""
    path = _local_path(cache_dir)
    measurements = _read(path)
    kept = {key: metrics[key] for key in ("token_f1", "cosine", "n") if metrics.get(key) is not None}
    measurements.setdefault(embedder, {})[attack] = kept
    write_json_atomic(path, measurements, indent=2, sort_keys=True)


def best_measured(embedder: str, candidates: set[str], cache_dir: Path | None = None) -> str | None:
    """The candidate with the highest measured token F1 on enough records, or None if none is measured."""
    quality = measured_quality(embedder, cache_dir)
    ranked = [
        (float(metrics["token_f1"]), float(metrics.get("cosine", 0.0)), name)
        for name, metrics in quality.items()
        if name in candidates and "token_f1" in metrics and metrics.get("n", 0) >= MIN_RECORDS
    ]
    return max(ranked)[2] if ranked else None
