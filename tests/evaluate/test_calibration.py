"""Calibration picks the strongest setting whose worst cut against every attack, adapted, meets the target; it
never recommends one the white-box attacker defeats, and skips a keyed transform it holds no key for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vdbguard.cli import main
from vdbguard.evaluate.calibration import calibrate
from vdbguard.evaluate.defense import DefenseBench, evaluate_defense
from vdbguard.transforms.keyed import KEY_ENV

pytestmark = pytest.mark.slow(minutes=12)

ATTACKED = 8  # records both benches attack: the blinded premise is about the records the calibration measures


def test_calibrate_skips_a_keyed_transform_without_a_key_and_tries_the_rest(
    model_cache: Path, sentences, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "heldout.jsonl"
    data.write_text("\n".join(json.dumps({"text": item.text}) for item in sentences))
    monkeypatch.delenv(KEY_ENV, raising=False)
    out = tmp_path / "calibration" / "calibration.json"
    args = ["calibrate", "--data", str(data), "--transform", "dcpe", "--transform", "binary", "--profile", "small"]
    result = CliRunner().invoke(main, [*args, "--attack", "pii-probe", "--out", str(out.parent)])
    assert result.exit_code in (0, 1), result.output
    assert "skipped dcpe" in result.output and KEY_ENV in result.output
    assert [p["transform"] for p in json.loads(out.read_text())] == ["binary"]


def test_calibrate_never_recommends_a_setting_the_white_box_attacker_defeats(
    embedder, model_cache: Path, named
) -> None:
    """LEACE blinds slot search's linear probe, so a calibration against it alone picked LEACE; gradient
    inversion reads the names straight off the erased vectors, so now nothing is recommended."""
    from vdbguard.transforms.leace import LeaceErasure

    blinded = evaluate_defense(
        LeaceErasure(1.0),
        embedder,
        named,
        attacks=("slot-search",),
        profile="small",
        adaptive=False,
        attack_limit=ATTACKED,
    )
    assert blinded.leakage_clean > 0.2 and blinded.leakage_cut >= 0.5, blinded

    bench = DefenseBench(embedder, named, attacks=("slot-search", "gradient"), profile="small", attack_limit=ATTACKED)
    result = calibrate(bench, max_recall_loss=0.05, target_leakage_cut=0.5, transform_names=("leace:1",))
    (point,) = result.points
    gradient = point.attacks["gradient"]
    assert gradient.clean > 0.15 and gradient.protected is not None and gradient.protected > 0.5 * gradient.clean
    assert point.adaptive_measured and point.worst_cut is not None and point.worst_cut < 0.5, point
    assert result.chosen is None and point in result.closest()
