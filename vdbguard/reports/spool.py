"""Findings kept on disk, one JSON line each, and read back one at a time.

A scan of a million records may flag a hundred thousand of them; as objects they would take gigabytes.
The scan spools them here and every report writer streams them, so memory does not grow with findings.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator

from vdbguard.reports.schema import Finding

_CHUNK = 1 << 20
IN_MEMORY_FINDINGS = 5_000  # up to this many, a report holds its findings as a plain list


class FindingSpool:
    """An append-only sequence of findings in an anonymous temporary file (gone when closed or collected)."""

    def __init__(self, lines: Iterable[str] = ()) -> None:
        self._file = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 - lives as long as the spool
        self._count = 0
        for line in lines:
            self.append_json(line)

    def append_json(self, line: str) -> None:
        """Add one finding as its JSON (a model's ``model_dump_json()``: no newline inside)."""
        self._file.seek(0, 2)
        self._file.write(line.encode("utf-8") + b"\n")
        self._count += 1

    def append(self, finding: Finding) -> None:
        self.append_json(finding.model_dump_json())

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Finding]:
        """Every finding in the order added; iterations may interleave (each keeps its own position)."""
        position, rest = 0, b""
        while True:
            self._file.seek(position)
            chunk = self._file.read(_CHUNK)
            if not chunk:
                return
            position += len(chunk)
            *lines, rest = (rest + chunk).split(b"\n")
            for line in lines:
                yield Finding.model_validate_json(line)
