"""A user's deny list, by word: its phrases in any case and punctuation, whole words only, the longest first."""

from __future__ import annotations

from vdbguard.detectors.recognizers.deny_list import DenyListRecognizer
from vdbguard.identifiers import Identifier


def test_phrases_are_found_whole_in_any_case_and_the_longest_wins() -> None:
    identifier = Identifier.model_validate(
        {"supported_entity": "CODENAME", "deny_list": ["Blue Falcon", "Blue Falcon Two", "Orca"]}
    )
    recognizer = DenyListRecognizer(identifier)
    text = "BLUE-falcon two met orca, not Orcas or blue falconry."
    found = [text[r.start : r.end] for r in recognizer.analyze(text, [str(identifier.pii_type)])]
    assert found == ["BLUE-falcon two", "orca"]
