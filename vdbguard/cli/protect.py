"""Protecting commands: `protect` copies a collection through a transform; `subject` finds and erases the
records about one person."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import click
from rich.markup import escape

from vdbguard.cli.common import (
    console,
    default_option,
    embedder_option,
    exit_code,
    fail_on_option,
    flags_store,
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
from vdbguard.cli.help import Command, Group
from vdbguard.config import JobConfig, JobSettings, OutputSettings, StoredText
from vdbguard.credentials import redact_location
from vdbguard.embedders import Embedder
from vdbguard.reports.schema import Report, Severity


class _TransformOption(click.Option):
    """``--transform`` whose help names the installed transforms that need a fit, labels or a key, read from
    the classes only when help is shown (so every other command skips loading them)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from vdbguard.transforms import needs_help

        self.help = f"See `vdbguard transforms list`. {needs_help()}"
        return super().get_help_record(ctx)


@click.command(cls=Command)
@store_options
@click.option("--to-collection", required=True, help="Collection to write the protected copy to.")
@click.option("--transform", "transform_name", required=True, cls=_TransformOption, help="See `transforms list`.")
@click.option(
    "--strength",
    type=float,
    help="The transform's strength; default its own (redact 0.4; each one's default and meaning: transforms list).",
)
@click.option("--state", type=click.Path(path_type=Path), help="Checkpoint file: an interrupted copy resumes.")
@click.option(
    "--fit-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="For transforms that need a fit: load it from this .npz when it exists, else fit and save it here "
    "(default: beside --state). Reuse it to protect more data, or query, in the same space.",
)
@click.option("--in-place", is_flag=True, help="Overwrite --collection itself (needs --yes).")
@click.option("--yes", is_flag=True, help="Confirm --in-place.")
@embedder_option(
    "Model that made the vectors: redact embeds with it; the scans take 'auto' and 'store' too (scan --help)."
)
@default_option(
    "vdbguard.protect:protect_collection",
    "--payload",
    "With redact: what the copy stores beside its vectors: the text and payload redacted, kept as they were, or the "
    "text dropped.",
    name="stored_text",
    type=click.Choice(get_args(StoredText)),
)
@click.option(
    "--scan/--no-scan",
    "scan_after",
    default=True,
    show_default=True,
    help="Scan the collection before and the protected one after (a default scan each) and print the records "
    "flagged by type, before and after; the exit code follows --fail-on on the scan after.",
)
@fail_on_option
@out_option("the scans' reports, before/ and after/ (report.json and report.md each)")
@default_option(
    "vdbguard.transforms.concepts:corpus_concept_set",
    "--concept",
    "For concept transforms (leace, sparse): the PII type or attribute to protect, learned from vdbguard's labelled "
    "corpus embedded with --embedder.",
    everyday=False,
    type=str,
)
@default_option(
    "vdbguard.protect:protect_collection",
    "--batch-size",
    "Records copied at a time.",
    everyday=False,
    type=click.IntRange(1, 10_000),
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
    strength: float | None,
    batch_size: int,
    state: Path | None,
    fit_file: Path | None,
    in_place: bool,
    yes: bool,
    concept: str,
    embedder: str,
    stored_text: StoredText,
    scan_after: bool,
    fail_on: str,
    out: Path | None,
) -> None:
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
    from vdbguard.protect import protect_collection
    from vdbguard.transforms.chain import build_transform
    from vdbguard.transforms.concepts import corpus_concept_set

    if (to_collection == collection) != in_place:
        raise click.UsageError("writing over the source collection needs --in-place (and --yes), and only then")
    if in_place and not yes:
        raise click.UsageError("--in-place rewrites every stored vector: add --yes to confirm")
    transform = build_transform(transform_name, strength)
    fit_on = None
    if transform.needs_labels and not (fit_file is not None and fit_file.exists()):  # a saved fit needs no corpus
        with console.status(f"Learning where {concept} lives in {embedder}'s vectors"):
            fit_on = corpus_concept_set(Embedder(embedder), concept)
    model = Embedder(embedder) if transform.text_side else None
    store = (connector_name, path, url, option)
    before = _leak_scan(store, collection, embedder, out and out / "before") if scan_after else None
    source = open_connector(connector_name, collection, path, url, option)
    target = source if in_place else open_connector(connector_name, to_collection, path, url, option)
    with source, target, progress() as bars:
        total = source.describe().count
        with bars.task(f"Protecting {collection} -> {to_collection}", total) as advance:
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
                stored_text=stored_text,
            )
    say(escape(result.summary(f"{transform_name} (strength {transform.strength:g})", to_collection)))
    for problem in result.problems[:10]:
        say(f"  skipped {escape(problem)}")
    if before is None:
        return
    after = _leak_scan(store, to_collection, embedder, out and out / "after")
    _print_before_and_after(before, after, collection, to_collection, fail_on)
    sys.exit(exit_code(after, fail_on))


def _leak_scan(
    store: tuple[str, Path | None, str | None, tuple[str, ...]], collection: str, embedder: str, out: Path | None
) -> Report:
    """A default scan of one collection of the store, for protect's before and after: the job `scan` runs for these
    flags, its reports into ``out`` (none kept without)."""
    import tempfile

    from vdbguard.scan.job import CollectionFailure, run_job

    connector_name, path, url, option = store
    with contextlib.ExitStack() as stack:
        folder = out or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vdbguard-protect-")))
        config = JobConfig(
            job=JobSettings(embedder=embedder),
            stores=[flags_store(connector_name, [collection], path, url, option)],
            output=OutputSettings(dir=folder),
        )
        with progress() as bars:
            (result,) = run_job(config, progress=bars, folders="none")  # run to its end: it stops its workers
    if isinstance(result, CollectionFailure):
        error = result.error
        error.hint = f"{error.hint}; or protect with --no-scan" if error.hint else "protect with --no-scan"
        raise error
    return result.report


def _print_before_and_after(before: Report, after: Report, collection: str, to_collection: str, fail_on: str) -> None:
    """Records flagged per kind and type, before and after: all of them, and those at least as severe as --fail-on
    (medium with --fail-on never)."""
    from vdbguard.protect import leak_counts

    at_least = Severity.MEDIUM if fail_on == "never" else Severity(fail_on)
    counts = [leak_counts(before), leak_counts(after), leak_counts(before, at_least), leak_counts(after, at_least)]
    keys = sorted(set(counts[0]) | set(counts[1]))
    rows = [(f"{kind}: {pii_type}", *(str(count[(kind, pii_type)]) for count in counts)) for kind, pii_type in keys]
    severe = f"{at_least.value} or worse"
    header = ["finding: type", collection, to_collection, f"{severe}, before", f"{severe}, after"]
    print_table(header, rows, title="records flagged before and after protection")
    if fail_on != "never":
        worst = sum(1 for finding in after.iter_findings() if finding.severity.rank >= at_least.rank)
        say(f"after protection: {worst} findings at least {fail_on} (--fail-on {fail_on})")


subject_options = options(
    store_options,
    click.option("--name", help="The person's full name, as it would be written in a record."),
    click.option("--email", help="The person's email address."),
    click.option("--phone", help="The person's phone number (matched on its digits)."),
    embedder_option(
        "Model that made the vectors ('auto' to identify it; 'store' for one that cannot run here: "
        "payload search only)."
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
    profile_option(),
    click.option("--show-pii", is_flag=True, help="Show matched values unmasked (handle the output as PII!)."),
    out_option("subject.json: the records found and their evidence"),
)


@contextlib.contextmanager
def _subject_search(flags: dict[str, Any]) -> Iterator[tuple[Any, Any, Any]]:
    """Open the store, search it for the subject and print (and write) what was found; yields (connector,
    subject, search) with the store still open."""
    from vdbguard.attacks.training import trained_attacks
    from vdbguard.scan import resolve_embedder
    from vdbguard.subject import Subject, find_subject

    subject = Subject(name=flags["name"], email=flags["email"], phone=flags["phone"])
    collection = flags["collection"]
    store = (flags["connector_name"], collection, flags["path"], flags["url"], flags["option"])
    with open_connector(*store) as connector:
        model = resolve_embedder(connector, flags["embedder"])
        names = [name for name in flags["attack_names"] if name != "none"]
        with progress() as bars:
            attacks = trained_attacks(model, names, profile=flags["profile"], progress=bars) if model and names else []
        search = find_subject(connector, subject, model, collection, attacks, mask_pii=not flags["show_pii"])
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
        if flags["out"] is not None:
            write_json(flags["out"], "subject.json", search.to_json())
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
@subject_options
@friendly_errors
def subject_find(**flags: Any) -> None:
    """List the records that relate to a person, each with its evidence (reads only).

    Examples:

    \b
      vdbguard subject find --connector chroma --path ./data --collection tickets --name 'Ana Souza'
      vdbguard subject find --connector qdrant --url http://127.0.0.1:6333 --collection tickets \\
        --email ana@example.com --phone '+55 11 5555 0101' --out subject-out
    """
    with _subject_search(flags):
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
def subject_erase(audit_log: Path, actor: str | None, yes: bool, **flags: Any) -> None:
    """Delete the records `subject find` lists for a person: a dry run unless --yes; a deletion is logged.

    Examples:

    \b
      vdbguard subject erase --connector chroma --path ./data --collection tickets --name 'Ana Souza' \\
        --audit-log erasures.jsonl
      vdbguard subject erase --connector chroma --path ./data --collection tickets --name 'Ana Souza' \\
        --audit-log erasures.jsonl --actor privacy@example.com --yes
    """
    from vdbguard.subject import erase_subject

    with _subject_search(flags) as (connector, person, search):
        if not yes:
            say(f"dry run: {len(search.records)} records would be deleted; re-run with --yes to delete them")
            return
        location = redact_location(str(flags["path"] or flags["url"]))
        deleted = erase_subject(connector, search, person, audit_log, location, actor=actor)
    say(f"deleted {len(deleted)} records; logged to {audit_log}")
