"""A model is recognised by what it computes, on any machine: float noise between CPUs and library versions must
not make the same model look like another (the packaged generative model was lost that way), and another model
must not pass for it."""

from __future__ import annotations

import json

import numpy as np

from vdbguard.data import packaged_file
from vdbguard.embedders.loading import PROBE_TOLERANCE


def test_the_packaged_generative_model_recognises_minilm_through_float_noise(embedder) -> None:
    recorded = np.asarray(json.loads(packaged_file("generative-minilm.json").read_text())["embedder_probes"])
    noise = np.random.default_rng(0).uniform(-1, 1, recorded.shape) * PROBE_TOLERANCE / 10
    assert embedder.computes_like(recorded)
    assert embedder.computes_like(recorded + noise)  # what another CPU or library version gives


def test_another_model_or_another_dimension_does_not_pass_for_it(embedder) -> None:
    recorded = np.asarray(embedder._identity()["probes"])
    other = np.roll(recorded, 1, axis=1)  # the same numbers, computed differently
    assert not embedder.computes_like(other)
    assert not embedder.computes_like(recorded[:, :128])
    assert not embedder.computes_like(recorded + 2 * PROBE_TOLERANCE)


def test_the_model_files_digest_is_kept_until_a_file_is_rewritten(tmp_path, monkeypatch) -> None:
    """The digest keys every cache made for a model: a file rewritten with the same size and its old mtime put
    back must still change it (its ctime moves), while an untouched folder is not read again."""
    import os
    import time

    from vdbguard.embedders import Embedder, loading

    cache = tmp_path / "cache"
    monkeypatch.setenv("VDBGUARD_CACHE_DIR", str(cache))
    model = tmp_path / "model"
    model.mkdir()
    weights = model / "weights.bin"
    weights.write_bytes(b"a" * 64)
    first = Embedder(str(model)).files_digest
    assert not list(cache.glob("embedders/files-*"))  # just written: read again until it is older

    monkeypatch.setattr(loading, "RACY_SECONDS", 0.0)
    time.sleep(0.05)  # past any file system's timestamp granularity
    assert Embedder(str(model)).files_digest == first
    assert len(list(cache.glob("embedders/files-*"))) == 1

    kept = weights.stat()
    weights.write_bytes(b"b" * 64)
    os.utime(weights, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    time.sleep(0.05)
    rewritten = Embedder(str(model)).files_digest
    assert rewritten != first

    weights.write_bytes(b"a" * 64)
    time.sleep(0.05)
    assert Embedder(str(model)).files_digest == first  # the contents decide, whatever the file's times
