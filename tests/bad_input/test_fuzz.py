"""Hypothesis fuzzing: whatever a job file, a state file or a report holds, vdbguard answers with its own named
error (or the value), never a raw traceback from TOML, pydantic, SQLite or a validator."""

from __future__ import annotations

import contextlib
import datetime
import json
import sqlite3
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reports.test_writers import make_report
from vdbguard.config import STARTER, JobConfig, load_job, parse_job
from vdbguard.errors import VdbguardError
from vdbguard.reports.schema import Report
from vdbguard.scan import ScanStore

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
    path = tmp_path_factory.mktemp("state") / "scan.sqlite"
    with ScanStore(path) as store:
        store.db.execute("INSERT INTO meta VALUES ('filler', ?)", ("x" * 20_000,))
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.read_bytes()


@FUZZ
@given(st.binary(max_size=4096))
def test_any_bytes_as_a_state_file_are_a_named_error(tmp_path: Path, noise: bytes) -> None:
    path = tmp_path / "noise.sqlite"
    path.write_bytes(noise)
    try:
        ScanStore(path).close()
    except VdbguardError as error:
        assert str(path) in str(error)


@FUZZ
@given(st.data())
def test_a_truncated_or_damaged_state_is_a_named_error_or_still_opens(
    tmp_path: Path, real_state: bytes, data: st.DataObject
) -> None:
    damaged = bytearray(real_state[: data.draw(st.integers(0, len(real_state)))])
    for _ in range(data.draw(st.integers(0, 8))):
        if damaged:
            damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / "damaged.sqlite"
    path.write_bytes(bytes(damaged))
    try:
        with ScanStore(path) as store:
            store.latest_reports()
    except VdbguardError as error:
        assert str(path) in str(error)
    except sqlite3.DatabaseError as error:  # damage SQLite only sees when it reads the page
        pytest.fail(f"raw SQLite error from a damaged state: {error}")


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
