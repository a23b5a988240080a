"""Protecting commands: `protect` copies a collection through a transform; `subject` finds and erases the
records about one person."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from vdbguard.cli.common import (
    exit_code,
    friendly_errors,
    print_table,
    progress,
    say,
    settings_options,
    store_options,
    write_json,
)
from vdbguard.cli.help import Command, Group
from vdbguard.config import ProtectJob, StoreSettings, SubjectSettings

if TYPE_CHECKING:
    from vdbguard.connectors.base import Connector
    from vdbguard.subject import Subject, SubjectSearch
from vdbguard.credentials import redact_location


@click.command(cls=Command)
@store_options
@settings_options(ProtectJob)
@friendly_errors
def protect(store: StoreSettings, collection: str, settings: ProtectJob) -> None:
    """Copy a collection through a transform into a new collection (never in place without --in-place --yes).

    redact (and chains that start with it, redact+gaussian) reads each record's stored text, redacts it and embeds
    it again with --embedder: the one defense that removes a name from a vector, for collections that exist.
    Every record written is marked with the transform in its payload (vdbguard_protected), so a resumed or repeated
    run never transforms a record twice. Exit code: 0, or 1 when the scan after still finds a leak at least as
    severe as --fail-on; 2 on an error.

    Examples:

    \b
      vdbguard protect --connector chroma --path ./data --collection tickets --to-collection tickets_safe \\
        --transform redact --state protect.json
      vdbguard protect --connector qdrant --url http://127.0.0.1:6333 --collection tickets \\
        --to-collection tickets_noisy --transform gaussian --strength 0.02
    """
    from vdbguard.protect import before_and_after, run_protect

    with progress() as bars:
        run = run_protect(store, collection, settings, bars)
    say(
        escape(
            run.result.summary(f"{settings.transform} (strength {run.transform.strength:g})", settings.to_collection)
        )
    )
    for problem in run.result.problems[:10]:
        say(f"  skipped {escape(problem)}")
    if run.before is None or run.after is None:
        return
    at_least, rows, worst = before_and_after(run.before, run.after, settings.fail_on)
    severe = f"{at_least.value} or worse"
    header = ["finding: type", collection, settings.to_collection, f"{severe}, before", f"{severe}, after"]
    print_table(header, rows, title="records flagged before and after protection")
    if settings.fail_on != "never":
        say(f"after protection: {worst} findings at least {settings.fail_on} (--fail-on {settings.fail_on})")
    sys.exit(exit_code((finding.severity for finding in run.after.iter_findings()), settings.fail_on))


@contextlib.contextmanager
def _subject_search(
    store: StoreSettings, collection: str, settings: SubjectSettings
) -> Iterator[tuple[Connector, Subject, SubjectSearch]]:
    """Search the store for the subject and print (and write) what was found; yields (connector, subject, search)
    with the store still open."""
    from vdbguard.subject import search_subject

    with contextlib.ExitStack() as stack:
        with progress() as bars:  # the attacks' training; closed before the tables print
            found = search_subject(store, collection, settings, bars)
            connector, subject, search = stack.enter_context(found)
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
        if settings.out is not None:
            write_json(settings.out, "subject.json", search.to_json())
        yield connector, subject, search


@click.group(cls=Group)
def subject() -> None:
    """Data-subject requests: find the records about a person (payload, membership and inversion evidence),
    and erase them with an audit log.

    Examples:

    \b
      vdbguard subject find --connector chroma --path ./data --collection tickets --name 'Ana Souza'
      vdbguard subject erase --connector chroma --path ./data --collection tickets --email ana@example.com \\
        --audit-log erasures.jsonl --yes
    """


@subject.command("find")
@store_options
@settings_options(SubjectSettings)
@friendly_errors
def subject_find(store: StoreSettings, collection: str, settings: SubjectSettings) -> None:
    """List the records that relate to a person, each with its evidence (reads only).

    Examples:

    \b
      vdbguard subject find --connector chroma --path ./data --collection tickets --name 'Ana Souza'
      vdbguard subject find --connector qdrant --url http://127.0.0.1:6333 --collection tickets \\
        --email ana@example.com --phone '+55 11 5555 0101' --out subject-out
    """
    with _subject_search(store, collection, settings):
        pass


@subject.command("erase")
@store_options
@settings_options(SubjectSettings)
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
def subject_erase(
    store: StoreSettings, collection: str, audit_log: Path, actor: str | None, yes: bool, settings: SubjectSettings
) -> None:
    """Delete the records `subject find` lists for a person: a dry run unless --yes; a deletion is logged.

    Examples:

    \b
      vdbguard subject erase --connector chroma --path ./data --collection tickets --name 'Ana Souza' \\
        --audit-log erasures.jsonl
      vdbguard subject erase --connector chroma --path ./data --collection tickets --name 'Ana Souza' \\
        --audit-log erasures.jsonl --actor privacy@example.com --yes
    """
    from vdbguard.subject import erase_subject

    with _subject_search(store, collection, settings) as (connector, person, search):
        if not yes:
            say(f"dry run: {len(search.records)} records would be deleted; re-run with --yes to delete them")
            return
        location = redact_location(str(store.path or store.url))
        deleted = erase_subject(connector, search, person, audit_log, location, actor=actor)
    say(f"deleted {len(deleted)} records; logged to {audit_log}")
