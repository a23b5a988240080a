"""Hypothesis fuzzing: whatever a job file, a state file or a report holds, vdbguard answers with its own named
error (or the value), never a raw traceback from TOML, pydantic, SQLite or a validator."""

from __future__ import annotations

import contextlib
import datetime
import json
import tomllib
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reports.test_writers import make_report
from tests.scan.test_state_file import TARGET, finished_state, leaks
from vdbguard.config import STARTER, JobConfig, load_job, parse_job
from vdbguard.errors import VdbguardError
from vdbguard.reports.loading import SQLITE_HEADER
from vdbguard.reports.schema import Report
from vdbguard.scan import ScanStore
from vdbguard.scan.engine import finish_run

FUZZ = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)  # derandomized: CI sees the same examples every run
BASE: dict[str, Any] = tomllib.loads(STARTER)
SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "report-schema.json").read_text())

# what TOML can hold: strings, numbers, booleans, dates, lists and tables
toml_values = st.recursive(
    st.one_of(
        st.text(max_size=30),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.floats(allow_nan=True),
        st.booleans(),
        st.dates(),
        st.datetimes(),
    ),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


def _leaf_paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    if isinstance(data, dict):
        return [prefix] + [p for key, value in data.items() for p in _leaf_paths(value, (*prefix, key))]
    if isinstance(data, list):
        return [prefix] + [p for i, value in enumerate(data) for p in _leaf_paths(value, (*prefix, i))]
    return [prefix]


PATHS = [path for path in _leaf_paths(BASE) if path]


def _with(data: Any, path: tuple, value: Any) -> Any:
    copy = json.loads(json.dumps(data, default=str))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


@FUZZ
@given(st.sampled_from(PATHS), toml_values)
def test_any_value_anywhere_in_a_job_file_is_a_named_error_or_valid(path: tuple, value: Any) -> None:
    try:
        assert isinstance(parse_job(_with(BASE, path, value), "job.toml"), JobConfig)
    except VdbguardError as error:
        assert "job.toml has" in str(error)


@FUZZ
@given(st.dictionaries(st.text(max_size=12), toml_values, max_size=6))
def test_any_table_at_the_top_is_a_named_error_or_valid(data: dict[str, Any]) -> None:
    with contextlib.suppress(VdbguardError):
        parse_job(data, "job.toml")


@FUZZ
@given(st.text(max_size=300))
def test_any_text_as_a_job_file_is_a_named_error_or_valid(tmp_path: Path, text: str) -> None:
    path = tmp_path / "job.toml"
    path.write_text(text, encoding="utf-8")
    with contextlib.suppress(VdbguardError):
        load_job(path)


@pytest.fixture(scope="module")
def real_state(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A finished scan's state: findings with a planted value on many pages, and the report's header."""
    return finished_state(tmp_path_factory.mktemp("state") / "scan.sqlite", 300).read_bytes()


def _header_of(application_id: bytes) -> st.SearchStrategy[bytes]:
    """SQLite's first 100 bytes, random but for the magic string and this application id."""
    return st.binary(min_size=84, max_size=84).map(lambda rest: SQLITE_HEADER + rest[:52] + application_id + rest[56:])


noise_files = st.one_of(
    st.binary(max_size=4096),
    st.tuples(_header_of(bytes(4)), st.binary(max_size=4096)).map(b"".join),  # no application id: not ours
    st.tuples(_header_of(b"vdbg"), st.binary(max_size=4096)).map(b"".join),  # ours, but noise
)


@FUZZ
@given(noise_files)
def test_any_bytes_as_a_state_file_are_refused_untouched_or_named_as_damaged(tmp_path: Path, noise: bytes) -> None:
    folder = tmp_path / uuid.uuid4().hex  # a file of its own: a state closed unchanged is not checked twice
    folder.mkdir()
    path = folder / "noise.sqlite"
    path.write_bytes(noise)
    try:
        with ScanStore(path) as store:
            store.begin("t", "key")
        assert not noise, "only an empty file becomes a state"
    except VdbguardError as error:
        assert getattr(error, "resumable", True) is False, error
        if noise[68:72] == b"vdbg":
            assert error.message.startswith(f"the state file {path} is damaged: "), error
        else:
            assert error.message.startswith(f"{path} is not a vdbguard state file: "), error
            assert path.read_bytes() == noise and [p.name for p in folder.iterdir()] == [path.name], "untouched"


@FUZZ
@given(st.data())
def test_a_truncated_or_damaged_state_is_a_named_error_that_shows_no_row_or_still_reads(
    tmp_path: Path, real_state: bytes, data: st.DataObject
) -> None:
    damaged = bytearray(real_state[: data.draw(st.integers(0, len(real_state)))])
    for _ in range(data.draw(st.integers(0, 8))):
        if damaged:
            damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / uuid.uuid4().hex / "damaged.sqlite"
    path.parent.mkdir()
    path.write_bytes(bytes(damaged))
    try:
        with ScanStore(path) as store:
            store.latest_reports()
            run = store.begin(TARGET, "key", "v1")
            if run.carry_unchanged():  # unless the damage hit the run it carries from
                list(finish_run(run, 1.0, None).findings)
    except VdbguardError as error:
        named = (f"the state file {path} is damaged: ", f"{path} is not a vdbguard state file: ")
        assert error.message.startswith(named) and getattr(error, "resumable", True) is False, error
        assert not leaks(str(error)), error


texts = st.text(max_size=40)


@FUZZ
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "record_id": texts,
                "recovered_words": st.lists(texts, max_size=5),
                "score": st.floats(0, 1),
                "created": st.datetimes(timezones=st.just(datetime.UTC)),
            }
        ),
        max_size=5,
    )
)
def test_reports_round_trip_through_json_and_the_published_schema(rows: list[dict[str, Any]]) -> None:
    base = make_report()
    template = base.findings[0]
    findings = [
        template.model_copy(
            update={
                "record_id": row["record_id"],
                "recovered_words": row["recovered_words"],
                "evidence": [e.model_copy(update={"score": row["score"]}) for e in template.evidence],
            }
        )
        for row in rows
    ]
    report = base.model_copy(
        update={"findings": findings, "created_at": rows[0]["created"] if rows else base.created_at}
    )
    encoded = report.model_dump_json()
    jsonschema.validate(json.loads(encoded), SCHEMA)
    assert Report.model_validate_json(encoded) == report
