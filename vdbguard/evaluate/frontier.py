"""The privacy/utility frontier on the user's own held-out data: every transform at every strength it
sweeps, what it costs recall and what the strongest attacker (adapted) still recovers.

Settings over the recall budget are measured for utility only (their leakage would not change the
choice), and a transform's sweep stops at its first such setting. Points are saved as they finish, so
an interrupted run resumes; the file also records what the points were measured against, and refuses
to mix runs against other data, attacks or budgets.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from vdbguard.cache import write_json_atomic
from vdbguard.errors import VdbguardError
from vdbguard.evaluate.defense import AttackLeakage, DefenseBench, DefensePoint
from vdbguard.transforms.chain import SEPARATOR, check_name, sweep

FORMAT = 1
COMBINATIONS: tuple[str, ...] = ("redact+gaussian", "redact+dcpe", "leace:1+gaussian")


def data_digest(bench: DefenseBench) -> str:
    rows = [[item.text, list(item.names), list(item.pii)] for item in bench.items]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def _config(bench: DefenseBench, max_recall_loss: float) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "data": data_digest(bench),
        "embedder": bench.embedder.name,
        "attacks": list(bench.attack_names),
        "profile": bench.profile,
        "attacked_records": len(bench.chosen),
        "seconds_per_record": bench.seconds_per_record,
        "max_recall_loss": max_recall_loss,
    }


def load_points(path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    if not path.exists():
        return None, []
    stored = json.loads(path.read_text())
    return stored["config"], stored["points"]


def point_from_row(row: dict[str, Any]) -> DefensePoint:
    values = {f.name: row[f.name] for f in fields(DefensePoint) if f.name in row}
    values["attacks"] = {name: AttackLeakage(**a) for name, a in row.get("attacks", {}).items()}
    return DefensePoint(**values)


def row_of(point: DefensePoint, over_budget: bool) -> dict[str, Any]:
    row = asdict(point)
    row.update(
        over_budget=over_budget,
        recall_loss=round(point.recall_loss, 4),
        pii_query_recall_loss=_round(point.pii_query_recall_loss),
        worst_cut=_round(point.worst_cut),
        pii_worst_cut=_round(point.pii_worst_cut),
    )
    return row


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def run_frontier(
    bench: DefenseBench,
    transform_names: Sequence[str],
    points_path: Path,
    *,
    max_recall_loss: float,
    on_point: Callable[[dict[str, Any]], None] | None = None,
    on_skip: Callable[[str, VdbguardError], None] | None = None,
) -> list[dict[str, Any]]:
    """Measure what ``points_path`` lacks and return every row, in sweep order."""
    for name in transform_names:
        check_name(name)
    config = _config(bench, max_recall_loss)
    stored_config, rows = load_points(points_path)
    if stored_config is not None and stored_config != config:
        changed = sorted(k for k in config if stored_config.get(k) != config[k])
        raise VdbguardError(
            f"{points_path} holds points measured with another {', '.join(changed)}",
            "pass another --out to start a new frontier, or the same options to resume this one",
        )
    done = {(r["transform"], r["strength"]): r for r in rows}
    ordered: list[dict[str, Any]] = []
    for name in transform_names:
        try:
            settings = sweep(name)
        except VdbguardError as exc:  # e.g. a keyed transform without a key: say so, measure the rest
            if on_skip is None:
                raise
            on_skip(name, exc)
            continue
        for transform in settings:
            row = done.get((transform.name, transform.strength))
            if row is None:
                row = _measure(bench, transform, max_recall_loss)
                rows.append(row)
                write_json_atomic(points_path, {"config": config, "points": rows}, indent=1)
                if on_point is not None:
                    on_point(row)
            ordered.append(row)
            if row["over_budget"]:
                break
    return ordered


def _measure(bench: DefenseBench, transform: Any, max_recall_loss: float) -> dict[str, Any]:
    point = bench.measure(transform, adaptive=True, max_recall_loss=max_recall_loss)
    return row_of(point, over_budget=point.recall_loss > max_recall_loss)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: one line per setting; leakage is the strongest attacker's, adaptive included."""
    lines = [
        "| transform | strength | recall@10 loss (no-PII queries) | loss (PII queries) | neighbour recall@10 "
        "| leakage clean | left (strongest, adapted) | cut | PII cut | s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        point = point_from_row(r)
        measured = not r["over_budget"]
        lines.append(
            f"| {r['transform']} | {r['strength']:g} | {r['recall_loss']:.3f} "
            f"| {'–' if r['pii_query_recall_loss'] is None else format(r['pii_query_recall_loss'], '.3f')} "
            f"| {r['neighbour_recall_at_10']:.3f} "
            + (
                f"| {_pct(point.leakage_clean)} | {_pct(point.worst_leakage)} | {_pct(r['worst_cut'])} "
                f"| {_pct(r['pii_worst_cut'])} | {r['seconds']:.0f} |"
                if measured
                else "| over the recall budget: leakage not measured | | | | |"
            )
        )
    return "\n".join(lines)


def best_within_budget(rows: Sequence[dict[str, Any]], name: str) -> dict[str, Any] | None:
    measured = [r for r in rows if r["transform"] == name and not r["over_budget"] and r["worst_cut"] is not None]
    return max(measured, key=lambda r: (r["worst_cut"], -r["recall_loss"]), default=None)


def dominance(rows: Sequence[dict[str, Any]]) -> list[str]:
    """For each chain: does its best setting within budget beat the best of each of its parts?"""
    lines = []
    for name in dict.fromkeys(r["transform"] for r in rows):
        if SEPARATOR not in name:
            continue
        best = best_within_budget(rows, name)
        parts = [part.partition(":")[0] for part in name.split(SEPARATOR)]
        bests = {part: best_within_budget(rows, part) for part in parts}
        if best is None:
            lines.append(f"{name}: no setting within the recall budget was measured")
            continue
        verdicts = []
        for part, other in bests.items():
            if other is None:
                verdicts.append(f"{part} not measured within budget")
            else:
                beats = best["worst_cut"] > other["worst_cut"]
                verdicts.append(f"{'beats' if beats else 'does not beat'} {part} ({_pct(other['worst_cut'])})")
        lines.append(f"{name}: best cut {_pct(best['worst_cut'])} within budget; " + "; ".join(verdicts))
    return lines


def plot(rows: Sequence[dict[str, Any]], path: Path, max_recall_loss: float, target_cut: float) -> None:
    """Recall lost against leakage left (strongest attacker, adapted), one line per transform."""
    try:
        import matplotlib
    except ImportError as exc:
        raise VdbguardError("plotting the frontier needs matplotlib", "pip install 'vdbguard[plot]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5))
    measured = [r for r in rows if not r["over_budget"] and r["worst_cut"] is not None]
    for index, name in enumerate(dict.fromkeys(r["transform"] for r in measured)):
        points = sorted((r for r in measured if r["transform"] == name), key=lambda r: r["recall_loss"])
        ax.plot(
            [max(r["recall_loss"], 1e-4) for r in points],
            [1 - r["worst_cut"] for r in points],
            "o-" if SEPARATOR not in name else "s--",
            color=plt.get_cmap("tab20")(index % 20),
            label=name,
            ms=4,
        )
    ax.axvline(max_recall_loss, color="grey", ls="--", lw=0.8)
    ax.axhline(1 - target_cut, color="grey", ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("recall@10 loss on queries without PII (log; 0 drawn at 1e-4)")
    ax.set_ylabel("leakage left: strongest attacker, adapted / clean")
    ax.set_ylim(-0.05, 1.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
