"""`vdbguard scan`: its flags, its help and its exit code. The flags describe a job of one store, which runs as a job
file does (`vdbguard.scan.job`, which also publishes each collection's counts)."""

from __future__ import annotations

import contextlib
import datetime
import functools
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import BaseModel
from rich.markup import escape

from vdbguard.cli.common import (
    EXIT_CLEAN,
    EXIT_ERROR,
    exit_code,
    exit_with,
    flags_store,
    format_option,
    friendly_errors,
    out_option,
    print_summary,
    print_table,
    progress,
    say,
    say_error,
    say_reports_written,
    setting_option,
    settings_options,
    store_options,
    validated,
)
from vdbguard.cli.help import Command
from vdbguard.config import AttackSettings, JobSettings, OutputSettings, ScanCommand, job_default

if TYPE_CHECKING:
    from vdbguard.config import JobConfig, StoreSettings, Suppression
    from vdbguard.reports.summary import JsonSummary
    from vdbguard.scan.job import CollectionResult, Folders


@click.command(cls=Command)
@functools.partial(store_options, required=False)
@setting_option(JobSettings, "embedder")
@setting_option(AttackSettings, "fast")
@out_option("the reports (each collection of several in a folder of its own)", "dir", default=Path("."))
@format_option()
@setting_option(JobSettings, "state")
@setting_option(OutputSettings, "show_pii")
@setting_option(JobSettings, "findings")
@setting_option(OutputSettings, "metrics_file")
@settings_options(ScanCommand)
@setting_option(JobSettings, "fail_on")
@setting_option(JobSettings, "profile")
@setting_option(AttackSettings, "sample")
@setting_option(AttackSettings, "deep")
@setting_option(AttackSettings, "deep_sample")
@setting_option(AttackSettings, "deep_max_records")
@setting_option(AttackSettings, "deep_max_seconds")
@setting_option(AttackSettings, "deep_record_seconds")
@setting_option(JobSettings, "owner_calibration")
@setting_option(JobSettings, "calibration_sample")
@setting_option(JobSettings, "save_calibration")
@setting_option(JobSettings, "load_calibration")
@setting_option(JobSettings, "verdict")
@setting_option(JobSettings, "target_fpr")
@setting_option(JobSettings, "executor")
@setting_option(JobSettings, "ray_address")
@setting_option(JobSettings, "workers")
@setting_option(JobSettings, "batch_size")
@friendly_errors
def scan(settings: ScanCommand, **flags: Any) -> None:
    """Scan one collection and write its report to --out (report.json and report.md by default), or run a job file.

    --collection 'a,b', '*' or 'tickets_*' scans each collection named or matched into --out/COLLECTION/, then
    writes store-summary.json and store-summary.md into --out: which collections hold the risk.

    Examples:

    \b
      vdbguard scan --connector chroma --path ./chroma-data --collection tickets --out scan-out
      vdbguard scan --connector qdrant --url http://127.0.0.1:6333 --collection '*' --state scan.sqlite
      vdbguard scan --config vdbguard.toml --json > vdbguard-summary.json
    """
    from vdbguard.baseline import baseline_in_force
    from vdbguard.cache import writable_dir
    from vdbguard.config import load_identifiers, load_job

    summary = _json_summary(flags["fail_on"], settings.top_findings) if settings.as_json else None
    baseline, expired = baseline_in_force(settings.baseline, datetime.date.today())
    _say_expired(expired)
    name, collection, path, url = (flags[k] for k in ("connector_name", "collection", "path", "url"))
    if settings.config is not None:
        if name or collection or path or url:
            raise click.UsageError("--config names its own stores: leave out --connector, --collection, --path, --url")
        if settings.identifiers is not None:
            raise click.UsageError("--config holds its own identifiers: put them in the job file's [[identifiers]]")
        exit_with(_scan_job(load_job(settings.config), baseline, summary, None), summary)
    if not name or not collection:
        raise click.UsageError("give --connector and --collection (or --config JOB.toml)")
    if flags["executor"] != "ray" and (flags["ray_address"] or flags["workers"] != job_default(JobSettings, "workers")):
        raise click.UsageError("--address and --workers are for --executor ray")
    patterns = _collection_patterns(collection)
    config = _job_from_flags(flags, flags_store(name, patterns or [collection], path, url, flags["option"]))
    if settings.identifiers is not None:
        config = config.model_copy(update=dict(load_identifiers(settings.identifiers)))
    writable_dir(flags["dir"])  # named by its flag here; the job checks each collection's folder again
    if flags["state"] is not None:
        writable_dir(flags["state"].parent, "the --state folder")
    folders = "none" if patterns is None else "collection"
    exit_with(_scan_job(config, baseline, summary, settings.webhook, folders), summary)


def _job_from_flags(flags: Mapping[str, Any], store: StoreSettings) -> JobConfig:
    """The job `scan`'s flags describe: its one store, the flags' settings, so that it runs as a job file's
    collections do."""
    from vdbguard.config import JobConfig

    def section(model: type[BaseModel]) -> dict[str, Any]:
        return {field: flags[field] for field in model.model_fields if field in flags}

    sections = {"job": section(JobSettings), "attacks": section(AttackSettings), "output": section(OutputSettings)}
    return validated(JobConfig, {**sections, "stores": [store]})


def _json_summary(fail_on: str, top: int) -> JsonSummary:
    """--json's summary, to fill as collections finish; stdout is kept for it alone until the command ends, and
    what anything else prints there goes to stderr instead."""
    ctx = click.get_current_context()
    from vdbguard.reports.summary import JsonSummary

    summary = JsonSummary(fail_on, top)
    ctx.meta["json_summary"], ctx.meta["json_stdout"] = summary, sys.stdout
    ctx.with_resource(contextlib.redirect_stdout(sys.stderr))
    return summary


def _collection_patterns(collection: str) -> list[str] | None:
    """The collections --collection names when it names several (a comma-separated list, shell-style globs);
    None for one collection by name, which is scanned into --out itself as it always was."""
    from vdbguard.config import is_pattern

    if "," not in collection and not is_pattern(collection):
        return None
    patterns = [part.strip() for part in collection.split(",") if part.strip()]
    if not patterns:
        raise click.BadParameter(f"{collection!r} names no collection", param_hint="--collection")
    return patterns


def _scan_job(
    config: JobConfig,
    baseline: list[Suppression],
    summary: JsonSummary | None,
    webhook: str | None,
    folders: Folders = "store",
) -> int:
    """Every collection of the job, the baseline's suppressions added to the job's, then the store summary; the
    exit code is the worst. ``folders="none"``: one collection, its reports --out's own, its failure the command's."""
    from vdbguard.baseline import with_baseline
    from vdbguard.scan.job import CollectionFailure, Publisher, run_job

    _say_expired(config.expired_suppressions(datetime.date.today()))
    config = with_baseline(config, baseline)
    if summary is not None:
        summary.fail_on = config.job.fail_on
    one = folders == "none"
    publisher = Publisher.for_job(config, webhook, per_collection=not one)
    code = EXIT_CLEAN
    with progress() as bars:
        for result in run_job(config, progress=bars, publisher=publisher, folders=folders):
            if isinstance(result, CollectionFailure) and one:
                raise result.error
            if isinstance(result, CollectionFailure):
                error = result.error
                say_error(
                    f"{result.store}/{result.collection}: {error.message} (the other collections go on)", error.hint
                )
                if summary is not None:
                    summary.add_failure(result.store, result.collection, result.error)
                code = EXIT_ERROR
                continue
            code = max(code, _published(result, config.job.fail_on, config.output.formats, summary, one))
    if one:
        return code
    output_dir = config.resolve(config.output.dir)
    assert output_dir is not None
    paths = [str(path) for path in publisher.write_summary(output_dir)]
    say("store summary written to " + " and ".join(map(escape, paths)), "store_summary_written", paths=paths)
    if summary is None:
        header, rows = publisher.store_summary.table()
        title = "vdbguard: collections, riskiest first (records with findings of each kind; sensitivity: share of "
        title += "records with a high or critical finding)"
        print_table(header, [[escape(cell) for cell in row] for row in rows], title=title)
    return code


def _published(
    result: CollectionResult,
    fail_on: str,
    formats: Iterable[str],
    summary: JsonSummary | None,
    one: bool,
) -> int:
    """One finished collection (published): where its reports are, its coverage and its table (or --json's entry)
    told. ``one``: the scan of one collection, whose reports are --out's own. Its exit code."""
    from vdbguard.reports.summary import calibration_line, coverage_line, report_paths

    report, paths = result.report, report_paths(result.out, list(formats))
    if one:
        say_reports_written(paths)
    else:
        where = f"{result.store}/{result.collection}"
        say(f"{escape(where)}: reports in {escape(str(result.out))}", "reports_written", paths=paths)
    if report.coverage is not None:
        say(escape(coverage_line(report.coverage)), "coverage", **report.coverage.model_dump())
    if report.calibration is not None:
        say(calibration_line(report.calibration))
    if report.verdict is not None and report.verdict.name != "owner":
        say(f"judged by the {report.verdict.name} verdict: {escape(report.verdict.reason)}", "verdict")
    code = exit_code((finding.severity for finding in report.iter_findings()), fail_on)
    if summary is None:
        print_summary(report)
    else:
        summary.add(report, code, paths, None if one else result.store)
    return code


def _say_expired(expired: Iterable[Suppression]) -> None:
    for suppression in expired:
        say(
            f"suppression of {escape(suppression.record_id)} ({suppression.pii_type or 'every type'}) by "
            f"{escape(suppression.owner)} expired on {suppression.expires}: its findings are reported again",
            "suppression_expired",
        )
