"""Measuring commands: `audit` a store's exposure, `evaluate-attacks`, and what a defense costs and buys
(`evaluate-defense`, `calibrate`, `frontier`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from vdbguard.cli.common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    default_option,
    embedder_option,
    fail_on_option,
    friendly_errors,
    open_connector,
    options,
    out_option,
    print_table,
    profile_option,
    progress,
    say,
    store_options,
    write_json,
)
from vdbguard.cli.help import Command, F, advanced
from vdbguard.credentials import redact_location, strip_userinfo
from vdbguard.embedders import Embedder
from vdbguard.errors import VdbguardError
from vdbguard.reports.schema import Severity

_DEFENSE_ATTACK_HELP = (
    "Attack to measure leakage with (repeatable); the strongest result counts. Default: the strongest suite "
    "(white-box gradient, the best measured inversion attack, slot-search when the data names people, "
    "bag-of-words), each also adapted to the defense."
)


def attacker_options(when: str, limit_owner: str, limit_help: str) -> Callable[[F], F]:
    """How hard a defense is attacked, for `evaluate-defense`, `calibrate`, `frontier` and `audit --transform`
    (``when`` opens each help: "With --transform"; ``limit_owner`` declares --attack-limit's default)."""

    def help(text: str) -> str:
        return f"{when}: {text[0].lower()}{text[1:]}" if when else text

    cheap = "Only slot-search and bag-of-words (minutes, not hours): a lower bound on leakage, said so."
    return options(
        click.option("--attack", "attack_names", multiple=True, help=help(_DEFENSE_ATTACK_HELP)),
        click.option("--cheap", is_flag=True, help=help(cheap)),
        profile_option(),
        default_option(limit_owner, "--attack-limit", help(limit_help), type=click.IntRange(1)),
    )


@click.command(cls=Command)
@store_options
@embedder_option("Model that made the vectors ('auto').")
@click.option(
    "--sample-size",
    type=click.IntRange(1),
    default=2000,
    show_default=True,
    help="Records (a count) whose stored text is embedded again and compared with their vector.",
)
@click.option("--sample", "sample_alias", type=click.IntRange(1), hidden=True, help="Old name of --sample-size.")
@click.option(
    "--transform",
    "transform_name",
    help="The transform the store was protected with (key from $VDBGUARD_TRANSFORM_KEY): the audit checks it "
    "reproduces the stored vectors and measures what it buys against the adaptive attacker on the store's text.",
)
@click.option("--strength", type=float, help="With --transform: its strength (default: its own default).")
@click.option(
    "--fit-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="With --transform, for transforms that need a fit: the .npz `vdbguard protect` saved.",
)
@attacker_options("With --transform", "vdbguard.audit:OwnerTransform", "Attack at most this many of the store's texts.")
@out_option("audit.json (the findings and notes)")
@fail_on_option
@friendly_errors
def audit(
    connector_name: str,
    collection: str,
    path: Path | None,
    url: str | None,
    option: tuple[str, ...],
    embedder: str,
    sample_size: int,
    sample_alias: int | None,
    transform_name: str | None,
    strength: float | None,
    fit_file: Path | None,
    attack_names: tuple[str, ...],
    cheap: bool,
    profile: str,
    attack_limit: int,
    out: Path | None,
    fail_on: str,
) -> None:
    """Audit a collection's exposure (reads only): plain-http transport, access without credentials (or store
    files other users can read), raw embedder output (from the text, or the vectors' statistics), vectors made from
    text their payload redacts, and, with the owner's --transform, what the transform really buys.

    Examples:

    \b
      vdbguard audit --connector chroma --path ./chroma-data --collection tickets --out audit-out
      vdbguard audit --connector qdrant --url https://db:6333 --collection tickets --fail-on medium
      vdbguard audit --connector chroma --path ./data --collection tickets_safe --transform rotation --strength 1
    """
    from vdbguard.audit import ANONYMOUS, OwnerTransform, audit_collection
    from vdbguard.scan import resolve_embedder

    owner = None
    if transform_name is not None:
        from vdbguard.transforms.chain import build_transform
        from vdbguard.transforms.fitting import load_fit

        transform = build_transform(transform_name, strength)
        if fit_file is not None:
            load_fit(transform, fit_file)
        elif transform.needs_fit:
            raise click.UsageError(
                f"{transform_name} needs the fit the store was protected with: pass --fit-file (the .npz `vdbguard "
                "protect` saved); a fit made on other data would not reproduce the stored vectors"
            )
        owner = OwnerTransform(transform, attack_names, cheap, profile, attack_limit)
    elif fit_file is not None or strength is not None or attack_names or cheap:
        raise click.UsageError("--strength, --fit-file, --attack and --cheap go with --transform")

    location = redact_location(str(path or url))
    anonymous = (*option, *(f"{key}={json.dumps(value)}" for key, value in ANONYMOUS.get(connector_name, {}).items()))
    anonymous_url = strip_userinfo(url) if url is not None else None
    with open_connector(connector_name, collection, path, url, option) as connector:
        model = resolve_embedder(connector, embedder) or Embedder()
        result = audit_collection(
            connector,
            connector_name=connector_name,
            location=location,
            embedder=model,
            sample=sample_alias or sample_size,
            open_anonymous=(lambda: open_connector(connector_name, collection, None, anonymous_url, anonymous))
            if url is not None
            else None,
            owner=owner,
        )
    rows = [
        (f.severity.value, f.check, f.message, f.fix) for f in sorted(result.findings, key=lambda f: -f.severity.rank)
    ]
    print_table(("severity", "check", "finding", "fix"), rows, title=f"vdbguard audit: {result.collection}")
    for note in result.notes:
        say(f"not checked: {escape(note)}")
    if out is not None:
        write_json(out, "audit.json", result.to_json())
    worst = result.worst
    failing = fail_on != "never" and worst is not None and worst.rank >= Severity(fail_on).rank
    sys.exit(EXIT_FINDINGS if failing else EXIT_CLEAN)


@click.command("evaluate-attacks", cls=Command)
@click.option(
    "--data", type=click.Path(path_type=Path), required=True, help='Held-out JSONL: {"text": ..., "names": [...]}'
)
@embedder_option("Model whose embeddings are attacked.")
@click.option(
    "--attack",
    "attack_name",
    default="strongest",
    show_default=True,
    help="An inversion attack; strongest: the best measured token F1 for --embedder (each run here is kept).",
)
@profile_option()
@out_option("attack-metrics.json (also printed)", required=True)
@advanced(
    "--seconds-per-record",
    type=click.FloatRange(0),
    default=0.0,
    show_default=True,
    help="CPU-second budget per record for attacks that take one (a scan's deep tier gives 1.8); 0: none. "
    "Budgeted runs are not kept for --attack strongest.",
)
@friendly_errors
def evaluate_attacks(
    data: Path, embedder: str, attack_name: str, profile: str, out: Path, seconds_per_record: float
) -> None:
    """Measure an inversion attack on your held-out texts (it sees only their embeddings).

    Examples:

    \b
      vdbguard evaluate-attacks --data heldout.jsonl --out attack-metrics/
      vdbguard evaluate-attacks --data heldout.jsonl --attack bag-of-words --profile small --out m/
      vdbguard evaluate-attacks --data heldout.jsonl --attack adversarial-decoding --seconds-per-record 1.8 --out m/
    """
    from vdbguard.evaluate.inversion import measure_attack

    with progress() as bars:
        metrics = measure_attack(data, embedder, attack_name, profile, seconds_per_record, bars)
    write_json(out, "attack-metrics.json", metrics)
    click.echo(json.dumps(metrics, indent=2))


defense_options = options(
    click.option(
        "--data",
        type=click.Path(path_type=Path),
        required=True,
        help='Held-out JSONL: {"text": ..., "names": [...], "pii": [...]} (names and pii optional).',
    ),
    attacker_options(
        "",
        "vdbguard.evaluate.defense:DefenseBench",
        "Attack at most this many records (a seeded sample of those naming someone); utility uses all.",
    ),
    embedder_option("Model that embeds the data."),
    default_option(
        "vdbguard.evaluate.defense:DefenseBench",
        "--seconds-per-record",
        "Search budget per record for attacks that have one (adversarial-decoding); 0: none.",
        everyday=False,
        type=click.FloatRange(0),
    ),
)


def _bench(
    bars: Any,
    data: Path,
    attack_names: tuple[str, ...],
    cheap: bool,
    embedder: str,
    profile: str,
    attack_limit: int | None,
    seconds_per_record: float,
) -> Any:
    """The DefenseBench for the options of ``defense_options``."""
    from vdbguard.evaluate.data import load_jsonl
    from vdbguard.evaluate.defense import DefenseBench

    if cheap and attack_names:
        raise click.UsageError("--cheap picks the attacks itself: drop it or drop --attack")
    return DefenseBench(
        Embedder(embedder),
        load_jsonl(data),
        attacks=attack_names,
        cheap=cheap,
        profile=profile,
        attack_limit=attack_limit,
        seconds_per_record=seconds_per_record,
        progress=bars,
    )


def _say_cheap(cheap: bool) -> None:
    if cheap:
        say(
            "[yellow]cheap attackers only (slot-search, bag-of-words): leakage is a lower bound; "
            "drop --cheap before trusting a defense[/yellow]"
        )


def _skipped(name: str, exc: Exception) -> None:
    say(f"skipped {name}: {exc}")


@click.command("evaluate-defense", cls=Command)
@defense_options
@click.option(
    "--transform",
    "transform_name",
    required=True,
    help="See `vdbguard transforms list` (its 'needs' column); chains: redact+gaussian, leace:1+gaussian. "
    "Transforms that need a fit are fitted on vdbguard's corpus; keyed ones read $VDBGUARD_TRANSFORM_KEY.",
)
@click.option("--strength", type=float, help="The (last) transform's strength; default: its own default.")
@click.option("--no-adaptive", is_flag=True, help="Skip the adaptive attacker (never enough to trust a defense).")
@out_option("defense.json (also printed)", required=True)
@friendly_errors
def evaluate_defense(
    transform_name: str, strength: float | None, no_adaptive: bool, out: Path, **bench_options: Any
) -> None:
    """What one transform costs retrieval and what the strongest attacks, adapted, still recover.

    Examples:

    \b
      vdbguard evaluate-defense --data heldout.jsonl --transform redact+gaussian --strength 0.02 --out defense/
      vdbguard evaluate-defense --data heldout.jsonl --transform rotation --cheap --out defense/
    """
    from vdbguard.evaluate.frontier import row_of
    from vdbguard.transforms.chain import build_transform

    transform = build_transform(transform_name, strength, seed=0)
    with progress() as bars:
        point = _bench(bars, **bench_options).measure(transform, adaptive=not no_adaptive)
    result = row_of(point, over_budget=False)
    result["leakage_cut"] = round(point.leakage_cut, 4)
    del result["over_budget"]
    write_json(out, "defense.json", result)
    click.echo(json.dumps(result, indent=2))
    _say_cheap(point.cheap)


target_options = options(
    default_option(
        "vdbguard.evaluate.calibration:calibrate",
        "--max-recall-loss",
        "Recall@10 a defense may lose on queries without PII.",
        type=float,
    ),
    default_option(
        "vdbguard.evaluate.calibration:calibrate",
        "--target-leakage-cut",
        "Share of the leakage a defense must cut (drawn on the frontier's plot).",
        type=float,
    ),
)


@click.command(cls=Command)
@defense_options
@target_options
@click.option("--transform", "transform_names", multiple=True, help="Transforms or chains to try (default: all).")
@out_option("calibration.json: every measured point")
@friendly_errors
def calibrate(
    max_recall_loss: float,
    target_leakage_cut: float,
    transform_names: tuple[str, ...],
    out: Path | None,
    **bench_options: Any,
) -> None:
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
    from vdbguard.evaluate.frontier import row_of

    with progress() as bars:
        result = run_calibration(
            _bench(bars, **bench_options),
            max_recall_loss=max_recall_loss,
            target_leakage_cut=target_leakage_cut,
            transform_names=transform_names,
            on_skip=_skipped,
        )
    points, chosen = result.points, result.chosen
    print_table(
        ("transform", "strength", "recall@10 loss", "cut vs clean-trained", "cut vs strongest, adapted", "meets both"),
        (
            (
                p.transform,
                f"{p.strength:g}",
                f"{p.recall_loss:.3f}",
                f"{p.leakage_cut:.1%}",
                "-" if p.worst_cut is None else f"{p.worst_cut:.1%}",
                "yes" if result.meets(p) else "",
            )
            for p in points
        ),
        title=f"calibration: leakage cut >= {target_leakage_cut:.0%} against {', '.join(result.attacks)} "
        f"(adapted), recall loss <= {max_recall_loss:.1%}",
    )
    if out is not None:
        write_json(out, "calibration.json", [row_of(p, not result.within_budget(p)) for p in points])
    _say_cheap(result.cheap)
    if chosen is None:
        say("nothing meets the target: no setting holds against the adaptive attacker within the budget")
        for p in result.closest():
            cut = "-" if p.worst_cut is None else f"{p.worst_cut:.1%}"
            say(f"  closest: {p.transform} {p.strength:g}: recall loss {p.recall_loss:.3f}, cut {cut}")
        say("relax --max-recall-loss or --target-leakage-cut, or redact the text before embedding")
        sys.exit(EXIT_FINDINGS)
    say(f"chosen: {chosen.transform} at strength {chosen.strength:g}")


@click.command(cls=Command)
@defense_options
@target_options
@click.option(
    "--transform",
    "transform_names",
    multiple=True,
    help="Transforms or chains (default: every transform that sweeps strengths, and redact+gaussian, "
    "redact+dcpe, leace:1+gaussian).",
)
@out_option("points.json, table.md and frontier.png", required=True)
@friendly_errors
def frontier(
    max_recall_loss: float,
    target_leakage_cut: float,
    transform_names: tuple[str, ...],
    out: Path,
    **bench_options: Any,
) -> None:
    """Measure every transform at every strength on your held-out data: recall lost vs leakage left.

    Resumable: run it again with the same options and --out to finish an interrupted sweep.

    Examples:

    \b
      vdbguard frontier --data heldout.jsonl --out frontier/
      vdbguard frontier --data heldout.jsonl --cheap --attack-limit 20 --transform redact+gaussian --out frontier/
    """
    from vdbguard.evaluate.calibration import default_transforms
    from vdbguard.evaluate.frontier import COMBINATIONS, dominance, plot, run_frontier, table

    names = transform_names or (*default_transforms(), *COMBINATIONS)
    with progress() as bars:
        bench = _bench(bars, **bench_options)
        rows = run_frontier(bench, names, out / "points.json", max_recall_loss=max_recall_loss, on_skip=_skipped)
    text = "\n".join([table(rows), "", *dominance(rows)])
    (out / "table.md").write_text(text + "\n")
    click.echo(text)
    say(f"wrote {out / 'table.md'}")
    try:
        plot(rows, out / "frontier.png", max_recall_loss, target_leakage_cut)
        say(f"wrote {out / 'frontier.png'}")
    except VdbguardError as exc:  # the table is the result; the plot is optional
        say(f"no plot: {exc}")
    _say_cheap(bench.cheap)
