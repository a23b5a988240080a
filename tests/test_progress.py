"""Progress and logs a job runner can read: rate-limited plain lines, JSON lines, no credentials."""

from __future__ import annotations

import io
import json
import logging
import sys
from datetime import datetime

import pytest
from rich.console import Console

from vdbguard.errors import VdbguardError
from vdbguard.progress import (
    JsonLines,
    JsonLogFormatter,
    JsonProgress,
    PlainProgress,
    RichProgress,
    ScrubbingFormatter,
    json_event,
    progress_for,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def drive(sink: PlainProgress, clock: Clock, total: int | None) -> None:
    """1000 units in steps: at 2 s, 6 s, 12 s (a line is due), 15 s (not due), 22 s (due); ends at 25 s."""
    with sink.task("Scanning records", total) as advance:
        for at, n in ((2, 100), (6, 100), (12, 100), (15, 100), (22, 600)):
            clock.now = at
            advance(n)
        clock.now = 25


def test_plain_lines_are_rate_limited_and_carry_rate_and_eta() -> None:
    stream, clock = io.StringIO(), Clock()
    drive(PlainProgress(stream, interval=10, clock=clock), clock, 1000)
    assert stream.getvalue().splitlines() == [
        "Scanning records: started, 1000 to do",
        # the rate runs from the first advance (2 s, 100 done): 200 in 10 s
        "Scanning records: 300/1000 done, 20/s, ETA 35s",
        "Scanning records: 1000/1000 done, 45/s, ETA 0s",
        "Scanning records: done, 1000/1000 in 25s, 39/s",
    ]


def test_plain_lines_without_a_total_have_no_eta() -> None:
    stream, clock = io.StringIO(), Clock()
    sink = PlainProgress(stream, interval=10, clock=clock)
    drive(sink, clock, None)
    with sink.task("Calibrating on the store's own text", None):
        clock.now = 3725
    lines = stream.getvalue().splitlines()
    assert lines[1] == "Scanning records: 300 done, 20/s"
    assert "ETA" not in stream.getvalue()
    assert lines[-1] == "Calibrating on the store's own text: done in 1h01m"


def test_a_resumed_scan_jump_does_not_count_as_speed() -> None:
    stream, clock = io.StringIO(), Clock()
    with PlainProgress(stream, interval=10, clock=clock).task("Scanning records", 10_000) as advance:
        advance(9_000)  # already scanned before the interruption
        clock.now = 20
        advance(200)
    assert stream.getvalue().splitlines()[1] == "Scanning records: 9200/10000 done, 10/s, ETA 1m20s"


def test_a_first_batch_after_training_shows_no_rate() -> None:
    """The attacks train inside the first batch: a line at its end has no speed to tell, so it shows none."""
    stream, clock = io.StringIO(), Clock()
    with PlainProgress(stream, interval=10, clock=clock).task("Scanning records", 2000) as advance:
        clock.now = 400
        advance(256)
        clock.now = 410
        advance(256)
    first, second = stream.getvalue().splitlines()[1:3]
    assert first == "Scanning records: 256/2000 done"
    assert second == "Scanning records: 512/2000 done, 26/s, ETA 58s"


def test_json_lines_parse() -> None:
    stream, clock = io.StringIO(), Clock()
    drive(JsonProgress(stream, interval=10, clock=clock), clock, 1000)
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["task_start", "progress", "progress", "task_done"]
    first = events[1]
    assert first["task"] == "Scanning records"
    assert (first["done"], first["total"], first["rate"], first["eta_s"], first["elapsed_s"]) == (300, 1000, 20, 35, 12)
    assert events[-1]["eta_s"] is None and events[-1]["done"] == 1000
    assert all(datetime.fromisoformat(e["ts"]).tzinfo is not None for e in events)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_for_picks_bars_only_for_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TERM"):
        monkeypatch.delenv(name, raising=False)
    assert type(progress_for(io.StringIO(), "text")) is PlainProgress
    assert type(progress_for(Tty(), "text")) is RichProgress
    assert type(progress_for(Tty(), "json")) is JsonProgress
    assert type(progress_for(Console(file=io.StringIO()), "text")) is PlainProgress
    assert type(progress_for(Console(file=io.StringIO(), force_terminal=True), "text")) is RichProgress
    with pytest.raises(VdbguardError, match="unknown log format"):
        progress_for(io.StringIO(), "xml")


def test_progress_for_a_console_writes_where_the_console_writes_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    swapped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", swapped)
    with progress_for(Console(stderr=True), "text") as sink, sink.task("Embedding", 2) as advance:
        advance(2)
    assert "Embedding: done, 2/2" in swapped.getvalue()


def log_record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("vdbguard.scan", logging.WARNING, __file__, 1, message, args, None)


def test_log_formatters_scrub_urls_and_json_parses() -> None:
    record = log_record("cannot reach %s: refused", "http://admin:s3cret@db.internal:6333/x")
    entry = json.loads(JsonLogFormatter().format(record))
    assert entry["event"] == "log" and entry["level"] == "warning" and entry["logger"] == "vdbguard.scan"
    assert entry["message"] == "cannot reach http://***@db.internal:6333/x: refused"
    datetime.fromisoformat(entry["ts"])
    text = ScrubbingFormatter("%(levelname)s %(message)s").format(record)
    assert text == "WARNING cannot reach http://***@db.internal:6333/x: refused"


def test_json_log_keeps_the_exception_scrubbed() -> None:
    try:
        raise ConnectionError("http://u:hunter22@h/ refused")
    except ConnectionError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    entry = json.loads(JsonLogFormatter().format(record))
    assert "ConnectionError" in entry["exception"] and "hunter22" not in entry["exception"]


def test_json_lines_let_json_through_and_wrap_every_other_line() -> None:
    """Under --log-format json, what a library prints on its own still reaches the log as one JSON object a line."""
    target = io.StringIO()
    stream = JsonLines(target)
    stream.write('{"event": "log", "message": "already JSON"}\n')
    stream.write("Batches:  50%|#####     | 1/2\rBatches: 100%|##########| 2/2\r\n")
    stream.write("\x1b[33mwarning:\x1b[0m colour and a URL http://admin:s3cret@db:6333/x\n\n   \n")
    stream.write('{"not": "closed"\n[1, 2]\n')
    stream.write("a last line without its newline")
    assert not stream.isatty()
    stream.close()
    events = [json.loads(line) for line in target.getvalue().splitlines()]
    assert all(isinstance(e, dict) for e in events)
    assert events[0] == {"event": "log", "message": "already JSON"}
    wrapped = events[1:]
    assert {e["event"] for e in wrapped} == {"output"} and all("ts" in e and e["level"] == "info" for e in wrapped)
    assert [e["message"] for e in wrapped] == [
        "Batches:  50%|#####     | 1/2",
        "Batches: 100%|##########| 2/2",
        "warning: colour and a URL http://***@db:6333/x",
        '{"not": "closed"',
        "[1, 2]",
        "a last line without its newline",
    ]


def test_a_json_event_has_the_log_records_shape_and_is_scrubbed() -> None:
    entry = json.loads(json_event("error", "cannot reach http://u:hunter22@h:1/", "error", hint="check it"))
    assert entry["event"] == "error" and entry["level"] == "error" and entry["hint"] == "check it"
    assert entry["message"] == "cannot reach http://***@h:1/"
    datetime.fromisoformat(entry["ts"])
