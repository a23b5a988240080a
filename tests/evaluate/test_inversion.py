"""The attack harness: metrics computed the papers' way, and the evaluate-attacks command contract."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vdbguard.cli import main
from vdbguard.errors import VdbguardError
from vdbguard.evaluate.data import load_jsonl
from vdbguard.text import name_recovery, token_f1


def test_token_f1_is_multiset_f1() -> None:
    assert token_f1("the cat sat", "the cat sat") == 1.0
    assert token_f1("", "the cat") == 0.0
    assert token_f1("the the", "the cat") == pytest.approx(0.5)


def test_name_recovery_counts_first_last_full() -> None:
    first, last, full = name_recovery("invoice for jane from accounting", ["Jane Doe", "Li Wei"])
    assert (first, last, full) == ([True, False], [False, False], [False, False])


def test_jsonl_errors_name_the_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "fine"}\n{"txt": "typo"}\n')
    with pytest.raises(VdbguardError, match=r"d.jsonl:2: field 'text'"):
        load_jsonl(path)
    path.write_text('{"text": "x", "names": "Jane"}\n')
    with pytest.raises(VdbguardError, match=r":1: field 'names'"):
        load_jsonl(path)


def test_evaluate_attacks_writes_the_contracted_metrics(tmp_path: Path, small_attacks) -> None:
    data = tmp_path / "heldout.jsonl"
    rows = [
        {"text": "Please reset the password for the billing portal account.", "names": []},
        {"text": "Maria Lopez called about her overdue invoice.", "names": ["Maria Lopez"]},
        {"text": "The printer on the third floor is jammed again."},
    ]
    data.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "m" / "attack-metrics.json"
    # bag-of-words is cached by `small_attacks`; `strongest` would run a deep attack for minutes
    args = ["evaluate-attacks", "--data", str(data), "--attack", "bag-of-words", "--profile", "small"]
    args += ["--out", str(out.parent)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text())
    assert {"n", "bleu", "token_f1", "exact", "cosine", "first_name", "last_name", "full_name", "seconds"} <= set(
        metrics
    )
    assert metrics["n"] == 3
    assert 0.0 <= metrics["token_f1"] <= 1.0 and -1.0 <= metrics["cosine"] <= 1.0
    assert metrics["first_name"] is not None
    assert metrics["encoder_queries_per_record"] == 0  # bag-of-words never re-embeds a guess
    from vdbguard.cache import cache_root

    kept = json.loads((cache_root() / "measurements" / "attack-quality.json").read_text())
    assert kept["all-MiniLM-L6-v2"]["bag-of-words"]["n"] == 3  # kept for `--attack strongest`


def test_probe_attacks_are_refused_by_the_inversion_harness(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "hello there"}\n')
    args = ["evaluate-attacks", "--data", str(data), "--attack", "pii-probe", "--out", str(tmp_path / "m")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "does not recover text" in result.output
