"""What every command shares: messages on stderr, one clear error and exit 2 instead of a traceback, exit codes,
tables, the flags that name a store and the report formats, and options made from a settings model's fields."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import wraps
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar, Union, get_args, get_origin

import click
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from vdbguard.cli.help import F, Option, advanced
from vdbguard.config import Declared, Flag
from vdbguard.credentials import remember_settings, safe_text
from vdbguard.errors import VdbguardError, stop_if_asked
from vdbguard.progress import PlainProgress, RichProgress, json_event, progress_for
from vdbguard.reports import DEFAULT_FORMATS
from vdbguard.reports.schema import Report, Severity

if TYPE_CHECKING:
    from vdbguard.config import StoreSettings
    from vdbguard.reports.summary import JsonSummary

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
M = TypeVar("M", bound=BaseModel)
console = Console(stderr=True, soft_wrap=True)  # a message is one line, whatever the terminal: paths stay whole


def meta() -> dict[str, Any]:
    ctx = click.get_current_context(silent=True)
    return ctx.meta if ctx is not None else {}


def _json_logs() -> bool:
    return meta().get("log_format") == "json"


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


def exit_with(code: int, summary: JsonSummary | None, error: VdbguardError | None = None) -> NoReturn:
    """Exit with ``code``, --json's summary printed first on the stdout kept for it."""
    if summary is not None:
        click.echo(summary.render(code, error), file=meta()["json_stdout"])
    sys.exit(code)


def _failed(error: VdbguardError, unexpected: bool = False) -> NoReturn:
    """Say what failed, give --json its summary (exit code 2 and the error) and exit 2."""
    say_error(error.message, error.hint, unexpected)
    exit_with(EXIT_ERROR, meta().get("json_summary"), error)


def friendly_errors(command: F) -> F:
    """Turn vdbguard errors into one clear line and exit code 2, never a traceback."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug or an unmapped store error: one line, credentials scrubbed
            stop_if_asked()
            if isinstance(exc, VdbguardError):
                _failed(exc)
            hint = "re-run with -v; if it persists, report it with this message"
            _failed(VdbguardError(f"{type(exc).__name__}: {exc}", hint), unexpected=True)

    return wrapper  # type: ignore[return-value]


def options(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Several ``click.option`` decorators as one, listed in --help in the order given."""

    def apply(command: F) -> F:
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return apply


def setting_option(
    section: type[BaseModel], field: str, everyday: bool | None = None, **settings: Any
) -> Callable[[F], F]:
    """An option that sets one field of a settings model, its parameter named as the field: its type, bounds,
    choices, default and help are the field's, and its ``Flag`` (if any) says how it reads on the command line
    (advanced unless ``everyday`` or a ``Flag`` says otherwise); ``settings`` add to them."""
    info = section.model_fields[field]
    marker = next((m for m in info.metadata if isinstance(m, Flag)), Flag(advanced=True))
    kind = info.annotation
    if get_origin(kind) in (Union, UnionType):
        kind = next(arg for arg in get_args(kind) if arg is not type(None))
    multiple = get_origin(kind) is list
    kind = get_args(kind)[0] if multiple else kind
    bounds = {type(m).__name__: getattr(m, type(m).__name__.lower(), None) for m in info.metadata}  # Ge(ge=1)...
    limits = {"min": bounds.get("Ge", bounds.get("Gt")), "max": bounds.get("Le"), "min_open": "Gt" in bounds}
    if get_origin(kind) is Literal:
        click_type: Any = click.Choice(get_args(kind))
    elif kind in (int, float) and bounds.keys() & {"Ge", "Gt", "Le"}:
        click_type = click.IntRange(limits["min"], limits["max"]) if kind is int else click.FloatRange(**limits)
    elif kind in (int, float):
        click_type = kind
    elif kind is Path:
        click_type = click.Path(
            path_type=Path, dir_okay=marker.path != "file", file_okay=marker.path != "dir", exists=marker.exists
        )
    else:
        click_type = None
    required = info.is_required()
    declared = isinstance(info.default_factory, Declared)
    default = None if required else info.default_factory if declared else info.get_default(call_default_factory=True)
    options = {"type": click_type, "multiple": multiple, "is_flag": kind is bool, "default": default}
    options["show_default"] = declared or (default is not None and default is not False and default != [])
    options.update(help=marker.help or info.description, required=required, metavar=marker.metavar)
    advanced = marker.advanced if everyday is None else not everyday
    name = marker.name or "--" + field.replace("_", "-")
    declarations = [f"{name}/{marker.off}" if marker.off else name, field]
    return click.option(*declarations, cls=Option, advanced=advanced, help_from=marker.help_from, **options | settings)


def settings_options(model: type[BaseModel]) -> Callable[[F], F]:
    """Every field of ``model`` as an option (``setting_option``), the required ones first; the command gets them as
    one validated ``settings``, a problem named by its flag."""

    def apply(command: F) -> F:
        @wraps(command)
        def with_settings(*args: Any, **kwargs: Any) -> Any:
            values = {field: kwargs.pop(field) for field in model.model_fields}
            return command(*args, settings=validated(model, values), **kwargs)

        fields = sorted(model.model_fields, key=lambda field: not model.model_fields[field].is_required())
        return options(*(setting_option(model, field) for field in fields))(with_settings)  # type: ignore[arg-type]

    return apply


def validated(model: type[M], values: Mapping[str, Any]) -> M:
    """``model`` of the values the flags gave, each problem named by the flag that set it."""
    try:
        return model(**values)
    except ValidationError as exc:
        problems = "\n".join(map(_named_by_flag, exc.errors()))
        raise click.UsageError(f"the flags have problems:\n{problems}") from exc


def _named_by_flag(error: Any) -> str:
    """A problem of the settings the flags describe, named by the flag that set it."""
    message = error["msg"].removeprefix("Value error, ")
    if not error["loc"]:
        return f"  {message}"
    field = str(error["loc"][-1])
    flags = {param.name: param.opts[0] for param in click.get_current_context().command.params}
    return f"  {flags.get(field, field)}: {message}"


def exit_code(severities: Iterable[Severity], fail_on: str) -> int:
    """1 when a finding is at least as severe as --fail-on ("never": 0 whatever was found), else 0."""
    if fail_on == "never":
        return EXIT_CLEAN
    threshold = Severity(fail_on).rank
    return EXIT_FINDINGS if any(severity.rank >= threshold for severity in severities) else EXIT_CLEAN


def print_table(
    columns: Sequence[str], rows: Iterable[Sequence[str]], title: str | None = None, caption: str | None = None
) -> None:
    """A table whose columns after the first are right-aligned when they hold numbers."""
    rows = [list(row) for row in rows]
    table = Table(title=title, caption=caption)
    for index, column in enumerate(columns):
        numbers = index > 0 and bool(rows) and all(row[index][:1].isdigit() for row in rows)
        table.add_column(column, overflow="fold", justify="right" if numbers else "left")  # a long id wraps, whole
    for row in rows:
        table.add_row(*row)
    show_table(table)


def show_table(table: Table) -> None:
    """A table on stdout: at the terminal's width on a terminal, and whole where stdout is a pipe, a file or a job's
    log, however narrow ``COLUMNS`` says the terminal is (nothing is cut off where nobody can widen the window)."""
    out = Console()
    if not out.is_terminal:
        unbounded = out.options.update_width(1_000_000)
        out = Console(width=max(out.width, out.measure(table, options=unbounded).maximum))
    out.print(table)


def print_summary(report: Report) -> None:
    s, target = report.summary, report.target
    rows = [
        ("scanned", s.records_scanned),
        ("flagged", s.records_flagged),
        ("skipped (bad records)", s.records_skipped),
    ]
    rows += [(f"  {severity.value}", s.by_severity.get(severity.value, 0)) for severity in reversed(Severity)]
    rows += [(f"  {pii_type}", count) for pii_type, count in sorted(s.by_pii_type.items())]
    print_table(
        ("", "records"),
        [(name, str(count)) for name, count in rows],
        f"vdbguard: {target.collection} ({target.connector})",
    )


def say_reports_written(paths: dict[str, str]) -> None:
    say("reports written to " + " and ".join(map(escape, paths.values())), "reports_written", paths=paths)


def write_json(out: Path, name: str, result: Any) -> Path:
    """``result`` as ``out/name``: every command's --out is a folder, and each writes its own file into it."""
    from vdbguard.cache import write_json_atomic

    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / name, result, indent=2)
    say(f"written to {escape(str(out / name))}")
    return out / name


def _formats(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    """The comma-separated formats, checked as a job file's are (each writer loads)."""
    from vdbguard.config import OutputSettings

    formats = list(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    try:
        return tuple(OutputSettings(formats=formats).formats)
    except ValidationError as exc:
        raise click.BadParameter(exc.errors()[0]["msg"].removeprefix("Value error, ")) from exc


def format_option(default: Sequence[str] = DEFAULT_FORMATS) -> Callable[[F], F]:
    return click.option(
        "--format",
        "formats",
        default=",".join(default),
        show_default=True,
        callback=_formats,
        help="Report formats, comma-separated (installed writers: json, md, html, csv, sarif and any plugin).",
    )


def out_option(what: str, name: str = "out", **settings: Any) -> Callable[[F], F]:
    """--out: always a folder, made if missing; ``what`` says what goes in it, ``name`` is its parameter's."""
    folder = click.Path(path_type=Path, file_okay=False)
    return click.option("--out", name, type=folder, help=f"Folder for {what}.", show_default=True, **settings)


def _remember_tls(ctx: click.Context, param: click.Parameter, value: Path | bool | None) -> None:
    """--ca-cert and --insecure become the connector's ``tls_verify`` (a CA file, or False)."""
    if not value:
        return
    if "tls_verify" in ctx.meta:
        raise click.UsageError("give --ca-cert or --insecure, not both")
    ctx.meta["tls_verify"] = str(value) if isinstance(value, Path) else False


def store_options(command: F, required: bool = True) -> F:
    """The flags that say which store and collection to open, shared by every command that reads one. Required,
    the command gets them as ``store``, the store a job would name for the one ``collection``; optional (`scan`,
    whose job file may name its stores instead), as they are."""

    @wraps(command)
    def with_store(*args: Any, connector_name: str, path: Path | None, url: str | None, **kwargs: Any) -> Any:
        store = flags_store(connector_name, [kwargs["collection"]], path, url, kwargs.pop("option"))
        return command(*args, store=store, **kwargs)

    return options(
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
        advanced(
            "--ca-cert",
            type=click.Path(path_type=Path, dir_okay=False, exists=True),
            expose_value=False,
            callback=_remember_tls,
            help="PEM file of the CA that signed the server's certificate (a private CA); verification stays on.",
        ),
        advanced(
            "--insecure",
            is_flag=True,
            expose_value=False,
            callback=_remember_tls,
            help="Do not verify the server's TLS certificate (anyone on the path can read the vectors).",
        ),
    )(with_store if required else command)  # type: ignore[arg-type]


def progress() -> RichProgress | PlainProgress:
    """The progress display --log-format and stderr call for: bars, plain lines or JSON lines."""
    return progress_for(console, click.get_current_context().meta.get("log_format", "text"))


def _connector_options(option: tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a VALUE that parses as JSON (``50051``, ``true``, ``["a"]``) is taken as such."""
    settings: dict[str, Any] = {}
    for item in option:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--option")
        try:
            settings[key] = json.loads(value)
        except json.JSONDecodeError:
            settings[key] = value
    return settings


def flags_store(
    name: str, collections: list[str], path: Path | None, url: str | None, option: tuple[str, ...]
) -> StoreSettings:
    """The store the flags name, as a job names its stores: --option pairs (and TLS) its options, secrets remembered
    to mask."""
    from vdbguard.config import StoreSettings

    if (path is None) == (url is None):
        raise click.UsageError("give exactly one of --path (embedded store) or --url (server)")
    options = _connector_options(option)
    remember_settings({**options, **({"path": path} if path is not None else {"url": url})})
    tls_verify = click.get_current_context().meta.get("tls_verify")
    if tls_verify is not None:
        if url is None:
            raise click.UsageError("--ca-cert and --insecure are for a server (--url), not an embedded store")
        options["tls_verify"] = tls_verify
    return StoreSettings.from_flags(name, path, url, options, collections)
