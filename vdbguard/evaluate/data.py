"""Held-out evaluation data: one JSON object per line, ``{"text": "...", "names": ["Jane Doe"], "pii": [...]}``.

``names`` are the people the text names; ``pii`` any other PII values in it (emails, phone numbers, ids).
Both are optional: without them leakage is measured on the text's content words.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from vdbguard.errors import VdbguardError


@dataclass(frozen=True)
class EvalItem:
    text: str
    names: tuple[str, ...] = ()
    pii: tuple[str, ...] = ()


def load_jsonl(path: Path) -> list[EvalItem]:
    """``{"text": "...", "names": ["Jane Doe"]}`` per line; errors name the line and the field."""
    if not path.is_file():
        raise VdbguardError(f"evaluation data {path} does not exist", "pass --data FILE.jsonl")
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise VdbguardError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
        text = row.get("text") if isinstance(row, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise VdbguardError(f"{path}:{number}: field 'text' must be a non-empty string")
        values = {}
        for key in ("names", "pii"):
            listed = row.get(key) or []
            if not isinstance(listed, list) or not all(isinstance(n, str) and n.strip() for n in listed):
                raise VdbguardError(f"{path}:{number}: field {key!r} must be a list of non-empty strings")
            values[key] = tuple(listed)
        items.append(EvalItem(text=text, **values))
    if not items:
        raise VdbguardError(f"{path} holds no records")
    return items
