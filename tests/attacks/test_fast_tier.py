"""Attacks train on the real embedder, generalise to held-out text, and come back from the cache."""

from pathlib import Path

import numpy as np
import pytest

from vdbguard.attacks import DEFAULT_ATTACKS, attack_classes
from vdbguard.attacks.bag_of_words import BagOfWordsInversion, content_words
from vdbguard.attacks.base import Inference
from vdbguard.attacks.pii_probe import PiiProbeAttack
from vdbguard.attacks.training import trained_attacks
from vdbguard.corpus import synthetic_clean, synthetic_pii
from vdbguard.pii import PiiType


def by_name(attacks, name):
    return next(a for a in attacks if a.name == name)


def test_entry_points_register_both_attacks() -> None:
    assert set(DEFAULT_ATTACKS) <= set(attack_classes())


def test_probes_separate_held_out_pii_from_clean(small_attacks, embedder) -> None:
    probe = by_name(small_attacks, "pii-probe")
    pii = synthetic_pii(80, seed=4242)
    clean = synthetic_clean(80, seed=4242)
    scores = probe.probabilities(embedder.encode([t.text for t in pii + clean]))
    any_type = np.max(np.stack(list(scores.values())), axis=0)
    recall = (any_type[:80] >= probe.threshold).mean()
    false_positives = (any_type[80:] >= probe.threshold).mean()
    assert recall >= 0.8, recall
    assert false_positives <= 0.15, false_positives
    assert probe.metrics()[f"auc_{PiiType.EMAIL.value}"] > 0.9


def test_bag_of_words_beats_guessing_the_most_frequent_words(small_attacks, embedder) -> None:
    inverter = by_name(small_attacks, "bag-of-words")
    texts = [t.text for t in synthetic_clean(60, seed=777)]
    inferences = inverter.infer(embedder.encode(texts))
    frequent = inverter.vocabulary  # ordered by corpus frequency
    hits = guessed = 0
    for text, inference in zip(texts, inferences, strict=True):
        truth, recovered = set(content_words(text)), inference.recovered_text.split()
        hits += len(set(recovered) & truth)
        guessed += len(set(frequent[: len(recovered)]) & truth)
    assert hits > 0
    assert hits >= 1.5 * guessed, (hits, guessed)
    assert 0.0 < inverter.word_threshold < 1.0


def test_second_call_loads_from_cache_without_training(
    small_attacks, embedder, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_training(*args, **kwargs):
        raise AssertionError("retrained although a cached model exists")

    monkeypatch.setattr(PiiProbeAttack, "fit", no_training)
    monkeypatch.setattr(BagOfWordsInversion, "fit", no_training)
    again = trained_attacks(embedder, DEFAULT_ATTACKS, profile="small", cache_dir=model_cache)
    vectors = embedder.encode(["Call Jane Doe at 415-555-0142 about her claim."])
    for fresh, cached in zip(small_attacks, again, strict=True):
        assert fresh.infer(vectors) == cached.infer(vectors)
    models = list((model_cache / "models" / embedder.fingerprint).iterdir())
    assert set(DEFAULT_ATTACKS) <= {m.name.split("-v")[0] for m in models}


def test_save_load_round_trip(small_attacks, tmp_path: Path, embedder) -> None:
    vectors = embedder.encode(["Patient John Carter takes metformin for type 2 diabetes."])
    for attack in small_attacks:
        attack.save(tmp_path / attack.name)
        loaded = type(attack).load(tmp_path / attack.name)
        assert loaded.infer(vectors) == attack.infer(vectors)
        assert loaded.metrics() == attack.metrics()


def test_unnormalised_vectors_give_the_same_answer(small_attacks, embedder) -> None:
    """The same words, types and values; a score only to its last rounded digit: a scaled vector's unit vector can
    differ from the original's in its last bit, and a score on a rounding boundary then shows it (0.5334 / 0.5335)."""
    vectors = embedder.encode(["Email sarah.lee@example.com the signed contract."])

    def answer(inferences: list[Inference]) -> tuple[list, list[float]]:
        shapes, scores = [], []
        for i in inferences:
            shapes.append((i.recovered_text, [w for w, _ in i.recovered_tokens], sorted(i.type_scores),
                           [(t, v) for t, v, _ in i.recovered_pii], sorted(i.exposure_bits),
                           {k: v for k, (v, _) in i.attributes.items()}))  # fmt: skip
            scores += [s for _, s in i.recovered_tokens] + [i.type_scores[t] for t in sorted(i.type_scores)]
            scores += [s for *_, s in i.recovered_pii] + [i.exposure_bits[t] for t in sorted(i.exposure_bits)]
            scores += [p for _, p in i.attributes.values()]
        return shapes, scores

    for attack in small_attacks:
        scaled, scaled_scores = answer(attack.infer(vectors * 7.5))
        plain, plain_scores = answer(attack.infer(vectors))
        assert scaled == plain, attack.name
        assert plain_scores and scaled_scores == pytest.approx(plain_scores, abs=2e-4), attack.name


def test_bag_of_words_infers_without_torch_and_reads_models_saved_as_a_torch_state(
    small_attacks, embedder, tmp_path: Path
) -> None:
    """A scan of a few changed records loads the fast tier's models: torch's import was most of that."""
    import json
    import subprocess
    import sys

    import torch

    from vdbguard.attacks.bag_of_words import _STATE_KEYS, _WEIGHTS_FILE, _model

    inverter = by_name(small_attacks, "bag-of-words")
    vectors = embedder.encode([t.text for t in synthetic_clean(30, seed=99)])
    expected = [inference.recovered_text for inference in inverter.infer(vectors)]
    assert any(expected)
    inverter.save(tmp_path / "saved")
    np.save(tmp_path / "vectors.npy", vectors)
    program = (
        "import json, sys, numpy as np\n"
        "from pathlib import Path\n"
        "from vdbguard.attacks.bag_of_words import BagOfWordsInversion\n"
        f"attack = BagOfWordsInversion.load(Path({str(tmp_path / 'saved')!r}))\n"
        f"found = attack.infer(np.load({str(tmp_path / 'vectors.npy')!r}))\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'texts': [i.recovered_text for i in found]}))\n"
    )
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(run.stdout) == {"torch": False, "texts": expected}

    weights = np.load(tmp_path / "saved" / _WEIGHTS_FILE)
    network = _model(weights["0.weight"].shape[1], len(inverter.vocabulary), inverter.hidden)
    network.load_state_dict({key: torch.from_numpy(weights[key]) for key in _STATE_KEYS})
    torch.save(network.state_dict(), tmp_path / "saved" / "model.pt")
    (tmp_path / "saved" / _WEIGHTS_FILE).unlink()
    older = BagOfWordsInversion.load(tmp_path / "saved")
    assert [inference.recovered_text for inference in older.infer(vectors)] == expected
    assert (tmp_path / "saved" / _WEIGHTS_FILE).is_file(), "kept as numpy for the next load"
    assert json.loads(subprocess.run([sys.executable, "-c", program], capture_output=True, text=True).stdout) == {
        "torch": False,
        "texts": expected,
    }
