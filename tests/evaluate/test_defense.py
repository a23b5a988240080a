"""Defense evaluation on real MiniLM vectors: what the clean-trained and the adaptive attacker recover.

Bag-of-words on the small profile only (cached by ``model_cache``), 60 held-out sentences: seconds
once the models are cached; one adaptive retraining (about 20 s) on a cold cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vdbguard.attacks import strongest_inversion
from vdbguard.cli import main
from vdbguard.corpus import synthetic_pii
from vdbguard.evaluate.data import EvalItem
from vdbguard.evaluate.defense import (
    AttackLeakage,
    DefensePoint,
    default_attacks,
    evaluate_defense,
    score_leakage,
)
from vdbguard.pii import PiiType
from vdbguard.transforms.keyed import KEY_ENV
from vdbguard.transforms.rotation import SecretRotation

pytestmark = pytest.mark.slow(minutes=2)

KEY = "vdbguard-test-key-not-secret-0123456789"  # public: the tests only need a fixed key


def test_the_default_suite_is_the_strongest_and_cheap_is_only_on_request(embedder) -> None:
    named = [EvalItem("a line", ("Jane Doe",)), EvalItem("b")]
    suite = default_attacks(named, embedder)
    assert suite[0] == "gradient" and strongest_inversion(embedder.name) in suite and "slot-search" in suite
    assert "slot-search" not in default_attacks([EvalItem("a line")], embedder)
    assert default_attacks(named, embedder, cheap=True) == ("slot-search", "bag-of-words")
    assert default_attacks([EvalItem("a line"), EvalItem("b")], embedder, cheap=True) == ("bag-of-words",)


def test_leakage_counts_name_parts_and_listed_pii_but_not_domain_boilerplate() -> None:
    items = [EvalItem("Mail Aroha Ngata at aroha.ngata@example.com", ("Aroha Ngata",), ("aroha.ngata@example.com",))]
    leak = score_leakage(["aroha wrote from example com"], items)
    assert leak.primary == 0.5  # first name, not last
    assert leak.pii == 0.5  # of {aroha, ngata}: "example" and "com" would be in any guess, so they never count
    titled = [EvalItem("Patch by Mr J. Jenkins.", ("Mr J. Jenkins",))]
    assert score_leakage(["mr j patched it"], titled).primary == 0.0  # a title or an initial is not the name
    assert score_leakage(["jenkins patched it"], titled).primary == 1.0


def test_an_attack_that_cannot_run_earns_the_transform_no_cut() -> None:
    untouched = ("neighbour_recall_at_10", "recall_at_10", "ndcg_at_10", "recall_at_10_clean", "ndcg_at_10_clean")
    point = DefensePoint(
        transform="pca",
        strength=256,
        **dict.fromkeys(untouched, 1.0),  # retrieval unharmed: only leakage matters here
        leakage_clean=0.4,
        leakage_protected=None,
        leakage_protected_adaptive=0.04,
        seconds=1.0,
        attacks={"slot-search": AttackLeakage(0.4, None, None), "bag-of-words": AttackLeakage(0.01, None, 0.04)},
    )
    assert point.unmeasured == ["slot-search"] and point.leakage_cut == 0.0
    measured = DefensePoint(**{**point.__dict__, "attacks": {"bag-of-words": AttackLeakage(0.4, None, 0.04)}})
    assert measured.leakage_cut == pytest.approx(0.9)


def test_rotation_blinds_only_the_clean_trained_attacker(embedder, model_cache: Path, sentences) -> None:
    point = evaluate_defense(
        SecretRotation(key=KEY), embedder, sentences, attacks=("bag-of-words",), profile="small", adaptive=True
    )
    assert point.recall_loss == pytest.approx(0.0, abs=1e-9) and point.neighbour_recall_at_10 > 0.99
    assert point.leakage_clean > 0.2, point
    assert point.leakage_protected < 0.25 * point.leakage_clean, point  # the attacker cannot read rotated vectors
    assert point.leakage_protected_adaptive > 0.7 * point.leakage_clean, point  # ... until it retrains on them
    assert point.attacks["bag-of-words"].adaptive == point.leakage_protected_adaptive
    assert point.attacked_records == len(sentences)


def test_concept_transform_is_fit_on_the_labelled_corpus_not_the_evaluated_data(
    embedder, model_cache: Path, sentences
) -> None:
    from vdbguard.transforms.leace import LeaceErasure

    first, second = LeaceErasure(1.0), LeaceErasure(1.0)
    for transform, items in ((first, sentences[:30]), (second, sentences[30:])):
        evaluate_defense(transform, embedder, items, attacks=("bag-of-words",), profile="small", adaptive=False)
    probe = embedder.encode(["Aroha Ngata was admitted on 3 May."])
    assert np.array_equal(first.apply(probe), second.apply(probe))  # same fit whatever was evaluated
    assert first.rank == 1  # one binary concept ("names a person"), so labels reached fit()


def test_attack_limit_samples_records_that_name_someone(embedder, model_cache: Path) -> None:
    items = [EvalItem(t.text, tuple(t.values.get(PiiType.PERSON, ()))) for t in synthetic_pii(40, seed=999)]
    point = evaluate_defense(
        SecretRotation(key=KEY),
        embedder,
        items,
        attacks=("bag-of-words",),
        profile="small",
        adaptive=False,
        attack_limit=5,
    )
    assert point.attacked_records == 5 < sum(bool(item.names) for item in items)


def test_evaluate_defense_cli_writes_the_contract_keys(
    model_cache: Path, sentences, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "heldout.jsonl"
    data.write_text("\n".join(json.dumps({"text": item.text}) for item in sentences))
    monkeypatch.setenv(KEY_ENV, KEY)
    out = tmp_path / "defense" / "defense.json"
    args = ["evaluate-defense", "--data", str(data), "--transform", "rotation", "--strength", "1"]
    args += ["--attack", "bag-of-words", "--attack-limit", "10", "--profile", "small", "--out", str(out.parent)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text())
    assert written["attacked_records"] == 10
    for key in ("neighbour_recall_at_10", "leakage_clean", "leakage_protected", "leakage_protected_adaptive"):
        assert 0 <= written[key] <= 1, (key, written)
    assert written["seconds"] > 0 and written["attacks"]["bag-of-words"]["adaptive"] is not None
