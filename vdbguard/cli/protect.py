"""Protecting commands: `protect` copies a collection through a transform; `subject` finds and erases the
records about one person."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from vdbguard.cli.common import (
    console,
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
from vdbguard.cli.help import Command, Group, advanced
from vdbguard.credentials import redact_location
from vdbguard.embedders import DEFAULT_EMBEDDER, Embedder


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
@click.option("--strength", type=float, required=True, help="The transform's strength (its meaning: transforms list).")
@click.option("--state", type=click.Path(path_type=Path), help="Checkpoint file: an interrupted copy resumes.")
@click.option(
    "--fit-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="For transforms that need a fit: load it from this .npz when it exists, else fit and save it here "
    "(default: beside --state). Reuse it to protect more data, or query, in the same space.",
)
@click.option("--in-place", is_flag=True, help="Overwrite --collection itself (needs --yes).")
@click.option("--yes", is_flag=True, help="Confirm --in-place.")
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
@advanced(
    "--concept",
    default="PERSON",
    show_default=True,
    help="For concept transforms (leace, sparse): the PII type or attribute to protect, learned from "
    "vdbguard's labelled corpus embedded with --embedder.",
)
@advanced(
    "--batch-size", type=click.IntRange(1, 10_000), default=256, show_default=True, help="Records copied at a time."
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

    Examples:

    \b
      vdbguard protect --connector chroma --path ./data --collection tickets --to-collection tickets_safe \\
        --transform redact --strength 0.4 --state protect.json
      vdbguard protect --connector qdrant --url http://127.0.0.1:6333 --collection tickets \\
        --to-collection tickets_noisy --transform gaussian --strength 0.02
    """
    from vdbguard.protect import leak_counts, protect_collection
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
                stored_text=stored_text,  # type: ignore[arg-type]
            )
    say(f"copied {result.copied} records through {transform_name} (strength {strength}) to {to_collection}")
    for problem in result.problems[:10]:
        say(f"  skipped {problem}")
    if scan_after and not in_place:
        counts = []
        for name in (collection, to_collection):
            with open_connector(connector_name, name, path, url, option) as connector, progress() as bars:
                location = redact_location(str(path or url))
                counts.append(leak_counts(connector, connector_name, location, Embedder(embedder), bars))
        keys = sorted(set(counts[0]) | set(counts[1]))
        rows = [(f"{key[0]}: {key[1]}", str(counts[0][key]), str(counts[1][key])) for key in keys]
        print_table(["records flagged", collection, to_collection], rows, title="leaks before and after")


subject_options = options(
    store_options,
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
