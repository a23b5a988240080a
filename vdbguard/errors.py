"""Errors that tell the user what went wrong and what to do next."""

from __future__ import annotations

from typing import NoReturn

_stopped_by: int | None = None  # the signal that asked this process to stop, once one has


def stop(signum: int, _frame: object = None) -> NoReturn:
    """A signal (SIGTERM: a job runner's timeout, a pod's deletion) asks the process to stop: unwind as Ctrl-C does
    and exit 128 + ``signum``. Remembered, because a library that calls back into Python can turn the SystemExit
    into an error of its own (pydantic, inside a serializer), which ``stop_if_asked`` turns back."""
    global _stopped_by
    _stopped_by = signum
    raise SystemExit(128 + signum)


def stop_if_asked() -> None:
    """Exit as the stop signal asked, where a failure may only be that signal's SystemExit in another's clothes."""
    if _stopped_by is not None:
        raise SystemExit(128 + _stopped_by)


class VdbguardError(Exception):
    """Base error. ``hint`` says what the user can do about it. ``resumable``: it stopped a scan whose state had
    already committed records of the run, so running the same command again goes on from there."""

    resumable = False

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class MissingExtraError(VdbguardError):
    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what} needs the '{extra}' extra", f"pip install 'vdbguard[{extra}]'")


class ConnectorError(VdbguardError):
    """The store could not be reached or read (bad URL, credentials, missing collection)."""


class CollectionNotFoundError(ConnectorError):
    pass


class PartialWriteError(ConnectorError):
    """A write the store could not make atomically failed part way: ``written`` holds the ids already changed
    in the store (written, or deleted to be re-added)."""

    def __init__(self, cause: VdbguardError, written: list[str], total: int) -> None:
        shown = ", ".join(written[:5]) + (f" and {len(written) - 5} more" if len(written) > 5 else "")
        super().__init__(
            f"{cause.message}; {len(written)} of {total} records were already changed in the store: {shown}",
            "writes replace whole records, so writing the same records again is safe (protect: rerun it with the "
            "same --state)",
        )
        self.written = tuple(written)


class RecordError(VdbguardError):
    """One record is unusable; the scan reports it and moves on."""

    def __init__(self, record_id: str, field: str, problem: str) -> None:
        super().__init__(f"record {record_id!r}: field {field!r} {problem}")
        self.record_id = record_id
        self.field = field
        self.problem = problem
