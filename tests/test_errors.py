"""A stop signal exits as a stop, even where a library turned its SystemExit into an error of its own."""

from __future__ import annotations

import signal

import pytest
from pydantic import BaseModel, field_serializer

from vdbguard import errors
from vdbguard.cli.common import friendly_errors


class _Serialized(BaseModel):
    value: int

    @field_serializer("value")
    def _stopped_here(self, value: int) -> int:
        errors.stop(signal.SIGTERM)  # the signal arrives while pydantic-core calls back into Python


def test_a_stop_inside_a_pydantic_serializer_still_exits_143_not_as_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(errors, "_stopped_by", None)

    @friendly_errors
    def command() -> None:
        _Serialized(value=1).model_dump_json()

    with pytest.raises(SystemExit) as raised:
        command()
    assert raised.value.code == 128 + signal.SIGTERM


def test_without_a_stop_a_failure_is_one_error_and_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(errors, "_stopped_by", None)

    @friendly_errors
    def command() -> None:
        raise errors.VdbguardError("the store went away", "start it again")

    with pytest.raises(SystemExit) as raised:
        command()
    assert raised.value.code == 2
