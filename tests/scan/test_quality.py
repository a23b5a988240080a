"""What a flag means is stated for the embedder and verdict mode a scan used, or said to be unmeasured."""

from __future__ import annotations

import re
from pathlib import Path

from tests.reports.test_writers import make_report
from vdbguard.embedders import DEFAULT_EMBEDDER
from vdbguard.reports.markdown import render_markdown
from vdbguard.scan.quality import MEASURED, expected_quality, not_measured, quality_for


def test_quality_is_stated_only_for_the_embedder_and_mode_it_was_measured_on() -> None:
    assert {q.mode for q in expected_quality("default", DEFAULT_EMBEDDER)} == {"default"}
    assert expected_quality("owner", DEFAULT_EMBEDDER) and expected_quality("store", "store")
    assert expected_quality("default", "all-mpnet-base-v2") == [], "MiniLM's figures are not mpnet's"
    assert expected_quality("default", "/models/my-finetuned-minilm") == []
    assert expected_quality("owner", "store") == [] and expected_quality("store", DEFAULT_EMBEDDER) == []
    assert "'all-mpnet-base-v2'" in not_measured("default", "all-mpnet-base-v2")


def test_a_report_for_an_unmeasured_embedder_says_so() -> None:
    quality, unmeasured = quality_for("default", "all-mpnet-base-v2")
    report = make_report().model_copy(update={"expected_quality": quality, "quality_not_measured": unmeasured})
    text = " ".join(render_markdown(report).split())
    assert "## What a flag means" in text and "No quality was measured on real text for embedder" in text
    measured, none = quality_for("default", DEFAULT_EMBEDDER)
    assert measured and none is None


def test_every_figure_a_report_states_is_one_benchmarks_md_holds() -> None:
    """Reports quote these figures as measured: a re-measured row in BENCHMARKS.md with the old one left here fails."""
    benchmarks = (Path(__file__).parents[2] / "BENCHMARKS.md").read_text()
    section = benchmarks.split("## Verdicts on real text", 1)[1].split("\n## ", 1)[0]
    for (embedder, mode), rows in MEASURED.items():
        for source, recall, false_positive_rate in rows:
            pair = rf"{recall:.3f}(?: \([0-9.]+-[0-9.]+\))? / {false_positive_rate:.3f}"
            assert re.search(pair, section), f"{embedder} {mode} on {source}: {recall} / {false_positive_rate}"
