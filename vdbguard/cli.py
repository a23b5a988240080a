"""The ``vdbguard`` command. Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or connection error."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from functools import wraps
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vdbguard.credentials import redact_userinfo
from vdbguard.embedders import DEFAULT_EMBEDDER, Embedder
from vdbguard.errors import VdbguardError
from vdbguard.reports import DEFAULT_FORMATS
from vdbguard.reports.schema import Report, Severity

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
console = Console(stderr=True)


def friendly_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn vdbguard errors into one clear line and exit code 2, never a traceback."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except VdbguardError as exc:
            console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
            if exc.hint:
                console.print(f"[yellow]hint:[/] {escape(exc.hint)}", highlight=False)
            sys.exit(EXIT_ERROR)
        except (click.ClickException, click.exceptions.Exit, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug or an unmapped store error: one line, credentials scrubbed
            message = redact_userinfo(f"{type(exc).__name__}: {exc}")
            console.print(f"[bold red]unexpected error:[/] {escape(message)}", highlight=False)
            console.print("[yellow]hint:[/] re-run with -v; if it persists, report it with this message")
            sys.exit(EXIT_ERROR)

    return wrapper


def fail_on_option(default: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--fail-on",
        type=click.Choice([s.value for s in Severity] + ["never"]),
        default=default,
        show_default=True,
        help="Exit 1 when a finding is at least this severe ('never': always exit 0 after a scan).",
    )


def exit_code(report: Report, fail_on: str) -> int:
    if fail_on == "never":
        return EXIT_CLEAN
    threshold = Severity(fail_on).rank
    return EXIT_FINDINGS if any(f.severity.rank >= threshold for f in report.findings) else EXIT_CLEAN


def print_table(columns: Sequence[str], rows: Iterable[Sequence[str]], title: str | None = None) -> None:
    table = Table(title=title)
    for index, column in enumerate(columns):
        table.add_column(column, no_wrap=index == 0)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def print_summary(report: Report) -> None:
    s = report.summary
    table = Table(title=f"vdbguard: {report.target.collection} ({report.target.connector})")
    table.add_column("")
    table.add_column("records", justify="right")
    table.add_row("scanned", str(s.records_scanned))
    table.add_row("flagged", str(s.records_flagged))
    table.add_row("skipped (bad records)", str(s.records_skipped))
    for severity in reversed(Severity):
        table.add_row(f"  {severity.value}", str(s.by_severity.get(severity.value, 0)))
    for pii_type, count in sorted(s.by_pii_type.items()):
        table.add_row(f"  {pii_type}", str(count))
    Console().print(table)


def write_reports(report: Report, out: Path, formats: tuple[str, ...]) -> None:
    from vdbguard.reports import write_reports as write

    paths = write(report, out, formats)
    console.print("reports written to " + " and ".join(str(path) for path in paths))


def _formats(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    from vdbguard import plugins

    known = plugins.names("reports")
    formats = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    unknown = [name for name in formats if name not in known]
    if unknown or not formats:
        raise click.BadParameter(f"unknown format {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}")
    return formats


format_option = click.option(
    "--format",
    "formats",
    default=",".join(DEFAULT_FORMATS),
    show_default=True,
    callback=_formats,
    help="Report formats, comma-separated (installed writers: json, md and any plugin).",
)


def store_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The flags that say which store and collection to open, shared by every command that reads one."""
    for option in reversed(
        (
            click.option(
                "--connector", "connector_name", required=True, help="Store type; see `vdbguard connectors list`."
            ),
            click.option("--collection", required=True, help="Collection (index, class) to read."),
            click.option("--path", type=click.Path(path_type=Path), help="Directory of an embedded store."),
            click.option("--url", help="URL of a store server, e.g. http://127.0.0.1:8000."),
            click.option("--option", multiple=True, help="Extra connector setting KEY=VALUE (repeatable)."),
        )
    ):
        command = option(command)
    return command


@click.group()
@click.version_option(package_name="vdbguard")
@click.option("-v", "--verbose", is_flag=True, help="Log progress details (never secrets).")
def main(verbose: bool) -> None:
    """Find privacy leaks in vector databases: attack the stored vectors, report what leaks."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(message)s")
    for noisy in ("presidio-analyzer", "sentence_transformers", "httpx", "chromadb"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def _connector_options(option: tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a VALUE that parses as JSON (``50051``, ``true``, ``["a"]``) is taken as such."""
    options: dict[str, Any] = {}
    for item in option:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--option")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def _load_config(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Read scan settings from a TOML file: flags given on the command line still win."""
    if value is None:
        return None
    import tomllib

    try:
        data = tomllib.loads(value.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise click.BadParameter(f"cannot read {value}: {exc}", param_hint="--config") from exc
    settings = dict(data.get("scan", {}))
    ctx.meta["config_options"] = settings.pop("options", {})
    renamed = {"connector": "connector_name"}
    ctx.default_map = {renamed.get(k, k).replace("-", "_"): v for k, v in settings.items()}
    return value


def _open_connector(name: str, collection: str, path: Path | None, url: str | None, option: tuple[str, ...]):
    """Build a connector from the flags, the --config file's [scan.options] and --option pairs."""
    from vdbguard.connectors import load_connector

    if (path is None) == (url is None):
        raise click.UsageError("give exactly one of --path (embedded store) or --url (server)")
    connector_cls = load_connector(name)
    configured = click.get_current_context().meta.get("config_options", {})
    settings: dict[str, Any] = {"collection": collection, **configured, **_connector_options(option)}
    settings.update({"path": path} if path is not None else {"url": url})
    try:
        return connector_cls(**settings)
    except TypeError as exc:
        raise VdbguardError(f"the {name} connector rejected its settings: {exc}", "check the --option names") from exc


@main.command()
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False),
    callback=_load_config,
    is_eager=True,
    expose_value=False,
    help="TOML file with a [scan] table (same names as the flags) and [scan.options] for the connector.",
)
@store_options
@click.option(
    "--embedder",
    default=DEFAULT_EMBEDDER,
    show_default=True,
    help="Model that made the vectors (a packaged name or local path); 'auto' to identify it from the vectors; "
    "'store' for a model that cannot run here (an API model): the scan learns the store's space from records "
    "that keep their text (owner-side calibration) and maps the packaged attacks into it.",
)
@click.option(
    "--attack",
    "attack_names",
    multiple=True,
    help="Attack to run (repeatable; see `vdbguard attacks list`). Default: pii-probe and bag-of-words.",
)
@click.option("--out", type=click.Path(path_type=Path), default=Path("."), show_default=True)
@format_option
@click.option("--batch-size", type=click.IntRange(1, 10_000), default=256, show_default=True)
@click.option("--state", type=click.Path(path_type=Path), help="Checkpoint file: an interrupted scan resumes.")
@click.option("--profile", type=click.Choice(["default", "small"]), default="default", show_default=True)
@click.option("--show-pii", is_flag=True, help="Do not mask recovered values in reports (handle as PII!).")
@click.option(
    "--owner-calibration",
    type=click.Choice(["auto", "on", "off"]),
    default="auto",
    show_default=True,
    help="Fit the probes and every attack's thresholds on the store's own records that keep their text "
    "(labelled by the PII detector), then judge every record by its vector alone. auto: when at least 300 "
    "records keep text. The report states the held-out recall and false-positive rate it reached.",
)
@click.option(
    "--calibration-sample",
    type=click.IntRange(50),
    default=3000,
    show_default=True,
    help="Records with text to label for owner-side calibration.",
)
@click.option(
    "--verdict",
    type=click.Choice(["fused", "any"]),
    default="fused",
    show_default=True,
    help="fused: one stacked model over every attack decides each PII type, its cutoffs set for --target-fpr "
    "on held-out real text (or on the store's own records, with owner-side calibration). any: a record is "
    "flagged when any attack passes its own threshold (more recall, many more false positives on real text).",
)
@click.option(
    "--target-fpr",
    type=click.FloatRange(0.0, 1.0),
    default=0.02,
    show_default=True,
    help="Share of records without PII that the fused verdict may flag.",
)
@click.option(
    "--save-calibration",
    type=click.Path(path_type=Path, file_okay=False),
    help="Keep the fitted calibration to reuse on collections made with the same embedder.",
)
@click.option(
    "--load-calibration",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Reuse a saved calibration instead of fitting one (for stores that keep no text).",
)
@fail_on_option("low")
@friendly_errors
def scan(
    connector_name: str,
    collection: str,
    path: Path | None,
    url: str | None,
    option: tuple[str, ...],
    embedder: str,
    attack_names: tuple[str, ...],
    out: Path,
    formats: tuple[str, ...],
    batch_size: int,
    state: Path | None,
    profile: str,
    show_pii: bool,
    owner_calibration: str,
    calibration_sample: int,
    verdict: str,
    target_fpr: float,
    save_calibration: Path | None,
    load_calibration: Path | None,
    fail_on: str,
) -> None:
    """Scan one collection and write its report to --out (report.json and report.md by default)."""
    from vdbguard.attacks import DEFAULT_ATTACKS
    from vdbguard.progress import RichProgress
    from vdbguard.scan import resolve_embedder, scan_collection
    from vdbguard.scan.owner import CalibrationOptions

    connector = _open_connector(connector_name, collection, path, url, option)
    with connector, RichProgress(console) as progress:
        model = resolve_embedder(connector, embedder)
        if model is not None and model.name != embedder:
            console.print(f"Identified the embedder from the stored vectors: {model.name}")
        report = scan_collection(
            connector,
            connector_name=connector_name,
            location=str(path or url),
            embedder=model,
            attack_names=attack_names or DEFAULT_ATTACKS,
            profile=profile,
            batch_size=batch_size,
            state_path=state,
            mask_pii=not show_pii,
            calibration=CalibrationOptions(
                owner_calibration, calibration_sample, target_fpr, save_calibration, load_calibration
            ),
            fused=verdict == "fused",
            progress=progress,
        )
    write_reports(report, out, formats)
    print_summary(report)
    if report.calibration is not None:
        c = report.calibration
        console.print(
            f"owner-side calibration on {c.records_labelled} labelled records: held-out recall "
            f"{c.held_out_recall}, false-positive rate {c.held_out_false_positive_rate} "
            f"(target {c.target_false_positive_rate})"
        )
    sys.exit(exit_code(report, fail_on))


@main.command()
@click.option("--out", type=click.Path(path_type=Path), default=Path("demo-out"), show_default=True)
@click.option("--records", type=click.IntRange(20, 100_000), default=2000, show_default=True)
@click.option("--profile", type=click.Choice(["default", "small"]), default="default", show_default=True)
@format_option
@fail_on_option("never")
@friendly_errors
def demo(out: Path, records: int, profile: str, formats: tuple[str, ...], fail_on: str) -> None:
    """Build an embedded Chroma store with known PII, scan it, and score the scan against the truth."""
    from vdbguard.connectors.chroma import ChromaConnector
    from vdbguard.demo import DEMO_COLLECTION, build_demo_store, demo_metrics
    from vdbguard.progress import RichProgress
    from vdbguard.scan import scan_collection
    from vdbguard.scan.owner import OFF

    embedder = Embedder()
    store = out / "store"
    with RichProgress(console) as progress:
        truth = build_demo_store(store, records, embedder, progress=progress)
        with ChromaConnector(collection=DEMO_COLLECTION, path=store) as connector:
            report = scan_collection(
                connector,
                connector_name="chroma",
                location=str(store),
                embedder=embedder,
                profile=profile,
                calibration=OFF,  # the demo measures what the vectors alone give away
                progress=progress,
            )
    write_reports(report, out, formats)
    (out / "ground-truth.json").write_text(json.dumps(truth, indent=0))
    metrics = demo_metrics(report, truth)
    (out / "demo-metrics.json").write_text(json.dumps(asdict(metrics), indent=2))
    print_summary(report)
    table = Table(title="Demo scored against ground truth (the scan never saw it)")
    for column in ("", "records", "flagged", "rate"):
        table.add_column(column, justify="right")
    table.add_row("with PII", str(metrics.pii_records), str(metrics.flagged_pii), f"{metrics.recall:.1%} recall")
    table.add_row(
        "clean",
        str(metrics.clean_records),
        str(metrics.flagged_clean),
        f"{metrics.false_positive_rate:.1%} false positives",
    )
    table.caption = f"precision {metrics.precision:.1%}"
    Console().print(table)
    sys.exit(exit_code(report, fail_on))


@main.command("evaluate-attacks")
@click.option("--data", type=click.Path(path_type=Path), required=True, help='JSONL: {"text": ..., "names": [...]}')
@click.option("--embedder", default=DEFAULT_EMBEDDER, show_default=True)
@click.option(
    "--attack",
    "attack_name",
    default="strongest",
    show_default=True,
    help="An inversion attack; strongest: the best measured token F1 for --embedder (each run here is kept).",
)
@click.option("--profile", type=click.Choice(["default", "small"]), default="default", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Where to write the metrics JSON.")
@friendly_errors
def evaluate_attacks(data: Path, embedder: str, attack_name: str, profile: str, out: Path) -> None:
    """Measure an inversion attack on your held-out texts (it sees only their embeddings)."""
    from vdbguard.attacks import load_attack_class
    from vdbguard.attacks.quality import record_quality
    from vdbguard.attacks.training import trained_attacks
    from vdbguard.evaluate.data import load_jsonl
    from vdbguard.evaluate.inversion import evaluate_inversion
    from vdbguard.progress import RichProgress

    items = load_jsonl(data)
    attack_cls = load_attack_class(attack_name, embedder)
    if attack_cls.kind != "inversion":
        raise VdbguardError(
            f"{attack_cls.name} does not recover text", "pick an inversion attack: vdbguard attacks list"
        )
    model = Embedder(embedder)
    started = time.perf_counter()
    with RichProgress(console) as progress:
        (attack,) = trained_attacks(model, [attack_cls.name], profile=profile, progress=progress)
    training_seconds = round(time.perf_counter() - started, 2)
    metrics = evaluate_inversion(attack, model, items)
    metrics["training_seconds"] = training_seconds
    record_quality(embedder, attack_cls.name, metrics)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(metrics, indent=2))
    click.echo(json.dumps(metrics, indent=2))


@main.command()
@store_options
@click.option("--to-collection", required=True, help="Collection to write the protected copy to.")
@click.option("--transform", "transform_name", required=True, help="See `vdbguard transforms list`.")
@click.option("--strength", type=float, required=True, help="The transform's strength (its meaning: transforms list).")
@click.option("--batch-size", type=click.IntRange(1, 10_000), default=256, show_default=True)
@click.option("--state", type=click.Path(path_type=Path), help="Checkpoint file: an interrupted copy resumes.")
@click.option("--in-place", is_flag=True, help="Overwrite --collection itself (needs --yes).")
@click.option("--yes", is_flag=True, help="Confirm --in-place.")
@click.option(
    "--concept",
    default="PERSON",
    show_default=True,
    help="For concept transforms (leace, sparse): the PII type or attribute to protect, learned from "
    "vdbguard's labelled corpus embedded with --embedder.",
)
@click.option("--embedder", default=DEFAULT_EMBEDDER, show_default=True, help="Model that made the vectors.")
@friendly_errors
def protect(
    connector_name: str,
    collection: str,
    path: Path | None,
    url: str | None,
    option: tuple[str, ...],
    to_collection: str,
    transform_name: str,
    strength: float,
    batch_size: int,
    state: Path | None,
    in_place: bool,
    yes: bool,
    concept: str,
    embedder: str,
) -> None:
    """Copy a collection through a transform into a new collection (never in place without --in-place --yes)."""
    from vdbguard.progress import RichProgress
    from vdbguard.protect import protect_collection
    from vdbguard.transforms import load_transform_class

    if (to_collection == collection) != in_place:
        raise click.UsageError("writing over the source collection needs --in-place (and --yes), and only then")
    if in_place and not yes:
        raise click.UsageError("--in-place rewrites every stored vector: add --yes to confirm")
    transform = load_transform_class(transform_name)(strength=strength)
    fit_on = None
    if transform.needs_labels:
        from vdbguard.transforms.concepts import corpus_concept_set

        with console.status(f"Learning where {concept} lives in {embedder}'s vectors"):
            fit_on = corpus_concept_set(Embedder(embedder), concept)
    source = _open_connector(connector_name, collection, path, url, option)
    target = source if in_place else _open_connector(connector_name, to_collection, path, url, option)
    with source, target, RichProgress(console) as progress:
        total = source.describe().count
        with progress.task(f"Protecting {collection} -> {to_collection}", total) as advance:
            result = protect_collection(
                source,
                target,
                transform,
                batch_size=batch_size,
                state_path=state,
                progress=advance,
                in_place=in_place,
                fit_on=fit_on,
            )
    console.print(f"copied {result.copied} records through {transform_name} (strength {strength}) to {to_collection}")


def _defense_items(data: Path):
    from vdbguard.evaluate.data import load_jsonl

    return load_jsonl(data)


_DEFENSE_ATTACK_HELP = (
    "Attack to measure leakage with (repeatable); the strongest result counts. "
    "Default: slot-search and bag-of-words when the data has names, else bag-of-words; add gradient (slower) "
    "before trusting concept erasure (leace, sparse), which blinds slot-search's probe but not gradient inversion."
)


@main.command("evaluate-defense")
@click.option("--data", type=click.Path(path_type=Path), required=True, help='JSONL: {"text": ..., "names": [...]}')
@click.option("--transform", "transform_name", required=True)
@click.option("--strength", type=float, required=True)
@click.option("--attack", "attack_names", multiple=True, help=_DEFENSE_ATTACK_HELP)
@click.option("--embedder", default=DEFAULT_EMBEDDER, show_default=True)
@click.option("--profile", type=click.Choice(["default", "small"]), default="default", show_default=True)
@click.option("--no-adaptive", is_flag=True, help="Skip retraining the attacker on protected vectors.")
@click.option(
    "--attack-limit",
    type=click.IntRange(1),
    help="Attack at most this many records (a seeded sample of those naming someone); utility uses all.",
)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@friendly_errors
def evaluate_defense_command(
    data: Path,
    transform_name: str,
    strength: float,
    attack_names: tuple[str, ...],
    embedder: str,
    profile: str,
    no_adaptive: bool,
    attack_limit: int | None,
    out: Path,
) -> None:
    """What one transform costs retrieval and what it buys against the attacks (and an adaptive attacker)."""
    from vdbguard.evaluate.defense import evaluate_defense
    from vdbguard.progress import RichProgress
    from vdbguard.transforms import load_transform_class

    transform = load_transform_class(transform_name)(strength=strength, seed=0)
    with RichProgress(console) as progress:
        point = evaluate_defense(
            transform,
            Embedder(embedder),
            _defense_items(data),
            attacks=attack_names,
            attack_limit=attack_limit,
            profile=profile,
            adaptive=not no_adaptive,
            progress=progress,
        )
    result = {**asdict(point), "leakage_cut": round(point.leakage_cut, 4), "recall_loss": round(point.recall_loss, 4)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    click.echo(json.dumps(result, indent=2))


@main.command()
@click.option("--data", type=click.Path(path_type=Path), required=True, help='JSONL: {"text": ..., "names": [...]}')
@click.option("--max-recall-loss", type=float, default=0.02, show_default=True)
@click.option("--target-leakage-cut", type=float, default=0.9, show_default=True)
@click.option("--transform", "transform_names", multiple=True, help="Transforms to try (default: all).")
@click.option("--attack", "attack_names", multiple=True, help=_DEFENSE_ATTACK_HELP)
@click.option("--embedder", default=DEFAULT_EMBEDDER, show_default=True)
@click.option("--profile", type=click.Choice(["default", "small"]), default="default", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), help="Write every measured point as JSON.")
@friendly_errors
def calibrate(
    data: Path,
    max_recall_loss: float,
    target_leakage_cut: float,
    transform_names: tuple[str, ...],
    attack_names: tuple[str, ...],
    embedder: str,
    profile: str,
    out: Path | None,
) -> None:
    """Pick the weakest transform setting that meets the leakage target within the recall budget.

    Each transform's strengths are tried weakest first, against the attacker trained on clean vectors;
    among transforms, the chosen setting is the one that loses the least recall.
    """
    from vdbguard.evaluate.calibration import calibrate as run_calibration
    from vdbguard.progress import RichProgress

    with RichProgress(console) as progress:
        result = run_calibration(
            _defense_items(data),
            Embedder(embedder),
            max_recall_loss=max_recall_loss,
            target_leakage_cut=target_leakage_cut,
            transform_names=transform_names,
            attack_names=attack_names,
            profile=profile,
            progress=progress,
            on_skip=lambda name, exc: console.print(f"skipped {name}: {exc}"),
        )
    points, chosen = result.points, result.chosen
    print_table(
        ("transform", "strength", "recall@10 loss", "leakage cut", "meets both"),
        (
            (
                p.transform,
                f"{p.strength:g}",
                f"{p.recall_loss:.3f}",
                f"{p.leakage_cut:.1%}",
                "yes" if result.meets(p) else "",
            )
            for p in points
        ),
        title=f"calibration: leakage cut >= {target_leakage_cut:.0%}, recall loss <= {max_recall_loss:.1%}",
    )
    if out:
        out.write_text(json.dumps([asdict(p) for p in points], indent=2))
    if chosen is None:
        console.print("no setting meets both targets; relax --max-recall-loss or --target-leakage-cut")
        sys.exit(EXIT_FINDINGS)
    console.print(f"chosen: {chosen.transform} at strength {chosen.strength:g}")


def _transform_rows() -> Iterable[Sequence[str]]:
    from vdbguard.transforms import transform_classes

    for name, cls in sorted(transform_classes().items()):
        needs = [
            need
            for need, flag in (("fit", cls.needs_fit), ("labels", cls.needs_labels), ("key", cls.needs_key))
            if flag
        ]
        swept = ", ".join(f"{s:g}" for s in cls.default_strengths)
        yield name, ", ".join(needs) or "-", cls.strength_meaning, swept, cls.description


def _attack_rows() -> Iterable[Sequence[str]]:
    from vdbguard.attacks import attack_classes, strongest_inversion
    from vdbguard.attacks.quality import measured_quality

    measured = measured_quality(DEFAULT_EMBEDDER)
    strongest = strongest_inversion(DEFAULT_EMBEDDER)
    for name, cls in sorted(attack_classes().items()):
        f1 = measured.get(name, {}).get("token_f1")
        quality = "-" if f1 is None else f"{f1:.2f}" + (" (strongest)" if name == strongest else "")
        yield name, cls.kind, quality, cls.description


def _connector_rows() -> Iterable[Sequence[str]]:
    from vdbguard.connectors import available_connectors

    for entry in available_connectors():
        install = escape(f"pip install 'vdbguard[{entry.extra}]'")
        yield entry.name, entry.extra, "yes" if entry.installed else "no", install


def _plugin_list(kind: str, about: str, columns: Sequence[str], rows: Callable[[], Iterable[Sequence[str]]]) -> None:
    """``vdbguard KIND list``: one table row per installed plugin of that kind."""
    group = main.group(name=kind, help=about)(lambda: None)
    group.command("list", help=f"Show every installed {kind[:-1]}.")(lambda: print_table(columns, rows()))


_plugin_list(
    "transforms",
    "Write-path defenses.",
    ("transform", "needs", "strength means", "swept strengths", "what it does"),
    _transform_rows,
)
_plugin_list(
    "attacks",
    "Attack plugins.",
    ("attack", "kind", f"token F1 on {DEFAULT_EMBEDDER}, measured", "what it does"),
    _attack_rows,
)
_plugin_list("connectors", "Store connectors.", ("connector", "extra", "installed", "install with"), _connector_rows)
