"""The ``vdbguard`` command. Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or connection error."""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import functools
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from vdbguard.cache import writable_dir
from vdbguard.config import DEEP_RECORD_SECONDS
from vdbguard.credentials import redact_location, remember_settings, safe_text, strip_userinfo
from vdbguard.embedders import DEFAULT_EMBEDDER, Embedder
from vdbguard.errors import VdbguardError
from vdbguard.progress import (
    LOG_FORMATS,
    JsonLines,
    JsonLogFormatter,
    PlainProgress,
    RichProgress,
    ScrubbingFormatter,
    json_event,
    progress_for,
)
from vdbguard.reports import DEFAULT_FORMATS
from vdbguard.reports.schema import Report, Severity
from vdbguard.reports.summary import TOP_FINDINGS, JsonSummary, report_paths

if TYPE_CHECKING:
    from vdbguard.config import JobConfig, Suppression
    from vdbguard.identifiers import DetectorSettings
    from vdbguard.reports.store_summary import StoreSummary

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
console = Console(stderr=True)


def _meta() -> dict[str, Any]:
    ctx = click.get_current_context(silent=True)
    return ctx.meta if ctx is not None else {}


def _json_logs() -> bool:
    return _meta().get("log_format") == "json"


def say(markup: str, event: str = "message", level: str = "info", **fields: Any) -> None:
    """A line on stderr: rich markup for a person, or under --log-format json one JSON object with ``event``
    and ``fields`` for a log collector (the message then the markup's plain text, scrubbed)."""
    if _json_logs():
        print(json_event(event, Text.from_markup(markup).plain, level, **fields), file=console.file, flush=True)
    else:
        console.print(markup)


def say_error(message: str, hint: str | None, unexpected: bool = False) -> None:
    """The error and its hint, credentials scrubbed: two lines for a person, one JSON object for a collector."""
    message, hint = safe_text(message), None if hint is None else safe_text(hint)
    if _json_logs():
        print(json_event("error", message, "error", hint=hint, unexpected=unexpected), file=console.file, flush=True)
        return
    console.print(f"[bold red]{'unexpected error' if unexpected else 'error'}:[/] {escape(message)}", highlight=False)
    if hint:
        console.print(f"[yellow]hint:[/] {escape(hint)}", highlight=False)


def _failed(error: VdbguardError, unexpected: bool = False) -> None:
    """Say what failed, give --json its summary (exit code 2 and the error) and exit 2."""
    say_error(error.message, error.hint, unexpected)
    _exit(EXIT_ERROR, _meta().get("json_summary"), error)


def friendly_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn vdbguard errors into one clear line and exit code 2, never a traceback."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except VdbguardError as exc:
            _failed(exc)
        except (click.ClickException, click.exceptions.Exit, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug or an unmapped store error: one line, credentials scrubbed
            hint = "re-run with -v; if it persists, report it with this message"
            _failed(VdbguardError(f"{type(exc).__name__}: {exc}", hint), unexpected=True)

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
    return EXIT_FINDINGS if any(f.severity.rank >= threshold for f in report.iter_findings()) else EXIT_CLEAN


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


def write_reports(report: Report, out: Path, formats: tuple[str, ...]) -> dict[str, str]:
    """Write the reports and say where: format name -> path."""
    from vdbguard.reports import write_reports as write

    paths = dict(zip(formats, map(str, write(report, out, formats)), strict=True))
    say("reports written to " + " and ".join(map(escape, paths.values())), "reports_written", paths=paths)
    return paths


def _formats(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    from vdbguard import plugins

    known = plugins.names("reports")
    formats = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    unknown = [name for name in formats if name not in known]
    if unknown or not formats:
        raise click.BadParameter(f"unknown format {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}")
    return formats


def format_option(default: Sequence[str] = DEFAULT_FORMATS) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--format",
        "formats",
        default=",".join(default),
        show_default=True,
        callback=_formats,
        help="Report formats, comma-separated (installed writers: json, md, html, csv, sarif and any plugin).",
    )


def _webhook_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a bad --webhook before the scan runs, never echoing its user:password or path."""
    from vdbguard.reports.metrics import check_webhook_url

    try:
        return None if value is None else check_webhook_url(value)
    except VdbguardError as exc:
        raise click.BadParameter(exc.message) from exc


def _english_only(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Refuse a language the detector does not read, rather than scan it with English models and call it clean."""
    from vdbguard.identifiers import check_language

    try:
        return check_language(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _detector_settings(file: Path | None) -> DetectorSettings | None:
    """--identifiers' file, read and validated before the scan starts."""
    from vdbguard.config import load_identifiers

    return None if file is None else load_identifiers(file)


def _remember_tls(ctx: click.Context, param: click.Parameter, value: Path | bool | None) -> None:
    """--ca-cert and --insecure become the connector's ``tls_verify`` (a CA file, or False)."""
    if not value:
        return
    if "tls_verify" in ctx.meta:
        raise click.UsageError("give --ca-cert or --insecure, not both")
    ctx.meta["tls_verify"] = str(value) if isinstance(value, Path) else False


def store_options(command: Callable[..., Any], required: bool = True) -> Callable[..., Any]:
    """The flags that say which store and collection to open, shared by every command that reads one."""
    for option in reversed(
        (
            click.option(
                "--connector", "connector_name", required=required, help="Store type; see `vdbguard connectors list`."
            ),
            click.option(
                "--collection",
                required=required,
                help="Collection (index, class) to read. scan also takes several: a comma-separated list and "
                "shell-style globs ('*', 'tickets_*') matched against the collections the store lists, each "
                "reported in its own folder under --out.",
            ),
            click.option("--path", type=click.Path(path_type=Path), help="Directory of an embedded store."),
            click.option("--url", help="URL of a store server, e.g. http://127.0.0.1:8000."),
            click.option("--option", multiple=True, help="Extra connector setting KEY=VALUE (repeatable)."),
            click.option(
                "--ca-cert",
                type=click.Path(path_type=Path, dir_okay=False, exists=True),
                expose_value=False,
                callback=_remember_tls,
                help="PEM file of the CA that signed the server's certificate (a private CA); verification stays on.",
            ),
            click.option(
                "--insecure",
                is_flag=True,
                expose_value=False,
                callback=_remember_tls,
                help="Do not verify the server's TLS certificate (anyone on the path can read the vectors).",
            ),
        )
    ):
        command = option(command)
    return command


class _Commands(click.Group):
    """The command group. Under --log-format json a usage error is one JSON object too, not click's text; and
    `scan --json` prints its summary for it (with the error) as for any other failure."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            summary = ctx.meta.get("json_summary")
            if ctx.meta.get("log_format") != "json" and summary is None:
                raise
            failed_in = getattr(exc, "ctx", None) or ctx
            error = VdbguardError(exc.format_message(), f"see `{failed_in.command_path} --help`")
            if ctx.meta.get("log_format") == "json":
                say_error(error.message, error.hint)
            else:
                exc.show()
            _exit(exc.exit_code, summary, error)


@click.group(cls=_Commands)
@click.version_option(package_name="vdbguard")
@click.option("-v", "--verbose", is_flag=True, help="Log progress details (never secrets).")
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default="text",
    show_default=True,
    envvar="VDBGUARD_LOG_FORMAT",
    show_envvar=True,
    help="text: progress bars on a terminal, else a plain line every 10 s (done, rate, ETA). "
    "json: progress and log records as JSON lines on stderr, for log collectors.",
)
@click.pass_context
def main(ctx: click.Context, verbose: bool, log_format: str) -> None:
    """Find privacy leaks in vector databases: attack the stored vectors, report what leaks."""
    ctx.meta["log_format"] = log_format
    if log_format == "json":
        _json_lines_on_stderr(ctx)
    handler = logging.StreamHandler()
    handler.setFormatter(
        JsonLogFormatter() if log_format == "json" else ScrubbingFormatter("%(levelname)s %(message)s")
    )
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
    logging.captureWarnings(log_format == "json")  # Python's warnings become JSON log records too
    for noisy in ("presidio-analyzer", "sentence_transformers", "httpx", "chromadb"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    logging.getLogger("vdbguard.scan.plan").setLevel(logging.INFO)  # the estimate and coverage, always shown


def _json_lines_on_stderr(ctx: click.Context) -> None:
    """Every line on stderr a JSON object until the command ends: whatever a library prints there on its own is
    wrapped in one, and rich prints each message on one line (no wrapping at the terminal's width)."""
    original = sys.stderr
    lines = JsonLines(original)
    sys.stderr = lines
    console.soft_wrap = True

    def restore() -> None:
        lines.close()
        sys.stderr = original
        console.soft_wrap = False

    ctx.call_on_close(restore)


def run() -> None:
    """The console script. A run stopped by SIGTERM (a job runner's timeout, a pod's deletion) unwinds as one
    stopped by Ctrl-C does: its private copy of the store is deleted, its state file resumes, and it exits 143."""
    signal.signal(signal.SIGTERM, _terminated)
    fix_malloc_thresholds()
    main()


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MALLOC_THRESHOLD = 128 << 10


def fix_malloc_thresholds() -> None:
    """Memory that returns to the system once freed, so a scan's peak stays flat as the store grows. glibc raises
    its mmap threshold to the largest block freed so far; the buffers LanceDB, Arrow and numpy free then stay in
    the heaps of the threads that freed them (BENCHMARKS.md, "peak memory and glibc's thresholds": 25-42% of the
    peak of a scan that reads pages, for about 5% of a first scan's time). A user's own ``MALLOC_*`` settings win,
    and a C library other than glibc is left as it is."""
    if not sys.platform.startswith("linux") or any(name.startswith("MALLOC_") for name in os.environ):
        return
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  # glibc's own symbol: other libcs read these parameters differently
    except (OSError, AttributeError):
        return
    libc.mallopt(M_MMAP_THRESHOLD, MALLOC_THRESHOLD)
    libc.mallopt(M_TRIM_THRESHOLD, MALLOC_THRESHOLD)


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _progress() -> RichProgress | PlainProgress:
    """The progress display --log-format and stderr call for: bars, plain lines or JSON lines."""
    return progress_for(console, click.get_current_context().meta.get("log_format", "text"))


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


def _open_connector(name: str, collection: str, path: Path | None, url: str | None, option: tuple[str, ...]):
    """Build a connector from the flags and --option pairs."""
    return _opened(_connector_factory(name, collection, path, url, option), name)


def _opened(factory: functools.partial, name: str):
    try:
        return factory()
    except TypeError as exc:
        raise VdbguardError(f"the {name} connector rejected its settings: {exc}", "check the --option names") from exc


def _connector_factory(
    name: str, collection: str, path: Path | None, url: str | None, option: tuple[str, ...]
) -> functools.partial:
    """The connector class with its settings from the flags and --option pairs: it opens the same collection
    in any process (a distributed scan's workers)."""
    from vdbguard.connectors import load_connector

    settings = _store_flags(path, url, option)
    return functools.partial(load_connector(name), **{"collection": collection, **settings})


def _store_flags(path: Path | None, url: str | None, option: tuple[str, ...]) -> dict[str, Any]:
    """The connector's settings but ``collection``, from the flags and --option pairs; secrets remembered to mask."""
    if (path is None) == (url is None):
        raise click.UsageError("give exactly one of --path (embedded store) or --url (server)")
    settings: dict[str, Any] = _connector_options(option)
    settings.update({"path": path} if path is not None else {"url": url})
    remember_settings(settings)
    tls_verify = click.get_current_context().meta.get("tls_verify")
    if tls_verify is not None:
        if url is None:
            raise click.UsageError("--ca-cert and --insecure are for a server (--url), not an embedded store")
        settings["tls_verify"] = tls_verify
    return settings


@main.command()
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Run a scan job file (vdbguard.toml: stores, attacks, budgets, allow lists, outputs; "
    "`vdbguard config init` writes one). The other flags are then not used.",
)
@functools.partial(store_options, required=False)
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
@format_option()
@click.option("--batch-size", type=click.IntRange(1, 10_000), default=256, show_default=True)
@click.option(
    "--state",
    type=click.Path(path_type=Path, dir_okay=False),
    help="SQLite state file: a re-scan attacks only new or changed records and resolves deleted ones; "
    "an interrupted scan resumes.",
)
@click.option("--profile", type=click.Choice(["default", "small"]), default="default", show_default=True)
@click.option("--show-pii", is_flag=True, help="Do not mask recovered values in reports (handle as PII!).")
@click.option(
    "--sample",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=1.0,
    show_default=True,
    help="Share of new or changed records the attacks run on (the report states the coverage).",
)
@click.option("--deep-attack", "deep_attack_names", multiple=True, help="Slower attack for the deep tier (repeatable).")
@click.option(
    "--deep-sample",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Share of records the fast tier did not flag that the deep tier also attacks.",
)
@click.option("--deep-max-records", type=click.IntRange(1), help="Deep-tier budget: records per run.")
@click.option(
    "--deep-max-seconds", type=click.FloatRange(0.0, min_open=True), help="Deep-tier budget: seconds per run."
)
@click.option(
    "--deep-record-seconds",
    type=click.FloatRange(0.0),
    default=DEEP_RECORD_SECONDS,
    show_default=True,
    help="CPU-seconds a budgeted deep attack (adversarial-decoding) may spend per record; 0 = its own default.",
)
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
@click.option(
    "--metrics-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the counts as a Prometheus textfile (node exporter's textfile collector: name it *.prom), "
    "replaced atomically after every scan; a failed scan sets vdbguard_scan_success 0 and keeps the last success.",
)
@click.option(
    "--webhook",
    metavar="URL",
    callback=_webhook_url,
    help="POST the counts as JSON here after the scan (never a recovered value); a failure only warns. "
    "user:password@ in the URL is sent as Basic auth.",
)
@click.option(
    "--executor",
    type=click.Choice(["in-process", "ray"]),
    default="in-process",
    show_default=True,
    help="ray: read the collection share by share and run the attacks on a Ray cluster (pip install "
    "'vdbguard[ray]'); same report and state. It loads the attacks before reading, even when nothing changed.",
)
@click.option(
    "--address",
    metavar="ADDR",
    help="With --executor ray: a running cluster's address (ray start --head prints it); "
    "default a local cluster of --workers CPUs.",
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=2,
    show_default=True,
    help="With --executor ray: attack actors (one CPU each).",
)
@click.option(
    "--baseline",
    "baseline_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Accept what an earlier scan found: its report.json (matched per collection, record id and PII type), or "
    "a suppression list in the job file's [[suppressions]] form (TOML or JSON). Accepted findings are left out of "
    "the reports and the exit code, as suppressions are; a new leak still fails.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON summary on stdout instead of the table: counts, the exit code, report paths and the most "
    "severe findings (no recovered value). Nothing else goes to stdout.",
)
@click.option(
    "--top-findings",
    type=click.IntRange(0),
    default=TOP_FINDINGS,
    show_default=True,
    help="With --json: how many of the most severe findings the summary lists.",
)
@click.option(
    "--findings",
    type=click.Choice(["vector", "stored_text"]),
    multiple=True,
    default=("vector", "stored_text"),
    show_default=True,
    help="Kinds of finding to report: what the vectors leak (vector), and PII or secrets the records keep in plain "
    "text beside them (stored_text). Repeat to give both.",
)
@click.option(
    "--identifiers",
    "identifiers_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Types of your own, each reported as CUSTOM:NAME (regexes with context words and a checksum, deny lists), "
    "and allow lists per type: a YAML, JSON or TOML file of a job file's [[identifiers]] and [[allow_lists]], in "
    "Presidio's ad-hoc recognizer fields (docs/jobs.md).",
)
@click.option(
    "--language",
    default="en",
    show_default=True,
    callback=_english_only,
    help="Language of the stored text. The PII detector reads English only (en); another is refused.",
)
@fail_on_option("low")
@friendly_errors
def scan(
    config_file: Path | None,
    connector_name: str | None,
    collection: str | None,
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
    sample: float,
    deep_attack_names: tuple[str, ...],
    deep_sample: float,
    deep_max_records: int | None,
    deep_max_seconds: float | None,
    deep_record_seconds: float,
    owner_calibration: str,
    calibration_sample: int,
    verdict: str,
    target_fpr: float,
    save_calibration: Path | None,
    load_calibration: Path | None,
    metrics_file: Path | None,
    webhook: str | None,
    executor: str,
    address: str | None,
    workers: int,
    baseline_file: Path | None,
    as_json: bool,
    top_findings: int,
    findings: tuple[str, ...],
    identifiers_file: Path | None,
    language: str,
    fail_on: str,
) -> None:
    """Scan one collection and write its report to --out (report.json and report.md by default), or run a job file.

    --collection 'a,b', '*' or 'tickets_*' scans each collection named or matched into --out/COLLECTION/, then
    writes store-summary.json and store-summary.md into --out: which collections hold the risk."""
    summary = _json_summary(fail_on, top_findings) if as_json else None
    baseline = _load_baseline(baseline_file)
    if config_file is not None:
        if connector_name or collection or path or url:
            raise click.UsageError("--config names its own stores: leave out --connector, --collection, --path, --url")
        if identifiers_file is not None:
            raise click.UsageError("--config holds its own identifiers: put them in the job file's [[identifiers]]")
        _exit(_run_job_file(config_file, baseline, summary), summary)
    detector_settings = _detector_settings(identifiers_file)
    if not connector_name or not collection:
        raise click.UsageError("give --connector and --collection (or --config JOB.toml)")
    from vdbguard.attacks import DEFAULT_ATTACKS
    from vdbguard.reports.metrics import post_webhook, webhook_payload, write_metrics
    from vdbguard.scan import resolve_embedder, scan_collection
    from vdbguard.scan.distributed import RayExecutor
    from vdbguard.scan.owner import CalibrationOptions

    if executor != "ray" and (address or workers != 2):
        raise click.UsageError("--address and --workers are for --executor ray")
    patterns = _collection_patterns(collection)
    if patterns is not None:
        with _resume_hint(state):
            config = _job_from_flags(click.get_current_context().params, patterns)
            if detector_settings is not None:
                config = config.model_copy(update=dict(detector_settings))
            _exit(_run_config(config, baseline, summary, webhook, store_folders=False), summary)
    writable_dir(out)
    if state is not None:
        writable_dir(state.parent, "the --state folder")
    started = time.monotonic()
    with _metrics_on_failure(metrics_file, collection, started), _resume_hint(state):
        open_connector = _connector_factory(connector_name, collection, path, url, option)
        connector = _opened(open_connector, connector_name)
        with connector, _progress() as progress:
            model = resolve_embedder(connector, embedder)
            if model is not None and model.name != embedder:
                say(f"Identified the embedder from the stored vectors: {model.name}")
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
                sample=sample,
                deep_attack_names=deep_attack_names,
                deep_budget=(deep_sample, deep_max_records, deep_max_seconds),
                deep_record_seconds=deep_record_seconds,
                executor=RayExecutor(open_connector, workers, address) if executor == "ray" else None,
                finding_kinds=findings,
                detector_settings=detector_settings,
            )
    duration = time.monotonic() - started
    report = _apply_baseline(report, baseline, state)
    paths = write_reports(report, out, formats)
    if metrics_file is not None:
        write_metrics(metrics_file, report, collection=collection, duration_s=duration)
    if webhook is not None:
        post_webhook(webhook, webhook_payload(report, duration))
    _print_coverage(report)
    if report.calibration is not None:
        c = report.calibration
        say(
            f"owner-side calibration on {c.records_labelled} labelled records: held-out recall "
            f"{c.held_out_recall}, false-positive rate {c.held_out_false_positive_rate} "
            f"(target {c.target_false_positive_rate})"
        )
    code = exit_code(report, fail_on)
    if summary is None:
        print_summary(report)
    else:
        summary.add(report, code, paths)
    _exit(code, summary)


def _json_summary(fail_on: str, top: int) -> JsonSummary:
    """--json's summary, to fill as collections finish; stdout is kept for it alone until the command ends, and
    what anything else prints there goes to stderr instead."""
    ctx = click.get_current_context()
    summary = JsonSummary(fail_on, top)
    ctx.meta["json_summary"], ctx.meta["json_stdout"] = summary, sys.stdout
    ctx.with_resource(contextlib.redirect_stdout(sys.stderr))
    return summary


def _exit(code: int, summary: JsonSummary | None, error: VdbguardError | None = None) -> None:
    """Exit with ``code``, --json's summary printed first on the stdout kept for it."""
    if summary is not None:
        click.echo(summary.render(code, error), file=_meta()["json_stdout"])
    sys.exit(code)


def _load_baseline(file: Path | None) -> list[Suppression]:
    """The baseline's suppressions still in force, read before the scan so that a bad file fails fast; an
    expired entry of a suppression list is named, as a job file's is."""
    if file is None:
        return []
    from vdbguard.baseline import load_baseline

    suppressions = load_baseline(file)
    today = datetime.date.today()
    _say_expired([s for s in suppressions if s.expires < today])
    return [s for s in suppressions if s.expires >= today]


def _apply_baseline(report: Report, baseline: list[Suppression], state: Path | None) -> Report:
    """The report without what the baseline accepts, as a job file's suppressions leave it (and so the state
    re-renders it: `vdbguard report STATE`)."""
    if not baseline:
        return report
    from vdbguard.scan.job import apply_suppressions
    from vdbguard.scan.state import ScanStore

    report, open_types = apply_suppressions(report, baseline)
    if state is not None and open_types:
        with ScanStore(state) as store:
            store.save_report(report, open_types)
    return report


def _say_expired(expired: Iterable[Suppression]) -> None:
    for suppression in expired:
        say(
            f"suppression of {escape(suppression.record_id)} ({suppression.pii_type or 'every type'}) by "
            f"{escape(suppression.owner)} expired on {suppression.expires}: its findings are reported again",
            "suppression_expired",
        )


def _print_coverage(report: Report) -> None:
    c = report.coverage
    if c is None:
        return
    line = f"attacked {c.records_attacked} new or changed records, carried {c.records_carried_over} over"
    if c.fast_tier_sample < 1.0:
        line += f" (sample {c.fast_tier_sample:.0%} of new or changed)"
    if c.deep_attacks:
        line += (
            f"; deep tier ({', '.join(c.deep_attacks)}) on {c.deep_records} records, "
            f"{c.deep_flagged_covered} of {c.deep_flagged_by_fast} flagged"
            + (" — budget used up" if c.deep_budget_exhausted else "")
        )
    if c.findings_resolved:
        line += f"; {c.findings_resolved} findings resolved (records deleted)"
    if c.findings_suppressed:
        line += f"; {c.findings_suppressed} suppressed"
    say(escape(line), "coverage", **c.model_dump())


def _collection_patterns(collection: str) -> list[str] | None:
    """The collections --collection names when it names several (a comma-separated list, shell-style globs);
    None for one collection by name, which is scanned into --out itself as it always was."""
    from vdbguard.scan.job import is_pattern

    if "," not in collection and not is_pattern(collection):
        return None
    patterns = [part.strip() for part in collection.split(",") if part.strip()]
    if not patterns:
        raise click.BadParameter(f"{collection!r} names no collection", param_hint="--collection")
    return patterns


def _job_from_flags(params: dict[str, Any], collections: list[str]) -> JobConfig:
    """`scan --collection PATTERN` as the job that scans those collections with the flags' settings, so that it
    runs as a job file's collections do: one after another, a report folder each, one --state for all."""
    from pydantic import ValidationError

    from vdbguard.attacks import DEFAULT_ATTACKS
    from vdbguard.config import AttackSettings, JobConfig, JobSettings, OutputSettings, StoreSettings, describe_errors

    for flag in ("save_calibration", "load_calibration"):
        if params[flag] is not None:
            raise click.UsageError(
                f"--{flag.replace('_', '-')} is for a scan of one collection; with --state each collection of "
                "several keeps its own calibration"
            )
    store = StoreSettings.from_flags(
        params["connector_name"], params["path"], params["url"], _store_flags_of(params), collections
    )
    kinds = {"findings": list(params["findings"])} if params.get("findings") else {}
    try:
        return JobConfig(
            job=JobSettings(
                state=params["state"],
                embedder=params["embedder"],
                profile=params["profile"],
                verdict=params["verdict"],
                target_fpr=params["target_fpr"],
                owner_calibration=params["owner_calibration"],
                calibration_sample=params["calibration_sample"],
                batch_size=params["batch_size"],
                executor=params["executor"],
                ray_address=params["address"],
                workers=params["workers"],
                fail_on=params["fail_on"],
                **kinds,
            ),
            stores=[store],
            attacks=AttackSettings(
                fast=list(params["attack_names"] or DEFAULT_ATTACKS),
                sample=params["sample"],
                deep=list(params["deep_attack_names"]),
                deep_sample=params["deep_sample"],
                deep_max_records=params["deep_max_records"],
                deep_max_seconds=params["deep_max_seconds"],
                deep_record_seconds=params["deep_record_seconds"],
            ),
            output=OutputSettings(
                dir=params["out"],
                formats=list(params["formats"]),
                show_pii=params["show_pii"],
                metrics_file=params["metrics_file"],
            ),
        )
    except ValidationError as exc:
        raise VdbguardError(
            f"the scan's flags have problems:\n{describe_errors(exc)}", "see `vdbguard scan --help`"
        ) from exc


def _store_flags_of(params: dict[str, Any]) -> dict[str, Any]:
    """The connector settings the flags give, less path and url (a StoreSettings keeps those apart)."""
    settings = _store_flags(params["path"], params["url"], params["option"])
    return {key: value for key, value in settings.items() if key not in ("path", "url")}


def _run_job_file(config_file: Path, baseline: list[Suppression], summary: JsonSummary | None) -> int:
    """Every collection of the job file; the exit code is the worst."""
    from vdbguard.config import load_job

    config = load_job(config_file)
    webhook = os.environ.get(config.output.webhook_env) if config.output.webhook_env else None
    return _run_config(config, baseline, summary, webhook)


def _run_config(
    config: JobConfig,
    baseline: list[Suppression],
    summary: JsonSummary | None,
    webhook: str | None,
    store_folders: bool = True,
) -> int:
    """Every collection of the job, the baseline's suppressions added to the job's, then the store summary; the
    exit code is the worst."""
    from vdbguard.reports.metrics import post_webhook, webhook_payload, write_metrics
    from vdbguard.reports.store_summary import StoreSummary
    from vdbguard.scan.job import run_job

    _say_expired(config.expired_suppressions(datetime.date.today()))
    if baseline:
        config = config.model_copy(update={"suppressions": [*config.suppressions, *baseline]})
    if summary is not None:
        summary.fail_on = config.job.fail_on
    code = EXIT_CLEAN
    metrics_file = config.resolve(config.output.metrics_file)
    store_summary = StoreSummary()

    def metrics_path(store: str, collection: str) -> Path:
        assert metrics_file is not None
        return metrics_file.with_name(f"{metrics_file.stem}-{store}-{collection}.prom")

    def failed(store: str, collection: str, seconds: float) -> None:
        """The failing collection's metrics say so (success 0, its last success kept); its error follows."""
        if metrics_file is not None:
            try:
                write_metrics(metrics_path(store, collection), None, collection=collection, duration_s=seconds)
            except VdbguardError as exc:
                logging.getLogger(__name__).warning("%s", exc)

    with _progress() as progress:
        for result in run_job(config, progress=progress, on_failure=failed, store_folders=store_folders):
            store_summary.add(result.report, result.store, result.out)
            where, paths = f"{result.store}/{result.collection}", report_paths(result.out, config.output.formats)
            say(f"{escape(where)}: reports in {escape(str(result.out))}", "reports_written", paths=paths)
            collection_code = exit_code(result.report, config.job.fail_on)
            if summary is None:
                print_summary(result.report)
            else:
                summary.add(result.report, collection_code, paths, result.store)
            _print_coverage(result.report)
            if metrics_file is not None:
                path = metrics_path(result.store, result.collection)
                write_metrics(path, result.report, collection=result.collection, duration_s=result.duration_s)
            if webhook:
                post_webhook(webhook, webhook_payload(result.report, result.duration_s))
            code = max(code, collection_code)
    output_dir = config.resolve(config.output.dir)
    assert output_dir is not None
    _store_summary(store_summary, output_dir, summary is None)
    return code


def _store_summary(store_summary: StoreSummary, out: Path, print_it: bool) -> None:
    """Write store-summary.json and .md into ``out`` and say where; print the table unless stdout is --json's."""
    paths = [str(path) for path in store_summary.write(out)]
    say("store summary written to " + " and ".join(map(escape, paths)), "store_summary_written", paths=paths)
    if print_it:
        header, rows = store_summary.table()
        title = "vdbguard: collections, riskiest first (records with findings of each kind; sensitivity: share of "
        title += "records with a high or critical finding)"
        print_table(header, [[escape(cell) for cell in row] for row in rows], title=title)


@contextlib.contextmanager
def _metrics_on_failure(metrics_file: Path | None, collection: str, started: float) -> Iterator[None]:
    """A scan that fails still says so in --metrics-file (success 0, the last success kept), then fails."""
    try:
        yield
    except BaseException:
        if metrics_file is not None:
            from vdbguard.reports.metrics import write_metrics

            try:
                write_metrics(metrics_file, None, collection=collection, duration_s=time.monotonic() - started)
            except VdbguardError as exc:  # the scan's own error is the one to show
                logging.getLogger(__name__).warning("%s", exc)
        raise


@contextlib.contextmanager
def _resume_hint(state: Path | None) -> Iterator[None]:
    """A scan with --state that fails after committing records says that it resumes: they are kept."""
    try:
        yield
    except VdbguardError as exc:
        if state is not None and exc.resumable:
            resume = f"what was scanned is kept in {state}: run the same command again to resume"
            exc.hint = f"{exc.hint}; then {resume}" if exc.hint else resume
        raise


@main.command()
@click.option("--out", type=click.Path(path_type=Path), default=Path("demo-out"), show_default=True)
@click.option("--records", type=click.IntRange(20, 100_000), default=2000, show_default=True)
@click.option("--profile", type=click.Choice(["default", "small"]), default="default", show_default=True)
@format_option(("json", "md", "html", "sarif", "csv"))
@fail_on_option("never")
@friendly_errors
def demo(out: Path, records: int, profile: str, formats: tuple[str, ...], fail_on: str) -> None:
    """Build an embedded Chroma store with known PII, scan it, and score the scan against the truth."""
    from vdbguard.connectors.chroma import ChromaConnector
    from vdbguard.demo import DEMO_COLLECTION, build_demo_store, demo_metrics
    from vdbguard.scan import scan_collection
    from vdbguard.scan.owner import OFF

    embedder = Embedder()
    store = out / "store"
    with _progress() as progress:
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
@click.option(
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
    """Measure an inversion attack on your held-out texts (it sees only their embeddings)."""
    from vdbguard.attacks import load_attack_class
    from vdbguard.attacks.base import with_record_budget
    from vdbguard.attacks.quality import record_quality
    from vdbguard.attacks.training import trained_attacks
    from vdbguard.evaluate.data import load_jsonl
    from vdbguard.evaluate.inversion import evaluate_inversion

    items = load_jsonl(data)
    attack_cls = load_attack_class(attack_name, embedder)
    if attack_cls.kind != "inversion":
        raise VdbguardError(
            f"{attack_cls.name} does not recover text", "pick an inversion attack: vdbguard attacks list"
        )
    model = Embedder(embedder)
    started = time.perf_counter()
    with _progress() as progress:
        (attack,) = trained_attacks(model, [attack_cls.name], profile=profile, progress=progress)
    training_seconds = round(time.perf_counter() - started, 2)
    metrics = evaluate_inversion(with_record_budget(attack, seconds_per_record), model, items)
    metrics["training_seconds"] = training_seconds
    if seconds_per_record and "max_seconds" in attack.settings:
        metrics["seconds_per_record_budget"] = seconds_per_record
    else:  # a budgeted run measures the budget, not the attack
        record_quality(embedder, attack_cls.name, metrics)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(metrics, indent=2))
    click.echo(json.dumps(metrics, indent=2))


_DEFENSE_ATTACK_HELP = (
    "Attack to measure leakage with (repeatable); the strongest result counts. Default: the strongest suite "
    "(white-box gradient, the best measured inversion attack, slot-search when the data names people, "
    "bag-of-words), each also adapted to the defense."
)


@main.command()
@store_options
@click.option("--embedder", default=DEFAULT_EMBEDDER, show_default=True, help="Model that made the vectors ('auto').")
@click.option(
    "--sample",
    type=click.IntRange(1),
    default=2000,
    show_default=True,
    help="Records whose stored text is embedded again and compared with their vector.",
)
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
@click.option("--attack", "attack_names", multiple=True, help="With --transform: " + _DEFENSE_ATTACK_HELP)
@click.option("--cheap", is_flag=True, help="With --transform: only slot-search and bag-of-words (a lower bound).")
@click.option("--profile", type=click.Choice(["default", "small"]), default="default", show_default=True)
@click.option(
    "--attack-limit",
    type=click.IntRange(1),
    default=50,
    show_default=True,
    help="With --transform: attack at most this many of the store's texts.",
)
@click.option("--out", type=click.Path(path_type=Path), help="Also write the audit as JSON to this file.")
@fail_on_option("high")
@friendly_errors
def audit(
    connector_name: str,
    collection: str,
    path: Path | None,
    url: str | None,
    option: tuple[str, ...],
    embedder: str,
    sample: int,
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
    text their payload redacts, and, with the owner's --transform, what the transform really buys."""
    from vdbguard.audit import ANONYMOUS, OwnerTransform, audit_collection
    from vdbguard.cache import write_json_atomic
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
    with _open_connector(connector_name, collection, path, url, option) as connector:
        model = resolve_embedder(connector, embedder) or Embedder()
        result = audit_collection(
            connector,
            connector_name=connector_name,
            location=location,
            embedder=model,
            sample=sample,
            open_anonymous=(lambda: _open_connector(connector_name, collection, None, anonymous_url, anonymous))
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
        write_json_atomic(out, result.to_json(), indent=2)
        say(f"audit written to {out}")
    worst = result.worst
    failing = fail_on != "never" and worst is not None and worst.rank >= Severity(fail_on).rank
    sys.exit(EXIT_FINDINGS if failing else EXIT_CLEAN)


class _TransformOption(click.Option):
    """``--transform`` whose help names the installed transforms that need a fit, labels or a key, read from
    the classes only when help is shown (so every other command skips loading them)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from vdbguard.transforms import needs_help

        self.help = f"See `vdbguard transforms list`. {needs_help()}"
        return super().get_help_record(ctx)


@main.command()
@store_options
@click.option("--to-collection", required=True, help="Collection to write the protected copy to.")
@click.option("--transform", "transform_name", required=True, cls=_TransformOption)
@click.option("--strength", type=float, required=True, help="The transform's strength (its meaning: transforms list).")
@click.option("--batch-size", type=click.IntRange(1, 10_000), default=256, show_default=True)
@click.option("--state", type=click.Path(path_type=Path), help="Checkpoint file: an interrupted copy resumes.")
@click.option(
    "--fit-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="For transforms that need a fit: load it from this .npz when it exists, else fit and save it here "
    "(default: beside --state). Reuse it to protect more data, or query, in the same space.",
)
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
@click.option(
    "--payload",
    "stored_text",
    type=click.Choice(["redact", "keep", "drop"]),
    default="redact",
    show_default=True,
    help="With redact: what the copy stores beside its vectors: the text and payload redacted, kept as they were, or "
    "the text dropped.",
)
@click.option(
    "--scan/--no-scan",
    "scan_after",
    default=True,
    show_default=True,
    help="Scan the source and the copy (fast tier) and print the leaks before and after.",
)
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
    fit_file: Path | None,
    in_place: bool,
    yes: bool,
    concept: str,
    embedder: str,
    stored_text: str,
    scan_after: bool,
) -> None:
    """Copy a collection through a transform into a new collection (never in place without --in-place --yes).

    redact (and chains that start with it, redact+gaussian) reads each record's stored text, redacts it and embeds
    it again with --embedder: the one defense that removes a name from a vector, for collections that exist.

    \b
    vdbguard protect --connector chroma --path ./data --collection tickets --to-collection tickets_safe \\
      --transform redact --strength 0.4 --state protect.json
    """
    from vdbguard.protect import protect_collection
    from vdbguard.transforms.chain import build_transform

    if (to_collection == collection) != in_place:
        raise click.UsageError("writing over the source collection needs --in-place (and --yes), and only then")
    if in_place and not yes:
        raise click.UsageError("--in-place rewrites every stored vector: add --yes to confirm")
    transform = build_transform(transform_name, strength)
    fit_on = None
    if transform.needs_labels and not (fit_file is not None and fit_file.exists()):  # a saved fit needs no corpus
        from vdbguard.transforms.concepts import corpus_concept_set

        with console.status(f"Learning where {concept} lives in {embedder}'s vectors"):
            fit_on = corpus_concept_set(Embedder(embedder), concept)
    model = Embedder(embedder) if transform.text_side else None
    source = _open_connector(connector_name, collection, path, url, option)
    target = source if in_place else _open_connector(connector_name, to_collection, path, url, option)
    with source, target, _progress() as progress:
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
                fit_path=fit_file,
                embed=None if model is None else model.encode,
                embedder_name=None if model is None else model.name,
                stored_text=stored_text,  # type: ignore[arg-type]
            )
    say(f"copied {result.copied} records through {transform_name} (strength {strength}) to {to_collection}")
    for problem in result.problems[:10]:
        say(f"  skipped {problem}")
    if scan_after and not in_place:
        _print_before_after(connector_name, (collection, to_collection), path, url, option, embedder)


def _print_before_after(
    connector_name: str, collections: tuple[str, str], path: Path | None, url: str | None, option: tuple[str, ...],
    embedder: str,
) -> None:  # fmt: skip
    """The leaks of the source and of its protected copy, by kind and PII type: what the protection bought."""
    from collections import Counter

    from vdbguard.scan import scan_collection

    counts: list[Counter[tuple[str, str]]] = []
    for name in collections:
        with _open_connector(connector_name, name, path, url, option) as connector, _progress() as progress:
            report = scan_collection(
                connector,
                connector_name=connector_name,
                location=redact_location(str(path or url)),
                embedder=Embedder(embedder),
                progress=progress,
            )
        counts.append(Counter((f.kind, t) for f in report.iter_findings() for t in f.pii_types))
    keys = sorted(set(counts[0]) | set(counts[1]))
    rows = [(f"{key[0]}: {key[1]}", str(counts[0][key]), str(counts[1][key])) for key in keys]
    print_table(["records flagged", collections[0], collections[1]], rows, title="leaks before and after")


def defense_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """What every defense measurement takes: the data, the attackers and their budget."""
    for option in reversed(
        (
            click.option(
                "--data",
                type=click.Path(path_type=Path),
                required=True,
                help='Held-out JSONL: {"text": ..., "names": [...], "pii": [...]} (names and pii optional).',
            ),
            click.option("--attack", "attack_names", multiple=True, help=_DEFENSE_ATTACK_HELP),
            click.option(
                "--cheap",
                is_flag=True,
                help="Only slot-search and bag-of-words (minutes, not hours): a lower bound on leakage, said so in "
                "the output.",
            ),
            click.option("--embedder", default=DEFAULT_EMBEDDER, show_default=True),
            click.option("--profile", type=click.Choice(["default", "small"]), default="default", show_default=True),
            click.option(
                "--attack-limit",
                type=click.IntRange(1),
                help="Attack at most this many records (a seeded sample of those naming someone); utility uses all.",
            ),
            click.option(
                "--seconds-per-record",
                type=click.FloatRange(0),
                default=5.0,
                show_default=True,
                help="Search budget per record for attacks that have one (adversarial-decoding); 0: none.",
            ),
        )
    ):
        command = option(command)
    return command


def _bench(
    progress: Any,
    data: Path,
    attack_names: tuple[str, ...],
    cheap: bool,
    embedder: str,
    profile: str,
    attack_limit: int | None,
    seconds_per_record: float,
) -> Any:
    """The DefenseBench for the options of :func:`defense_options`."""
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
        progress=progress,
    )


def _say_cheap(cheap: bool) -> None:
    if cheap:
        say(
            "[yellow]cheap attackers only (slot-search, bag-of-words): leakage is a lower bound; "
            "drop --cheap before trusting a defense[/yellow]"
        )


@main.command("evaluate-defense")
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
@click.option("--out", type=click.Path(path_type=Path), required=True)
@friendly_errors
def evaluate_defense_command(
    transform_name: str,
    strength: float | None,
    no_adaptive: bool,
    out: Path,
    **bench_options: Any,
) -> None:
    """What one transform costs retrieval and what the strongest attacks, adapted, still recover."""
    from vdbguard.evaluate.frontier import row_of
    from vdbguard.transforms.chain import build_transform

    transform = build_transform(transform_name, strength, seed=0)
    with _progress() as progress:
        bench = _bench(progress, **bench_options)
        point = bench.measure(transform, adaptive=not no_adaptive)
    result = row_of(point, over_budget=False)
    result["leakage_cut"] = round(point.leakage_cut, 4)
    del result["over_budget"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    click.echo(json.dumps(result, indent=2))
    _say_cheap(point.cheap)


@main.command()
@defense_options
@click.option("--max-recall-loss", type=float, default=0.02, show_default=True, help="On queries without PII.")
@click.option("--target-leakage-cut", type=float, default=0.9, show_default=True)
@click.option("--transform", "transform_names", multiple=True, help="Transforms or chains to try (default: all).")
@click.option("--out", type=click.Path(path_type=Path), help="Write every measured point as JSON.")
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
    that loses the least recall. A cut only the clean-trained attacker respects is never enough.
    """
    from vdbguard.evaluate.calibration import calibrate as run_calibration
    from vdbguard.evaluate.frontier import row_of

    with _progress() as progress:
        result = run_calibration(
            _bench(progress, **bench_options),
            max_recall_loss=max_recall_loss,
            target_leakage_cut=target_leakage_cut,
            transform_names=transform_names,
            on_skip=lambda name, exc: say(f"skipped {name}: {exc}"),
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
    if out:
        out.write_text(json.dumps([row_of(p, not result.within_budget(p)) for p in points], indent=2))
    _say_cheap(result.cheap)
    if chosen is None:
        say("nothing meets the target: no setting holds against the adaptive attacker within the budget")
        for p in result.closest():
            cut = "-" if p.worst_cut is None else f"{p.worst_cut:.1%}"
            say(f"  closest: {p.transform} {p.strength:g}: recall loss {p.recall_loss:.3f}, cut {cut}")
        say("relax --max-recall-loss or --target-leakage-cut, or redact the text before embedding")
        sys.exit(EXIT_FINDINGS)
    say(f"chosen: {chosen.transform} at strength {chosen.strength:g}")


@main.command()
@defense_options
@click.option("--max-recall-loss", type=float, default=0.02, show_default=True, help="On queries without PII.")
@click.option("--target-leakage-cut", type=float, default=0.9, show_default=True, help="Drawn on the plot.")
@click.option(
    "--transform",
    "transform_names",
    multiple=True,
    help="Transforms or chains (default: every transform that sweeps strengths, and redact+gaussian, "
    "redact+dcpe, leace:1+gaussian).",
)
@click.option(
    "--out", type=click.Path(path_type=Path), required=True, help="Folder: points.json, table.md, frontier.png"
)
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
    """
    from vdbguard.evaluate.calibration import default_transforms
    from vdbguard.evaluate.frontier import COMBINATIONS, dominance, plot, run_frontier, table

    names = transform_names or (*default_transforms(), *COMBINATIONS)
    with _progress() as progress:
        bench = _bench(progress, **bench_options)
        rows = run_frontier(
            bench,
            names,
            out / "points.json",
            max_recall_loss=max_recall_loss,
            on_skip=lambda name, exc: say(f"skipped {name}: {exc}"),
        )
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


def _transform_rows() -> Iterable[Sequence[str]]:
    from vdbguard.transforms import needs_of, transform_classes

    for name, cls in sorted(transform_classes().items()):
        needs = needs_of(cls)
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


def subject_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Who the request is about and how to look for them: shared by `subject find` and `subject erase`."""
    for option in reversed(
        (
            click.option("--name", help="The person's full name, as it would be written in a record."),
            click.option("--email", help="The person's email address."),
            click.option("--phone", help="The person's phone number (matched on its digits)."),
            click.option(
                "--embedder",
                default=DEFAULT_EMBEDDER,
                show_default=True,
                help="Model that made the vectors ('auto' to identify it; 'store' for one that cannot run here: "
                "payload search only).",
            ),
            click.option(
                "--attack",
                "attack_names",
                multiple=True,
                default=("bag-of-words",),
                show_default=True,
                help="Inversion attack whose recovered words are matched against the name and email (repeatable; "
                "'none' for none).",
            ),
            click.option("--profile", type=click.Choice(["default", "small"]), default="default", show_default=True),
            click.option("--show-pii", is_flag=True, help="Show matched values unmasked (handle the output as PII!)."),
            click.option(
                "--out", type=click.Path(path_type=Path, dir_okay=False), help="Also write the result as JSON."
            ),
        )
    ):
        command = option(command)
    return store_options(command)


@contextlib.contextmanager
def _subject_search(options: dict[str, Any]) -> Iterator[tuple[Any, Any, Any]]:
    """Open the store, search it for the subject and print (and write) what was found; yields (connector,
    subject, search) with the store still open."""
    from vdbguard.attacks.training import trained_attacks
    from vdbguard.cache import write_json_atomic
    from vdbguard.scan import resolve_embedder
    from vdbguard.subject import Subject, find_subject

    subject = Subject(name=options["name"], email=options["email"], phone=options["phone"])
    collection = options["collection"]
    store = (options["connector_name"], collection, options["path"], options["url"], options["option"])
    with _open_connector(*store) as connector:
        model = resolve_embedder(connector, options["embedder"])
        names = [name for name in options["attack_names"] if name != "none"]
        with _progress() as progress:
            attacks = (
                trained_attacks(model, names, profile=options["profile"], progress=progress) if model and names else []
            )
        search = find_subject(connector, subject, model, collection, attacks, mask_pii=not options["show_pii"])
        rows = [
            (record.id, evidence.method, evidence.detail, f"{evidence.score:g} / {evidence.threshold:g}")
            for record in search.records
            for evidence in record.evidence
        ]
        title = f"vdbguard subject find: {collection} ({search.records_read} records read)"
        print_table(("record", "method", "evidence", "score / threshold"), rows, title=title)
        for note in search.notes:
            say(f"note: {escape(note)}")
        say(f"{len(search.records)} records relate to {escape(' '.join(search.subject.values()))}")
        if options["out"] is not None:
            write_json_atomic(options["out"], search.to_json(), indent=2)
            say(f"written to {options['out']}")
        yield connector, subject, search


@main.group()
def subject() -> None:
    """Data-subject requests: find the records about a person (payload, membership and inversion evidence),
    and erase them with an audit log."""


@subject.command("find")
@subject_options
@friendly_errors
def subject_find(**options: Any) -> None:
    """List the records that relate to a person, each with its evidence (reads only)."""
    with _subject_search(options):
        pass


@subject.command("erase")
@subject_options
@click.option(
    "--audit-log",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="JSON-lines file the erasure is appended to (who, when, which ids, which evidence; the person only as "
    "SHA-256 digests and masked forms).",
)
@click.option("--actor", help="Who asked for the erasure (default: the login name).")
@click.option("--yes", is_flag=True, help="Delete for real; without it this is a dry run that deletes nothing.")
@friendly_errors
def subject_erase(audit_log: Path, actor: str | None, yes: bool, **options: Any) -> None:
    """Delete the records `subject find` lists for a person: a dry run unless --yes; a deletion is logged."""
    from vdbguard.subject import erase_subject

    with _subject_search(options) as (connector, person, search):
        if not yes:
            say(f"dry run: {len(search.records)} records would be deleted; re-run with --yes to delete them")
            return
        location = redact_location(str(options["path"] or options["url"]))
        deleted = erase_subject(connector, search, person, audit_log, location, actor=actor)
    say(f"deleted {len(deleted)} records; logged to {audit_log}")


@main.group()
def config() -> None:
    """Scan job files (vdbguard.toml): write a starter, check one, print the JSON Schema."""


@config.command("init")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False), default=Path("vdbguard.toml"))
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
def config_init(file: Path, force: bool) -> None:
    """Write a commented starter job file (default ./vdbguard.toml)."""
    from vdbguard.config import STARTER

    if file.exists() and not force:
        raise click.UsageError(f"{file} exists; pass --force to overwrite it")
    file.write_text(STARTER, encoding="utf-8")
    say(f"wrote {file}: edit [[stores]], then `vdbguard config validate {file}`")


@config.command("validate")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@friendly_errors
def config_validate(file: Path) -> None:
    """Check a job file: every problem with where it is; exit 2 if there is any."""
    from vdbguard.config import load_job

    job = load_job(file)
    missing = sorted(
        f"{store.label}: {variable}"
        for store in job.stores
        for variable in store.credentials.values()
        if not os.environ.get(variable)
    )
    collections = sum(len(store.collections) for store in job.stores)
    say(f"{file} is valid: {len(job.stores)} store(s), {collections} collection(s)")
    if missing:
        say("not set in this environment (the scan will need them): " + ", ".join(missing))


@config.command("schema")
def config_schema() -> None:
    """Print the job file's JSON Schema (also in docs/job-schema.json)."""
    from vdbguard.config import job_schema

    click.echo(json.dumps(job_schema(), indent=2))


@main.command()
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--out", type=click.Path(path_type=Path), default=Path("."), show_default=True)
@format_option()
@friendly_errors
def report(source: Path, out: Path, formats: tuple[str, ...]) -> None:
    """Re-render a report.json, or every collection's last report in a scan state file, without re-scanning."""
    from vdbguard.reports.loading import is_sqlite, load_report
    from vdbguard.scan.state import ScanStore

    if is_sqlite(source):
        with ScanStore(source) as state:
            reports = state.latest_reports()
        if not reports:
            raise VdbguardError(f"{source} holds no finished scan yet", "run the scan with --state to completion")
        for one in reports:
            target = one.target
            folder = out if len(reports) == 1 else out / f"{target.connector}-{target.collection}"
            write_reports(one, folder, formats)
        return
    write_reports(load_report(source), out, formats)
