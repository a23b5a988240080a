"""The ``vdbguard`` command. Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or connection error.

Each command lives in the module of its section; ``SECTIONS`` lists them as `vdbguard --help` shows them, so a
new command is one entry there.
"""

from __future__ import annotations

import gc
import signal
from typing import Any

import click

from vdbguard.cli.admin import attacks, config, connectors, transforms, warmup
from vdbguard.cli.common import exit_with, say_error
from vdbguard.cli.help import Group
from vdbguard.cli.measure import audit, calibrate, evaluate_attacks, evaluate_defense, frontier
from vdbguard.cli.protect import protect, subject
from vdbguard.cli.reports import demo, report
from vdbguard.cli.scan import scan
from vdbguard.errors import VdbguardError, stop
from vdbguard.memory import fix_malloc_thresholds
from vdbguard.progress import LOG_FORMATS, configure_logging

__all__ = ["main", "run"]

SECTIONS: dict[str, tuple[click.Command, ...]] = {
    "Scan": (scan, demo, report, warmup),
    "Protect": (protect, subject),
    "Measure": (audit, evaluate_attacks, evaluate_defense, calibrate, frontier),
    "Admin": (config, attacks, transforms, connectors),
}


class _Commands(Group):
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
            exit_with(exc.exit_code, summary, error)


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
    """Find privacy leaks in vector databases: attack the stored vectors, report what leaks.

    Examples:

    \b
      vdbguard demo
      vdbguard scan --connector chroma --path ./chroma-data --collection tickets --out scan-out
      vdbguard scan --config vdbguard.toml --json > vdbguard-summary.json
    """
    ctx.meta["log_format"] = log_format
    ctx.call_on_close(configure_logging(log_format, verbose))


for _section, _commands in SECTIONS.items():
    for _command in _commands:
        main.add_command(_command, section=_section)


def run() -> None:
    """The console script. A run stopped by SIGTERM (a job runner's timeout, a pod's deletion) unwinds as one
    stopped by Ctrl-C does: its private copy of the store is deleted, its state file resumes, and it exits 143."""
    signal.signal(signal.SIGTERM, stop)
    fix_malloc_thresholds()
    try:
        main()
    finally:
        # what a command loaded lives until the process ends: the interpreter's last collections need not walk it
        # (with torch, spaCy and scikit-learn loaded they took most of a second after every scan)
        gc.freeze()
