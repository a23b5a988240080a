"""Fixtures of the fault tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ChromaServer, chroma_executable


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ChromaServer]:
    """A Chroma server of the test's own, which the test may stop and start again."""
    executable = chroma_executable()
    if executable is None:
        pytest.skip("the `chroma` executable is not installed (pip install 'vdbguard[chroma]')")
    (tmp_path / "server").mkdir()
    own = ChromaServer(executable, tmp_path / "server")
    own.start()
    yield own
    own.stop()
