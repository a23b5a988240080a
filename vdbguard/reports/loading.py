"""Read a report.json back, for commands that re-render or compare reports."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from vdbguard.errors import VdbguardError
from vdbguard.reports.schema import SCHEMA_VERSION, Report

_HINT = "pass the report.json that `vdbguard scan` wrote into its output folder"
SQLITE_HEADER = b"SQLite format 3\0"


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` is an SQLite database (a scan state file), from its first 16 bytes only."""
    with path.open("rb") as handle:
        return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER


def _major(version: str) -> int | None:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _what_it_is(path: Path, head: bytes) -> str | None:
    """Name a file that is not JSON by its first bytes or its suffix, so the error can say what was passed."""
    text = head.lstrip().lower()
    if head.startswith(SQLITE_HEADER):
        return "an SQLite database (a scan job's state file?)"
    if text.startswith((b"<!doctype html", b"<html")):
        return "an HTML page (report.html?)"
    if head.startswith((b"\x1f\x8b", b"PK\x03\x04")):
        return "a compressed archive"
    return {
        ".md": "a Markdown file (report.md?)",
        ".csv": "a CSV file (report.csv?)",
        ".yaml": "a YAML file (a job file?)",
        ".yml": "a YAML file (a job file?)",
    }.get(path.suffix.lower())


def load_report(path: Path) -> Report:
    """The Report in ``path``; a file that is not a vdbguard report of a schema this version reads is refused."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise VdbguardError(f"no report at {path}", _HINT) from None
    except IsADirectoryError:
        raise VdbguardError(f"{path} is a folder", f"pass {path / 'report.json'}") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        kind = _what_it_is(path, raw[:64]) or "not JSON"
        raise VdbguardError(f"{path} is {kind}, not a vdbguard report", _HINT) from None
    if not isinstance(data, dict) or "schema_version" not in data or "findings" not in data:
        kind = "a SARIF log (report.sarif?)" if isinstance(data, dict) and "runs" in data else "JSON"
        raise VdbguardError(f"{path} is {kind} but not a vdbguard report (no schema_version and findings)", _HINT)
    version = str(data["schema_version"])
    major, ours = _major(version), _major(SCHEMA_VERSION)
    if major is None:
        raise VdbguardError(f"{path} has an unreadable report schema version {version!r}", _HINT)
    if major > (ours or 0):
        raise VdbguardError(
            f"{path} uses report schema {version}, newer than this vdbguard reads ({SCHEMA_VERSION})",
            "upgrade vdbguard (pip install -U vdbguard) to read it",
        )
    if major < (ours or 0):
        raise VdbguardError(
            f"{path} uses report schema {version}, older than this vdbguard reads ({SCHEMA_VERSION})",
            "re-run the scan with this version to get a current report",
        )
    try:
        return Report.model_validate_json(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in exc.errors()[:3]
        )
        more = f" (and {exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
        raise VdbguardError(
            f"{path} looks like a vdbguard report (schema {version}) but does not validate: {problems}{more}", _HINT
        ) from None
