"""The fast tier and the fused verdict ship trained for the packaged MiniLM: a first scan on it trains nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vdbguard.cli import main

STALE = "the packaged models are stale: run pipelines/package_fast_tier.py and commit vdbguard/data/trained-minilm"


def test_warmup_on_a_cold_cache_finds_the_packaged_minilm_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VDBGUARD_CACHE_DIR", str(tmp_path))
    result = CliRunner().invoke(main, ["--log-format", "json", "warmup"])
    assert result.exit_code == 0, result.output
    assert "Training" not in result.output and "Embedding" not in result.output, STALE
    assert not list((tmp_path / "models").rglob("*.*")), "nothing trained, so nothing cached"
    assert "trained-minilm" in result.output
