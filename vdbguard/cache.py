"""Where vdbguard keeps what it builds once: trained attacks, corpus embeddings, unpacked models."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$VDBGUARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/vdbguard``, else ``~/.cache/vdbguard``."""
    configured = os.environ.get("VDBGUARD_CACHE_DIR")
    base = Path(configured) if configured else Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "vdbguard"
    return base.expanduser()
