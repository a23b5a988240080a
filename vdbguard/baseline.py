"""``vdbguard scan --baseline FILE``: accept what an earlier scan found, so that a CI gate fails on new leaks only.

FILE is an earlier report.json (each of its findings accepted per collection, record id and PII type) or a
list of suppressions in the job file's ``[[suppressions]]`` form (TOML or JSON). Either way the result is job
file suppressions, applied by :func:`vdbguard.scan.suppressions.apply_suppressions`: a baseline is one more
suppression, not a second mechanism.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from vdbguard.config import JobConfig, Suppression, describe_errors, key_lines
from vdbguard.errors import VdbguardError

_HINT = (
    "pass a report.json of an earlier scan, or a suppression list ([[suppressions]] with record_id, reason, "
    "owner and expires, as in a job file)"
)


class BaselineSuppression(Suppression):
    """Every (collection, record id, PII type) an earlier report flagged, matched by value (ids are not globs)
    and in constant time, however many findings the baseline holds."""

    _accepted: set[tuple[str, str, str]] = PrivateAttr(default_factory=set)

    @classmethod
    def of(cls, source: Path, accepted: set[tuple[str, str, str]]) -> BaselineSuppression:
        baseline = cls(record_id="*", reason=f"in the baseline {source.name}", owner="baseline", expires=date.max)
        baseline._accepted = accepted
        return baseline

    def matches(self, collection: str, record_id: str, pii_type: str) -> bool:
        return (collection, record_id, pii_type) in self._accepted

    @property
    def accepted(self) -> int:
        """How many (collection, record id, PII type) the baseline accepts."""
        return len(self._accepted)


class _SuppressionList(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suppressions: list[Suppression]


def _read(path: Path) -> tuple[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise VdbguardError(f"no baseline at {path}", _HINT) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise VdbguardError(f"cannot read the baseline {path} ({exc})", _HINT) from None
    try:
        return text, tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise VdbguardError(f"the baseline {path} is not valid {kind}: {exc}", _HINT) from None


def _accepted_findings(path: Path, findings: Any) -> set[tuple[str, str, str]]:
    """(collection, record id, PII type) of each finding of a report.json, whatever its schema's minor version."""
    try:
        return {
            (str(f["collection"]), str(f["record_id"]), str(pii_type)) for f in findings for pii_type in f["pii_types"]
        }
    except (TypeError, KeyError) as exc:
        raise VdbguardError(f"the baseline {path} has a finding without {exc}", _HINT) from None


def _suppression_list(path: Path, text: str, data: Any) -> list[Suppression]:
    try:
        return _SuppressionList.model_validate(data).suppressions
    except ValidationError as exc:
        lines = key_lines(text) if path.suffix.lower() == ".toml" else {}
        raise VdbguardError(f"the baseline {path} has problems:\n{describe_errors(exc, lines)}", _HINT) from None


def load_baseline(path: Path) -> list[Suppression]:
    """The suppressions ``path`` stands for: one per report.json, or each entry of a suppression list."""
    text, data = _read(path)
    if isinstance(data, dict) and "findings" in data and "schema_version" in data:
        return [BaselineSuppression.of(path, _accepted_findings(path, data["findings"]))]
    if isinstance(data, dict) and "suppressions" in data:
        return _suppression_list(path, text, data)
    kind = "a SARIF log" if isinstance(data, dict) and "runs" in data else "neither a report nor a suppression list"
    raise VdbguardError(f"the baseline {path} is {kind}", _HINT)


def baseline_in_force(file: Path | None, today: date) -> tuple[list[Suppression], list[Suppression]]:
    """The baseline's suppressions still in force, and the expired ones (named to the user as a job file's are);
    read before the scan, so that a bad file fails fast."""
    if file is None:
        return [], []
    suppressions = load_baseline(file)
    return [s for s in suppressions if s.expires >= today], [s for s in suppressions if s.expires < today]


def with_baseline(config: JobConfig, baseline: Sequence[Suppression]) -> JobConfig:
    """The job with the baseline's suppressions added to its own."""
    return config.model_copy(update={"suppressions": [*config.suppressions, *baseline]}) if baseline else config
