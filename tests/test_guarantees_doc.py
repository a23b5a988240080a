"""docs/guarantees.md names the test behind each promise: every file and test it names must exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_the_guarantees_name_exists() -> None:
    missing = []
    for line in (ROOT / "docs" / "guarantees.md").read_text().splitlines():
        current: Path | None = None
        for path, name in re.findall(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`", line):
            if path:
                current = ROOT / path
                if not current.is_file():
                    missing.append(path)
                    continue
            if name and (current is None or not re.search(rf"^\s*(async )?def {name}\(", current.read_text(), re.M)):
                missing.append(f"{current and current.relative_to(ROOT)}::{name}")
    assert not missing, f"docs/guarantees.md names tests that do not exist: {missing}"
