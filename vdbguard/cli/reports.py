"""`vdbguard demo` (a scan whose truth is known) and `vdbguard report` (reports again, without a scan)."""

from __future__ import annotations

from pathlib import Path

import click

from vdbguard.cli.common import (
    format_option,
    friendly_errors,
    out_option,
    print_summary,
    print_table,
    progress,
    say_reports_written,
    setting_option,
)
from vdbguard.cli.help import Command
from vdbguard.config import JobSettings


@click.command(cls=Command)
@out_option("the demo store, its reports and its score", default=Path("demo-out"))
@click.option(
    "--records",
    type=click.IntRange(20, 100_000),
    default=2000,
    show_default=True,
    help="Records in the demo store, half of them with PII.",
)
@setting_option(JobSettings, "profile", everyday=True)
@format_option(("json", "md", "html", "sarif", "csv"))
@friendly_errors
def demo(out: Path, records: int, profile: str, formats: tuple[str, ...]) -> None:
    """Build an embedded Chroma store with known PII, scan it, and score the scan against the truth.

    A showcase: it exits 0 whatever it finds (1 and 2 are for real scans and errors).

    Examples:

    \b
      vdbguard demo
      vdbguard demo --out demo-out --records 200 --profile small
      vdbguard demo --format html && open demo-out/report.html
    """
    from vdbguard.demo import run_demo
    from vdbguard.reports.summary import report_paths

    with progress() as bars:
        report, metrics = run_demo(out, records, profile, formats, bars)
    say_reports_written(report_paths(out, formats))
    print_summary(report)
    vectors, text = metrics
    rows = [
        ("with PII", str(vectors.pii_records), *(f"{m.flagged_pii} ({m.recall:.1%} recall)" for m in metrics)),
        ("clean", str(vectors.clean_records), *(f"{m.flagged_clean} ({m.false_positive_rate:.1%})" for m in metrics)),
    ]
    title = "Demo scored against ground truth (the scan never saw it)"
    caption = f"precision {vectors.precision:.1%} by the vectors, {text.precision:.1%} by the stored text"
    print_table(("", "records", "flagged by the vectors", "by the stored text"), rows, title, caption)


@click.command(cls=Command)
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@out_option("the reports (one folder per collection when SOURCE holds several)", default=Path("."))
@format_option()
@friendly_errors
def report(source: Path, out: Path, formats: tuple[str, ...]) -> None:
    """Re-render a report.json, or every collection's last report in a scan state file, without re-scanning.

    Examples:

    \b
      vdbguard report scan-out/report.json --format html --out scan-out
      vdbguard report vdbguard-state.sqlite --format html,sarif --out again/
    """
    from vdbguard.reports import write_reports
    from vdbguard.scan.state import stored_reports

    for one, folder in stored_reports(source, out):
        say_reports_written(dict(zip(formats, map(str, write_reports(one, folder, formats)), strict=True)))
