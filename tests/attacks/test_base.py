"""Each attack declares its settings once, as dataclass fields: the constructor, save, load and the verdict key
all read them from there."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from vdbguard.attacks import attack_classes
from vdbguard.attacks.adversarial_decoding import AdversarialDecoding
from vdbguard.attacks.base import Attack
from vdbguard.attacks.gradient import GradientInversion

ATTACKS = sorted(attack_classes().items())


def _saved(attack: Attack) -> dict[str, object]:
    return json.loads(json.dumps({name: getattr(attack, name) for name in attack.settings()}))


@pytest.mark.parametrize(("name", "cls"), ATTACKS, ids=[name for name, _ in ATTACKS])
def test_every_setting_is_a_constructor_argument_that_save_and_load_keep(name: str, cls: type[Attack], tmp_path: Path):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    assert cls.settings(), f"{name} declares no settings"
    assert set(cls.settings()) <= {n for n, f in fields.items() if f.init}
    attack = cls(threshold=0.123)
    attack.write_config(tmp_path)
    loaded, config = cls.from_config(tmp_path)
    assert _saved(loaded) == _saved(attack) and loaded.threshold == 0.123
    assert set(cls.settings()) <= set(config), "save keeps every setting under its own name"


def test_a_setting_saved_before_it_existed_takes_its_default(tmp_path: Path) -> None:
    GradientInversion(steps=7).write_config(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    del config["candidates"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    loaded, _ = GradientInversion.from_config(tmp_path)
    assert (loaded.steps, loaded.candidates) == (7, GradientInversion().candidates)


def test_the_verdict_key_changes_with_any_setting_but_not_for_an_attack_at_its_defaults() -> None:
    default = AdversarialDecoding()
    assert default.verdict_settings() == default.metrics()
    wider = AdversarialDecoding(polish_words=32)
    assert "polish_words" not in wider.metrics(), "a setting the metrics do not say"
    assert wider.verdict_settings() == {**default.metrics(), "polish_words": 32}
    assert AdversarialDecoding(threshold=0.7).verdict_settings() == default.metrics(), "the key holds it apart"


def test_bad_settings_are_refused_when_the_attack_is_built() -> None:
    with pytest.raises(ValueError, match="beam_width"):
        AdversarialDecoding(beam_width=0)
    with pytest.raises(ValueError, match="lengths"):
        GradientInversion(lengths=())
