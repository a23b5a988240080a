"""What a scan has done so far, checkpointed so that a killed scan resumes exactly where it stopped.

After each batch the findings so far and the connector's cursor are written in one atomic replace, so
a resume neither skips nor double-counts a record.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from vdbguard.cache import write_json_atomic
from vdbguard.errors import VdbguardError
from vdbguard.reports.schema import Finding, RecordProblem

STATE_VERSION = 1


@dataclass
class ScanState:
    cursor: str | None = None
    records_scanned: int = 0
    findings: list[Finding] = field(default_factory=list)
    problems: list[RecordProblem] = field(default_factory=list)
    source_counts: Counter = field(default_factory=Counter)
    done: bool = False
    target: str = ""

    def save(self, path: Path) -> None:
        data = {
            "version": STATE_VERSION,
            "target": self.target,
            "cursor": self.cursor,
            "records_scanned": self.records_scanned,
            "findings": [f.model_dump(mode="json") for f in self.findings],
            "problems": [p.model_dump() for p in self.problems],
            "source_counts": dict(self.source_counts),
            "done": self.done,
        }
        write_json_atomic(path, data)

    @classmethod
    def load(cls, path: Path, target: str) -> ScanState:
        if not path.exists():
            return cls(target=target)
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise VdbguardError(f"scan state {path} is corrupt: {exc}", "delete it to start over") from exc
        if data.get("version") != STATE_VERSION or data.get("target") != target:
            raise VdbguardError(
                f"scan state {path} belongs to another scan ({data.get('target')!r})",
                "use a different --state file, or delete this one to start over",
            )
        return cls(
            cursor=data["cursor"],
            records_scanned=data["records_scanned"],
            findings=[Finding.model_validate(f) for f in data["findings"]],
            problems=[RecordProblem.model_validate(p) for p in data["problems"]],
            source_counts=Counter(data["source_counts"]),
            done=data["done"],
            target=target,
        )
