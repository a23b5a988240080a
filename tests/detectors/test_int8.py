"""The tagger in int8: each row's result its own whatever the batch holds, the names float32 finds, bounds that belong
to the shipped tagger."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from tests.detectors.test_real_text_fixture import fixture_lines  # noqa: E402
from vdbguard.detectors import int8, tagger  # noqa: E402
from vdbguard.detectors.tagger import TAGGER_DIR, PersonTagger, build_model, tagger_digest  # noqa: E402
from vdbguard.errors import VdbguardError  # noqa: E402

pytestmark = pytest.mark.skipif(not int8.int8_kernel(), reason="torch has no int8 kernel on this CPU")


def test_a_rows_result_does_not_depend_on_the_rows_beside_it() -> None:
    """Torch's dynamic kernel scales a batch by its largest value; the bounds and the edge row fix the scale."""
    generator = torch.Generator().manual_seed(0)
    linear = torch.nn.Linear(64, 32)
    rows = torch.randn(6, 64, generator=generator)
    loud = rows.clone()
    loud[0] *= 40  # one row far beyond the others, as an outlier text would be
    bounded = int8.BoundedInt8Linear(linear, bounds=rows[1:].abs().amax(0))
    together = bounded(loud)
    for i in range(1, 6):
        assert torch.equal(bounded(loud[i : i + 1])[0], together[i])
    assert torch.allclose(together[1:], linear(rows[1:]), atol=0.05)

    unbounded = torch.ao.nn.quantized.dynamic.Linear(64, 32)
    unbounded.set_weight_bias(bounded.packed.unpack()[0], linear.bias.detach())
    assert not torch.equal(unbounded(loud)[1:], unbounded(rows[1:])), "what the bound is for"


def test_a_loud_channel_leaves_the_quiet_ones_their_resolution() -> None:
    """A few of MiniLM's channels run a hundred times the others, read by small weights; scaled by one bound for all,
    each row's largest value would be the loud channel's and the rest would round to a few steps."""
    generator = torch.Generator().manual_seed(1)
    linear = torch.nn.Linear(64, 32)
    rows = torch.randn(8, 64, generator=generator)
    rows[:, 0] *= 100
    with torch.no_grad():
        linear.weight[:, 0] /= 100
    per_channel = int8.BoundedInt8Linear(linear, bounds=rows.abs().amax(0))
    one_bound = int8.BoundedInt8Linear(linear, bounds=rows.abs().max().expand(64))
    exact = linear(rows)
    smoothed, unsmoothed = (per_channel(rows) - exact).abs().mean(), (one_bound(rows) - exact).abs().mean()
    assert smoothed < 0.03
    assert unsmoothed > 2 * smoothed


@pytest.fixture(scope="module")
def taggers() -> tuple[PersonTagger, PersonTagger]:
    return PersonTagger(bf16=False, int8=True), PersonTagger(bf16=False, int8=False)


def test_int8_is_the_default_wherever_the_tagger_runs_in_float32() -> None:
    """float32 costs 1.8 times version 6's CPU a text; bfloat16, where a CPU multiplies it natively, stays as it is."""
    assert PersonTagger(bf16=False).int8
    assert not PersonTagger(bf16=True).int8


def test_int8_finds_the_names_float32_finds(taggers: tuple[PersonTagger, PersonTagger]) -> None:
    """On the labelled real-text fixture (old quotations, glosses: borderline names); 99.8% of 3,000 training texts
    tag alike (``pipelines/int8_bounds.py --compare``)."""
    quick, exact = taggers
    assert quick.int8 and not exact.int8
    texts = [line["text"] for line in fixture_lines()]
    pairs = zip(quick.tag(texts), exact.tag(texts), strict=True)
    same = [[s[:2] for s in a.names] == [s[:2] for s in b.names] for a, b in pairs]
    assert sum(same) / len(same) >= 0.95, sum(same) / len(same)  # 0.981 measured (no scale per row: 0.972)


def test_a_texts_names_are_the_same_alone_and_in_a_batch(taggers: tuple[PersonTagger, PersonTagger]) -> None:
    quick, _ = taggers
    texts = [line["text"] for line in fixture_lines()][:200]
    together = quick.tag(texts)
    assert all(quick.tag([text])[0] == tagged for text, tagged in zip(texts, together, strict=True))


def test_bounds_are_measured_on_a_windows_tokens_not_its_padding(
    taggers: tuple[PersonTagger, PersonTagger], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a padded position carries never reaches a name, so it must not loosen the bounds (the shipped ones were
    measured before windows were padded): the same bounds with no padding and with much of it."""
    _, exact = taggers
    texts = [line["text"] for line in fixture_lines()][:40]
    measured = {}
    for step in (1, 64):
        monkeypatch.setattr(tagger, "LENGTH_STEP", step)
        measured[step] = int8.measure_bounds(exact.model, lambda: exact.tag(texts))
    for name, channels in measured[1].items():
        assert measured[64][name] == pytest.approx(channels, rel=1e-3), name


def test_the_shipped_bounds_belong_to_the_shipped_tagger_and_cover_its_layers(tmp_path) -> None:
    """Stale otherwise: python pipelines/int8_bounds.py after every retraining."""
    bounds = int8.load_bounds(TAGGER_DIR, tagger_digest(TAGGER_DIR))
    layers = json.loads((TAGGER_DIR / "training.json").read_text())["layers"]
    widths = {name: linear.in_features for name, _, _, linear in int8.encoder_linears(build_model(layers))}
    assert {name: len(channels) for name, channels in bounds.items()} == widths
    assert all(0 <= bound < 1000 for channels in bounds.values() for bound in channels)
    assert all(max(channels) > 0 for channels in bounds.values())
    saved = json.loads(int8.bounds_file(TAGGER_DIR).read_text())
    int8.bounds_file(tmp_path / "tagger").write_text(json.dumps({**saved, "tagger": "another"}))
    with pytest.raises(VdbguardError, match="another tagger"):
        int8.load_bounds(tmp_path / "tagger", tagger_digest(TAGGER_DIR))
