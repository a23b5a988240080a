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
