"""The frontier: each transform (a chain too) measured once, kept in points.json, and never mixed with another
run's settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vdbguard.cli import main
from vdbguard.corpus import synthetic_pii

pytestmark = pytest.mark.slow(minutes=7)


def test_frontier_measures_a_chain_resumes_and_refuses_to_mix_runs(model_cache: Path, tmp_path: Path) -> None:
    items = synthetic_pii(40, seed=999, locales=("en_NZ", "en_IN"))
    data = tmp_path / "heldout.jsonl"
    listed = [[v for values in t.values.values() for v in values] for t in items]
    data.write_text("\n".join(json.dumps({"text": t.text, "pii": pii}) for t, pii in zip(items, listed, strict=True)))
    out = tmp_path / "frontier"
    args = ["frontier", "--data", str(data), "--cheap", "--profile", "small", "--attack-limit", "20"]
    args += ["--transform", "redact:0.4+gaussian:0.05", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "lower bound" in result.output  # --cheap says what it is
    stored = json.loads((out / "points.json").read_text())
    rows = {row["transform"]: row for row in stored["points"]}
    assert set(rows) == {"redact+gaussian"} and stored["config"]["attacks"] == ["bag-of-words"]
    chain = rows["redact+gaussian"]
    assert chain["pii_queries"] > 0 and chain["pii_worst_cut"] is not None and chain["adaptive_measured"]
    assert (out / "frontier.png").stat().st_size > 0
    assert "redact+gaussian: best cut" in (out / "table.md").read_text()

    again = CliRunner().invoke(main, args)  # everything is in points.json: nothing is measured again
    assert again.exit_code == 0, again.output
    assert json.loads((out / "points.json").read_text()) == stored

    mixed = CliRunner().invoke(main, [*args[:-2], "--attack-limit", "10", "--out", str(out)])
    assert mixed.exit_code != 0 and "another attacked_records" in mixed.output
