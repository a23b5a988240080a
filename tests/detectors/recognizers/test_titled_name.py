"""A capitalised word after a personal title is a person; a street's "Dr" is not a doctor."""

from __future__ import annotations

import pytest

from vdbguard.detectors.recognizers.titled_name import TitledNameRecognizer


def _names(text: str) -> list[str]:
    return [text[r.start : r.end] for r in TitledNameRecognizer().analyze(text, ["PERSON"])]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("See if it is time to print something. (Ms Calbo, account 12345678)", ["Ms Calbo"]),
        ("Block until the graph materializes. Assigned to Mrs van der Wal.", ["Mrs van der Wal"]),
        ("Dr. J. R. Smith-Jones said so", ["Dr. J. R. Smith-Jones"]),
        ("Thanks, Dr. Ágnes Kovács!", ["Dr. Ágnes Kovács"]),
        ("Mr. and Mrs. Smith came", ["Mrs. Smith"]),
        ("Prof Ng's lab and Mrs Jones' dog", ["Prof Ng", "Mrs Jones"]),
        ("YOUR FUTURE by Miss Fortune ARIES (March)", ["Miss Fortune"]),
    ],
)
def test_a_title_names_the_capitalised_words_after_it(text: str, names: list[str]) -> None:
    assert _names(text) == names


@pytest.mark.parametrize(
    "text",
    [
        "Office: 12 Tasman Dr Auckland",
        "Wilson Electronics, 3301 E. Deseret Dr. Saint George UT US 84790",
        "Dear Sir or Madam, the MS Word file is attached",
        "the mr and ms fields are optional",
    ],
)
def test_no_person_without_a_title_before_a_capitalised_word(text: str) -> None:
    assert _names(text) == []
