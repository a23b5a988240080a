"""``detect_many`` (spaCy's pipe over a batch) finds exactly what ``detect`` finds text by text."""

from __future__ import annotations

from vdbguard.corpus import human_sentences, synthetic_pii
from vdbguard.detectors.presidio import WINDOW, PresidioDetector


def test_detect_many_matches_detect_text_by_text() -> None:
    detector = PresidioDetector()
    texts = [item.text for item in synthetic_pii(40, seed=3)] + human_sentences("holdout")[:20]
    texts += ["", "   ", "maren olsgaard password reset account smith", "born 12/03/1981 ssn 078-05-1120"]
    texts.append(("Call Jane Roe at 555-0100. " * (WINDOW // 20))[: WINDOW + 500])  # two windows
    batched = detector.detect_many(texts)
    assert batched == [detector.detect(text) for text in texts]
    assert sum(map(bool, batched)) > 40  # the PII sentences are found, so equality is not trivially empty
