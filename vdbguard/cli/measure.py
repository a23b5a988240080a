"""Measuring commands: `audit` a store's exposure, `evaluate-attacks`, and what a defense costs and buys
(`evaluate-defense`, `calibrate`, `frontier`)."""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from vdbguard.cli.common import (
    EXIT_FINDINGS,
    exit_code,
    friendly_errors,
    print_table,
    progress,
    say,
    settings_options,
    store_options,
    write_json,
)
from vdbguard.cli.help import Command
from vdbguard.config import AuditSettings, Calibrate, EvaluateAttacks, EvaluateDefense, Frontier, StoreSettings
from vdbguard.errors import VdbguardError


@click.command(cls=Command)
@store_options
@settings_options(AuditSettings)
@click.option("--sample", "sample_alias", type=click.IntRange(1), hidden=True, help="Old name of --sample-size.")
@friendly_errors
def audit(store: StoreSettings, collection: str, sample_alias: int | None, settings: AuditSettings) -> None:
    """Audit a collection's exposure (reads only): plain-http transport, access without credentials (or store
    files other users can read), raw embedder output (from the text, or the vectors' statistics), vectors made from
    text their payload redacts, and, with the owner's --transform, what the transform really buys.

    Examples:

    \b
      vdbguard audit --connector chroma --path ./chroma-data --collection tickets --out audit-out
      vdbguard audit --connector qdrant --url https://db:6333 --collection tickets --fail-on medium
      vdbguard audit --connector chroma --path ./data --collection tickets_safe --transform rotation --strength 1
    """
    from vdbguard.audit import run_audit

    if sample_alias is not None:
        settings = settings.model_copy(update={"sample_size": sample_alias})
    result = run_audit(store, collection, settings)
    rows = [
        (f.severity.value, f.check, f.message, f.fix) for f in sorted(result.findings, key=lambda f: -f.severity.rank)
    ]
    print_table(("severity", "check", "finding", "fix"), rows, title=f"vdbguard audit: {result.collection}")
    for note in result.notes:
        say(f"not checked: {escape(note)}")
    if settings.out is not None:
        write_json(settings.out, "audit.json", result.to_json())
    sys.exit(exit_code((finding.severity for finding in result.findings), settings.fail_on))


@click.command("evaluate-attacks", cls=Command)
@settings_options(EvaluateAttacks)
@friendly_errors
def evaluate_attacks(settings: EvaluateAttacks) -> None:
    """Measure an inversion attack on your held-out texts (it sees only their embeddings).

    Examples:

    \b
      vdbguard evaluate-attacks --data heldout.jsonl --out attack-metrics/
      vdbguard evaluate-attacks --data heldout.jsonl --attack bag-of-words --profile small --out m/
      vdbguard evaluate-attacks --data heldout.jsonl --attack adversarial-decoding --seconds-per-record 1.8 --out m/
    """
    from vdbguard.evaluate.inversion import measure_attack

    with progress() as bars:
        s = settings
        metrics = measure_attack(s.data, s.embedder, s.attack, s.profile, s.seconds_per_record, bars)
    write_json(settings.out, "attack-metrics.json", metrics)
    click.echo(json.dumps(metrics, indent=2))


def _say_cheap(cheap: bool) -> None:
    if cheap:
        say(
            "[yellow]cheap attackers only (slot-search, bag-of-words): leakage is a lower bound; "
            "drop --cheap before trusting a defense[/yellow]"
        )


def _skipped(name: str, exc: Exception) -> None:
    say(f"skipped {name}: {exc}")


@click.command("evaluate-defense", cls=Command)
@settings_options(EvaluateDefense)
@friendly_errors
def evaluate_defense(settings: EvaluateDefense) -> None:
    """What one transform costs retrieval and what the strongest attacks, adapted, still recover.

    Examples:

    \b
      vdbguard evaluate-defense --data heldout.jsonl --transform redact+gaussian --strength 0.02 --out defense/
      vdbguard evaluate-defense --data heldout.jsonl --transform rotation --cheap --out defense/
    """
    from vdbguard.evaluate.defense import DefenseBench
    from vdbguard.evaluate.frontier import row_of
    from vdbguard.transforms.chain import build_transform

    transform = build_transform(settings.transform, settings.strength, seed=0)
    with progress() as bars:
        point = DefenseBench.of(settings, bars).measure(transform, adaptive=not settings.no_adaptive)
    result = row_of(point, over_budget=False)
    result["leakage_cut"] = round(point.leakage_cut, 4)
    del result["over_budget"]
    write_json(settings.out, "defense.json", result)
    click.echo(json.dumps(result, indent=2))
    _say_cheap(point.cheap)


@click.command(cls=Command)
@settings_options(Calibrate)
@friendly_errors
def calibrate(settings: Calibrate) -> None:
    """Pick the weakest setting whose leakage cut holds against the strongest attacker, adapted.

    Each transform's strengths are tried weakest first; among transforms, the chosen setting is the one
    that loses the least recall. A cut only the clean-trained attacker respects is never enough. Exit 1 when
    no setting meets the target.

    Examples:

    \b
      vdbguard calibrate --data heldout.jsonl --out calibration/
      vdbguard calibrate --data heldout.jsonl --transform gaussian --transform redact+gaussian --max-recall-loss 0.05
    """
    from vdbguard.evaluate.calibration import calibrate as run_calibration
    from vdbguard.evaluate.calibration import cut_text
    from vdbguard.evaluate.defense import DefenseBench
    from vdbguard.evaluate.frontier import row_of

    with progress() as bars:
        result = run_calibration(
            DefenseBench.of(settings, bars),
            max_recall_loss=settings.max_recall_loss,
            target_leakage_cut=settings.target_leakage_cut,
            transform_names=settings.transform,
            on_skip=_skipped,
        )
    points, chosen = result.points, result.chosen
    title, header, rows = result.table()
    print_table(header, rows, title=title)
    if settings.out is not None:
        write_json(settings.out, "calibration.json", [row_of(p, not result.within_budget(p)) for p in points])
    _say_cheap(result.cheap)
    if chosen is None:
        say("nothing meets the target: no setting holds against the adaptive attacker within the budget")
        for p in result.closest():
            say(
                f"  closest: {p.transform} {p.strength:g}: recall loss {p.recall_loss:.3f}, cut {cut_text(p.worst_cut)}"
            )
        say("relax --max-recall-loss or --target-leakage-cut, or redact the text before embedding")
        sys.exit(EXIT_FINDINGS)
    say(f"chosen: {chosen.transform} at strength {chosen.strength:g}")


@click.command(cls=Command)
@settings_options(Frontier)
@friendly_errors
def frontier(settings: Frontier) -> None:
    """Measure every transform at every strength on your held-out data: recall lost vs leakage left.

    Resumable: run it again with the same options and --out to finish an interrupted sweep.

    Examples:

    \b
      vdbguard frontier --data heldout.jsonl --out frontier/
      vdbguard frontier --data heldout.jsonl --cheap --attack-limit 20 --transform redact+gaussian --out frontier/
    """
    from vdbguard.evaluate.calibration import default_transforms
    from vdbguard.evaluate.defense import DefenseBench
    from vdbguard.evaluate.frontier import COMBINATIONS, dominance, plot, run_frontier, table

    names, out = settings.transform or (*default_transforms(), *COMBINATIONS), settings.out
    with progress() as bars:
        bench = DefenseBench.of(settings, bars)
        rows = run_frontier(
            bench, names, out / "points.json", max_recall_loss=settings.max_recall_loss, on_skip=_skipped
        )
    text = "\n".join([table(rows), "", *dominance(rows)])
    (out / "table.md").write_text(text + "\n")
    click.echo(text)
    say(f"wrote {out / 'table.md'}")
    try:
        plot(rows, out / "frontier.png", settings.max_recall_loss, settings.target_leakage_cut)
        say(f"wrote {out / 'frontier.png'}")
    except VdbguardError as exc:  # the table is the result; the plot is optional
        say(f"no plot: {exc}")
    _say_cheap(bench.cheap)
