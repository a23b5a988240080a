"""Progress the library can drive without knowing who watches: bars on a terminal, plain or JSON lines
in a job runner's log (and the log formatters that go with them)."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TextIO

from vdbguard.credentials import safe_text
from vdbguard.errors import VdbguardError

Advance = Callable[[int], None]


class ProgressSink(Protocol):
    def task(self, description: str, total: int | None) -> AbstractContextManager[Advance]: ...


class Silent:
    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Advance]:
        yield lambda n: None


class RichProgress:
    """One rich progress display per command; each phase (embed, train, scan) adds a bar."""

    def __init__(self, console=None) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Advance]:
        task_id = self._progress.add_task(description, total=total)
        yield lambda n: self._progress.advance(task_id, n)
        self._progress.update(task_id, completed=total if total is not None else None)


class PlainProgress:
    """Progress for a log a job runner keeps (no terminal): a line when a task starts, at most one every
    ``interval`` seconds while it runs (done, rate, ETA), and one when it ends. Bars would be one useless
    render at exit, or a wall of escape codes."""

    def __init__(
        self, stream: TextIO | None = None, *, interval: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = stream
        self._interval = interval
        self._clock = clock

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Advance]:
        started = self._clock()
        state = _TaskState(description, total, started=started, last_line=started)
        self._write(self.render("task_start", state, started))

        def advance(n: int) -> None:
            now = self._clock()
            if state.first_at is None:  # measure the rate from here: a resumed scan's first jump is not speed
                state.first_at, state.first_done = now, state.done + n
            state.done += n
            if now - state.last_line >= self._interval:
                state.last_line = now
                self._write(self.render("progress", state, now))

        yield advance
        self._write(self.render("task_done", state, self._clock()))

    def render(self, event: str, state: _TaskState, now: float) -> str:
        """One plain line: ``Scanning records: 1200/5000 done, 85/s, ETA 45s``."""
        done = f"{state.done}/{state.total}" if state.total is not None else str(state.done)
        rate = state.rate(now)
        speed = "" if rate is None else f", {_rate(rate)}"
        if event == "task_start":
            return f"{state.description}: started" + (f", {state.total} to do" if state.total is not None else "")
        if event == "task_done":
            took = _duration(now - state.started)
            if not state.done and state.total is None:
                return f"{state.description}: done in {took}"
            return f"{state.description}: done, {done} in {took}{speed}"
        eta = state.eta(now)
        return f"{state.description}: {done} done{speed}" + ("" if eta is None else f", ETA {_duration(eta)}")

    def _write(self, line: str) -> None:
        print(line, file=sys.stderr if self._stream is None else self._stream, flush=True)


class JsonProgress(PlainProgress):
    """The same lines as :class:`PlainProgress`, as JSON objects a log collector can index."""

    def render(self, event: str, state: _TaskState, now: float) -> str:
        rate, eta = state.rate(now), state.eta(now)
        return json.dumps(
            {
                "ts": _timestamp(time.time()),
                "event": event,
                "task": state.description,
                "done": state.done,
                "total": state.total,
                "rate": None if rate is None else round(rate, 2),
                "eta_s": None if eta is None or event == "task_done" else round(eta, 1),
                "elapsed_s": round(now - state.started, 1),
            }
        )


@dataclass
class _TaskState:
    description: str
    total: int | None
    started: float
    last_line: float
    done: int = 0
    first_at: float | None = None
    first_done: int = 0

    def rate(self, now: float) -> float | None:
        """Units a second since the first advance (the work before it has no known size)."""
        if self.first_at is not None and now > self.first_at and self.done > self.first_done:
            return (self.done - self.first_done) / (now - self.first_at)
        if self.first_at == now:  # the first advance: the time before it may be a setup's (training the attacks)
            return None
        if now > self.started and self.done:
            return self.done / (now - self.started)
        return None

    def eta(self, now: float) -> float | None:
        rate = self.rate(now)
        if self.total is None or not rate:
            return None
        return max(self.total - self.done, 0) / rate


def _rate(rate: float) -> str:
    return f"{rate:.0f}/s" if rate >= 10 else f"{rate:.1f}/s"


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _timestamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


LOG_FORMATS = ("text", "json")


def progress_for(output: Any, log_format: str = "text") -> RichProgress | PlainProgress:
    """Bars for a person at a terminal; plain lines for a job runner's log; JSON lines for a log collector.

    ``output`` is a rich Console or a text stream; the choice is made on where it writes now.
    """
    if log_format not in LOG_FORMATS:
        raise VdbguardError(f"unknown log format {log_format!r}", f"choose one of {', '.join(LOG_FORMATS)}")
    from rich.console import Console

    console = output if isinstance(output, Console) else None
    stream: TextIO = console.file if console is not None else output
    if log_format == "json":
        return JsonProgress(stream)
    if console is not None:
        interactive = console.is_terminal and not console.is_dumb_terminal
    else:
        interactive = bool(getattr(stream, "isatty", lambda: False)())
    if interactive:
        return RichProgress(console if console is not None else Console(file=stream))
    return PlainProgress(stream)


class ScrubbingFormatter(logging.Formatter):
    """Plain log lines with URLs redacted and known secrets masked: logs outlive the scan and travel."""

    def format(self, record: logging.LogRecord) -> str:
        return safe_text(super().format(record))


class JsonLogFormatter(logging.Formatter):
    """One JSON object per log record, for ``--log-format json``; URLs redacted and known secrets masked."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": _timestamp(record.created),
            "event": "log",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": safe_text(record.getMessage()),
        }
        if record.exc_info:
            entry["exception"] = safe_text(self.formatException(record.exc_info))
        return json.dumps(entry)


def json_event(event: str, message: str, level: str = "info", **fields: Any) -> str:
    """One JSON line of the same shape as the log records' (``ts``, ``event``, ``level``, ``message``), the
    message scrubbed of URLs' credentials and known secrets like every log line."""
    entry = {"ts": _timestamp(time.time()), "event": event, "level": level, "message": safe_text(message)}
    return json.dumps({**entry, **fields}, default=str)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class JsonLines(io.TextIOBase):
    """A text stream that lets JSON objects through and wraps every other line in one (``event: "output"``),
    so that nothing a library prints on its own (a progress bar, a warning) breaks a JSON-lines log.

    A carriage return ends a line too (progress bars redraw with it); blank lines are dropped.
    """

    def __init__(self, target: TextIO) -> None:
        self._target = target
        self._pending = ""

    def write(self, text: str) -> int:
        *lines, self._pending = re.split(r"\r\n|\r|\n", self._pending + text)
        for line in lines:
            self._emit(line)
        return len(text)

    def flush(self) -> None:
        self._target.flush()

    def close(self) -> None:
        """Emit a last line left without its newline; the stream underneath stays open."""
        if self._pending:
            self._emit(self._pending)
            self._pending = ""
        self.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._target.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._target, "encoding", None) or "utf-8"

    def _emit(self, line: str) -> None:
        line = _ANSI.sub("", line).rstrip()
        if not line.strip():
            return
        if not _is_json_object(line):
            line = json_event("output", line)
        self._target.write(line + "\n")


def _is_json_object(line: str) -> bool:
    if not line.startswith("{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


NOISY_LOGGERS = ("presidio-analyzer", "sentence_transformers", "httpx", "chromadb")


def configure_logging(log_format: str = "text", verbose: bool = False) -> Callable[[], None]:
    """Log records on stderr, secrets scrubbed: lines for a person, or under ``json`` JSON objects for a collector,
    with every other line on stderr (a library printing on its own, Python's warnings) wrapped in one too. The
    scan's estimate and coverage always show; the libraries' chatter only when it is an error. Returns what puts
    stderr back."""
    original, lines = sys.stderr, JsonLines(sys.stderr) if log_format == "json" else None
    if lines is not None:
        sys.stderr = lines
    handler = logging.StreamHandler()
    json_records = log_format == "json"
    handler.setFormatter(JsonLogFormatter() if json_records else ScrubbingFormatter("%(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
    logging.captureWarnings(json_records)
    for noisy in NOISY_LOGGERS:
        logging.getLogger(noisy).setLevel(logging.ERROR)
    logging.getLogger("vdbguard.scan.plan").setLevel(logging.INFO)

    def restore() -> None:
        if lines is not None:
            lines.close()
            sys.stderr = original

    return restore
