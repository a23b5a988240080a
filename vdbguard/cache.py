"""Where vdbguard keeps what it builds once: trained attacks, corpus embeddings, unpacked models."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def cache_root() -> Path:
    """``$VDBGUARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/vdbguard``, else ``~/.cache/vdbguard``."""
    configured = os.environ.get("VDBGUARD_CACHE_DIR")
    base = Path(configured) if configured else Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "vdbguard"
    return base.expanduser()


def write_json_atomic(path: Path, data: Any, **dump_options: Any) -> None:
    """Write JSON so that a reader, or a run killed half-way, sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as handle:
        json.dump(data, handle, **dump_options)
    os.replace(handle.name, path)
