"""A state file's identity and damage: whose file it is, read before a byte is written; who holds it; and what to
say when SQLite cannot read or write it, or a row reads back damaged, without ever showing a row.

The file names itself in its header (``PRAGMA application_id`` "vdbg", ``user_version`` the schema): a file
vdbguard did not make (the audited store's own database, say) is refused before a byte of it or beside it is
written. Damage is named (``DamagedStateError``) on open by SQLite's quick check, or when a damaged row is read
back, and never shown: rows hold record ids and evidence.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar, cast

from vdbguard.errors import VdbguardError
from vdbguard.reports.loading import SQLITE_HEADER

STATE_SCHEMA = 2  # also the file's PRAGMA user_version
APPLICATION_ID = int.from_bytes(b"vdbg", "big")  # the file's PRAGMA application_id: header bytes 68-71
_HEADER_SIZE = 100  # SQLite's database header; user_version is at bytes 60-63, application_id at 68-71
_STATE_TABLES = frozenset({"meta", "runs", "records", "carried"})
_FIRST_STATE_TABLES = frozenset({"meta", "runs", "records"})  # an earlier vdbguard's state may lack ``carried``
# SQLite's result codes for a disk, file or lock that refuses (sqlite3.Error.sqlite_errorname); any other error
# met in a vdbguard state means its bytes are damaged
_STORAGE_FAILURES = (
    "SQLITE_IOERR",
    "SQLITE_FULL",
    "SQLITE_CANTOPEN",
    "SQLITE_READONLY",
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_PERM",
    "SQLITE_NOLFS",
    "SQLITE_PROTOCOL",
)
# what a damaged row raises when it is read back: SQLite's errors (a decode error quotes the row), a JSON or
# pydantic error (which quotes it too), or a value of another type than vdbguard wrote
DAMAGE = (sqlite3.DatabaseError, ValueError, TypeError)

Kind = Literal["new", "ours", "older"]
Method = TypeVar("Method", bound=Callable[..., Any])


class StateFileError(VdbguardError):
    """A state file vdbguard will not use as it is. Running the same command again meets the same file, so
    unlike other failures of a scan with --state it resumes nothing, however many records the run had committed."""


class NotAStateError(StateFileError):
    """The file is not one vdbguard made. It was read, never written: no byte, mode, lock or journal changed."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(
            f"{path} is not a vdbguard state file: {why}",
            "pass a new --state path and vdbguard makes that file (it never writes into a file it did not make); "
            "a JSON --state file from vdbguard < 0.2 cannot be reused: delete it",
        )
        self.path = path


class DamagedStateError(StateFileError):
    """The state is vdbguard's but its bytes are damaged. The message says what was found and in which table,
    never a row's content: rows hold record ids and evidence, which may be personal data."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(
            f"the state file {path} is damaged: {what}",
            "move it aside to start afresh (the next scan attacks every record again); the findings of its last "
            "finished scan are in the report files that scan wrote",
        )
        self.path = path


def identify(path: Path) -> Kind:
    """Whose file ``path`` is, found without writing a byte or making a file beside it, so that another program's
    database (the very store being audited, say) is refused before SQLite would switch it to WAL, add tables,
    or leave a lock or journal next to it. ``older``: a state an earlier vdbguard made, without the mark."""
    if not path.exists():
        return "new"
    if not path.is_file():  # a FIFO would block the read below
        raise NotAStateError(path, "it is a folder" if path.is_dir() else "it is not a regular file")
    with path.open("rb") as file:
        header = file.read(_HEADER_SIZE)
    if not header:
        return "new"
    if len(header) < _HEADER_SIZE or not header.startswith(SQLITE_HEADER):
        raise NotAStateError(path, "it is not an SQLite database")
    application_id = int.from_bytes(header[68:72], "big")
    if application_id == APPLICATION_ID:
        return "ours"
    if application_id:
        raise NotAStateError(path, f"it is another program's SQLite database (application id {application_id:#x})")
    if int.from_bytes(header[60:64], "big") == 0 and _holds_an_older_state(path):
        return "older"
    raise NotAStateError(path, "it is an SQLite database that vdbguard did not make")


def _holds_an_older_state(path: Path) -> bool:
    """Whether an SQLite file without vdbguard's application id is a state an earlier vdbguard made: only the
    state's tables, and the schema note in ``meta``. Opened immutable, SQLite takes no lock and makes no -wal or
    -shm file, and reads the main file alone: a state whose first run never closed keeps its tables in its WAL
    and is not recognised (the user then starts a new one)."""
    uri = f"{path.absolute().as_uri()}?mode=ro&immutable=1"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not _FIRST_STATE_TABLES <= tables <= _STATE_TABLES:
                return False
            return db.execute("SELECT 1 FROM meta WHERE key = 'schema'").fetchone() is not None
    except sqlite3.Error:
        return False


def create_owner_only(path: Path) -> None:
    """A new state (findings, record ids) is made 0600 before SQLite first writes it: SQLite gives its -wal
    and -shm files the database file's mode."""
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


def hold_lock(path: Path) -> int | None:
    """An exclusive lock on ``STATE.lock`` for as long as the state is open: two runs sharing one state would
    share its run and cursor. None where the OS has no ``flock`` (the lock is then the user's to keep)."""
    try:
        import fcntl
    except ImportError:
        return None
    descriptor = os.open(path.with_name(path.name + ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise VdbguardError(
            f"another vdbguard process is using the state file {path}",
            "wait for it to finish (the last scheduled run may still be going), or give this run its own --state",
        ) from None
    return descriptor


def make_owner_only(path: Path) -> None:
    """An older state, once it proved to be one, made owner-only too."""
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError, PermissionError):
            file.chmod(0o600)


def storage_error(path: Path, exc: sqlite3.Error | OSError) -> VdbguardError:
    """What the user can do when SQLite cannot read or write the state file (full disk, read-only folder, another
    run holding it); the file keeps its last committed batch either way."""
    if "locked" in str(exc):
        return VdbguardError(
            f"another process is writing the state file {path} ({exc})", "wait for that run, or pass another --state"
        )
    return VdbguardError(
        f"cannot write the state file {path} ({exc})",
        "free disk space or make its folder writable, then run the same command again: the file keeps every "
        "batch committed before the failure",
    )


def _is_storage_failure(exc: BaseException) -> bool:
    return isinstance(exc, OSError) or str(getattr(exc, "sqlite_errorname", "")).startswith(_STORAGE_FAILURES)


def _what_is_damaged(exc: BaseException, table: str | None) -> str:
    """What was wrong, in words that cannot carry a row's content: SQLite's own messages name pages, tables and
    columns only, but a decode, JSON or validation error quotes the value it could not read."""
    where = f" in the {table} table" if table else ""
    if isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorname", None):
        return f'SQLite reports "{exc}"{where}'
    if isinstance(exc, UnicodeError | sqlite3.OperationalError):  # Python's sqlite3 could not decode a text value
        return f"a value{where} is not UTF-8 text"
    if isinstance(exc, TypeError):
        return f"a value{where} is not of the type vdbguard wrote"
    return f"a row{where} does not read back as what vdbguard wrote"


def raise_named(path: Path, exc: BaseException, table: str | None = None) -> NoReturn:
    """Raise the named error for ``exc``, met reading or writing the state. A damaged row's own exception is
    dropped from the chain (``from None``): it quotes the row."""
    if isinstance(exc, sqlite3.ProgrammingError | sqlite3.InterfaceError):
        raise exc  # vdbguard's mistake, not the file's
    if _is_storage_failure(exc):
        raise storage_error(path, cast(sqlite3.Error | OSError, exc)) from exc
    raise DamagedStateError(path, _what_is_damaged(exc, table)) from None


def reads(table: str) -> Callable[[Method], Method]:
    """A method (of an object with a ``path``) that reads ``table`` raises a damaged row as DamagedStateError (or a
    storage failure as the storage error), wherever in the file the damage is."""

    def decorate(method: Method) -> Method:
        @functools.wraps(method)
        def reading(self: Any, *args: Any, **kwargs: Any) -> Any:
            with damage_named(self.path, table):
                return method(self, *args, **kwargs)

        return cast(Method, reading)

    return decorate


@contextlib.contextmanager
def damage_named(path: Path, table: str) -> Iterator[None]:
    """Within a method that reads several tables: the one a damaged row was read from."""
    try:
        yield
    except DAMAGE as exc:
        raise_named(path, exc, table)


_QUICK_CHECKED: dict[tuple[int, int], tuple[int, int, int]] = {}  # (device, inode): (size, mtime, ctime) at close


def _file_version(path: Path) -> tuple[tuple[int, int], tuple[int, int, int]] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino), (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def quick_check(db: sqlite3.Connection, path: Path) -> None:
    """Name damage in the file's structure (a zeroed page, a torn write) before a batch is written over it or
    a row read from it. Once per process for a file this process closed unchanged since: a job's scans open
    one state in turn, and the check reads every page (0.13 s for a million records)."""
    identity, version = _file_version(path) or (None, None)
    if identity is not None and _QUICK_CHECKED.get(identity) == version:
        return
    problems = [problem for (problem,) in db.execute("PRAGMA quick_check(3)")]
    if problems != ["ok"]:
        found = "; ".join(" ".join(problem.replace("*** in database main ***", "").split()) for problem in problems)
        raise DamagedStateError(path, f"SQLite's quick_check found {found}")


def closed_unchanged(path: Path) -> None:
    """``path`` passed the check on open and only this process wrote it since: the next open skips the check."""
    if (closed := _file_version(path)) is not None:
        identity, version = closed
        _QUICK_CHECKED[identity] = version
