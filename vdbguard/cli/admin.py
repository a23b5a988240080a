"""Admin commands: job files (`config`) and what is installed (`attacks`, `transforms`, `connectors list`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import click
from rich.markup import escape

from vdbguard.cli.common import friendly_errors, print_table, progress, say, setting_option
from vdbguard.cli.help import Command, Group
from vdbguard.config import AttackSettings, JobSettings
from vdbguard.embedders import DEFAULT_EMBEDDER


@click.group(cls=Group)
def config() -> None:
    """Scan job files (vdbguard.toml): write a starter, check one, print the JSON Schema.

    Examples:

    \b
      vdbguard config init && vdbguard config validate vdbguard.toml
      vdbguard config schema > job-schema.json
    """


@config.command("init")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False), default=Path("vdbguard.toml"))
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
def config_init(file: Path, force: bool) -> None:
    """Write a commented starter job file (default ./vdbguard.toml).

    Examples:

    \b
      vdbguard config init
      vdbguard config init jobs/nightly.toml --force
    """
    from vdbguard.config import STARTER

    if file.exists() and not force:
        raise click.UsageError(f"{file} exists; pass --force to overwrite it")
    file.write_text(STARTER, encoding="utf-8")
    say(f"wrote {escape(str(file))}: edit {escape('[[stores]]')}, then `vdbguard config validate {escape(str(file))}`")


@config.command("validate")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@friendly_errors
def config_validate(file: Path) -> None:
    """Check a job file: every problem with where it is, every name a scan would load (connector, fast and deep
    attacks, formats) with the closest one for a typo; exit 2 if there is any.

    Examples:

    \b
      vdbguard config validate vdbguard.toml
      vdbguard --log-format json config validate vdbguard.toml
    """
    from vdbguard.config import load_job

    job = load_job(file)
    collections = sum(len(store.collections) for store in job.stores)
    say(f"{file} is valid: {len(job.stores)} store(s), {collections} collection(s)")
    if missing := job.unset_credentials():
        say("not set in this environment (the scan will need them): " + ", ".join(missing))


@config.command("schema")
def config_schema() -> None:
    """Print the job file's JSON Schema (also in docs/job-schema.json).

    Examples:

    \b
      vdbguard config schema
      vdbguard config schema > job-schema.json
    """
    from vdbguard.config import job_schema

    click.echo(json.dumps(job_schema(), indent=2))


def _transform_rows() -> Iterable[Sequence[str]]:
    from vdbguard.transforms import needs_of, transform_classes

    for name, cls in sorted(transform_classes().items()):
        needs = needs_of(cls)
        swept = ", ".join(f"{s:g}" for s in cls.default_strengths)
        yield name, ", ".join(needs) or "-", f"{cls.default_strength:g}", cls.strength_meaning, swept, cls.description


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


def _plugin_list(
    kind: str, about: str, columns: Sequence[str], rows: Callable[[], Iterable[Sequence[str]]]
) -> click.Group:
    """``vdbguard KIND list``: one table row per installed plugin of that kind."""
    examples = f"Examples:\n\n\b\n  vdbguard {kind} list\n  COLUMNS=200 vdbguard {kind} list"
    group = Group(kind, help=f"{about}\n\n{examples}")
    group.command("list", help=f"Show every installed {kind[:-1]}.\n\n{examples}")(lambda: print_table(columns, rows()))
    return group


transforms = _plugin_list(
    "transforms",
    "Write-path defenses.",
    ("transform", "needs", "default strength", "strength means", "swept strengths", "what it does"),
    _transform_rows,
)
attacks = _plugin_list(
    "attacks",
    "Attack plugins.",
    ("attack", "kind", f"token F1 on {DEFAULT_EMBEDDER}, measured", "what it does"),
    _attack_rows,
)
connectors = _plugin_list(
    "connectors", "Store connectors.", ("connector", "extra", "installed", "install with"), _connector_rows
)


@click.command(cls=Command)
@setting_option(JobSettings, "embedder", help="Model the scheduled scans will name with --embedder.")
@setting_option(AttackSettings, "fast", help="Attack the scans will run (repeatable).")
@setting_option(JobSettings, "profile", everyday=True)
@friendly_errors
def warmup(embedder: str, fast: tuple[str, ...], profile: str) -> None:
    """Train ahead what a scan with these settings would train on its first run, so a scheduled job does not.

    The packaged MiniLM ships trained: it has nothing to do. Another model trains once (minutes to an hour on a
    CPU) and is cached for every later scan on this machine.

    Examples:

    \b
      vdbguard warmup --embedder ./models/my-sentence-transformer
      VDBGUARD_CACHE_DIR=/var/cache/vdbguard vdbguard warmup --embedder all-mpnet-base-v2
    """
    from vdbguard.embedders import Embedder
    from vdbguard.scan.run import warm_up

    with progress() as bars:
        folders = warm_up(Embedder(embedder), fast, profile, progress=bars)
    say("trained models for this embedder: " + ", ".join(escape(str(folder)) for folder in folders), "warmed_up")
