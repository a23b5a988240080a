"""Presidio must work with the network gone: a bare AnalyzerEngine() fetches files and fails here."""

import socket

import pytest

from vdbguard.detectors.presidio import PresidioDetector, name_gazetteer
from vdbguard.pii import PiiType


@pytest.fixture(scope="module")
def detector() -> PresidioDetector:
    return PresidioDetector()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("vdbguard tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def types_in(detector: PresidioDetector, text: str) -> set[PiiType]:
    return {d.pii_type for d in detector.detect(text)}


def test_detects_core_types_offline(detector: PresidioDetector, no_network: None) -> None:
    text = (
        "Patient Maria Gonzalez, email maria.gonzalez@example.org, phone (415) 555-0142, "
        "SSN 536-22-8147, card 4111 1111 1111 1111, was born on 12 March 1961 and takes metformin."
    )
    found = types_in(detector, text)
    expected = {
        PiiType.PERSON,
        PiiType.EMAIL,
        PiiType.PHONE,
        PiiType.SSN,
        PiiType.CREDIT_CARD,
        PiiType.DATE_OF_BIRTH,
        PiiType.MEDICAL,
    }
    assert expected <= found


def test_gazetteer_finds_names_in_lowercase_word_soup(detector: PresidioDetector) -> None:
    detections = detector.detect("invoice overdue gonzalez payment account")
    assert any(d.pii_type is PiiType.PERSON and d.value == "gonzalez" for d in detections)


def test_ordinary_text_is_clean(detector: PresidioDetector) -> None:
    assert types_in(detector, "The printer on the third floor keeps jamming after the update.") == set()


def test_gazetteer_excludes_common_english_words() -> None:
    names = name_gazetteer()
    assert len(names) > 5000
    assert {"smith", "gonzalez"} <= names
    assert not {"will", "the", "printer", "computer"} & names


def test_the_gazetteer_by_set_lookup_matches_presidios_own_deny_list() -> None:
    from presidio_analyzer import PatternRecognizer

    from vdbguard.corpus import human_sentences, synthetic_pii
    from vdbguard.detectors.presidio import GAZETTEER_SCORE, word_list_recognizer

    names = name_gazetteer()
    presidio = PatternRecognizer(
        supported_entity="NAME_GAZETTEER", deny_list=sorted(names), deny_list_score=GAZETTEER_SCORE
    )
    ours = word_list_recognizer("NAME_GAZETTEER", "NameGazetteerRecognizer", names, GAZETTEER_SCORE)
    texts = [item.text.lower() for item in synthetic_pii(150, seed=11)] + human_sentences("holdout")[:150]
    texts += ["smith2 _smith smith_ smith-jones O'Brien", "garcía garcia GARCIA\nmüller", "", "smith"]

    def spans(recognizer, text: str) -> list[tuple[int, int, float]]:
        found = recognizer.analyze(text=text, entities=["NAME_GAZETTEER"], nlp_artifacts=None)
        return sorted((r.start, r.end, r.score) for r in found)

    found = [spans(ours, text) for text in texts]
    assert found == [spans(presidio, text) for text in texts]
    assert sum(map(len, found)) > 100


def test_the_gazetteer_kept_on_disk_is_the_one_computed() -> None:
    from vdbguard.detectors.presidio import _gazetteer_names

    assert name_gazetteer() == _gazetteer_names()
    assert {"jennifer", "garcia"} <= name_gazetteer() and "will" not in name_gazetteer()


def test_the_detector_skips_transformers_pipelines_and_leaves_them_importable() -> None:
    """Presidio's import of transformers and its pipelines is ~3 s of a scan's start for an engine vdbguard never
    runs, and torch's another 1.3 s for a GPU it never uses: none is imported, and each imports afterwards."""
    import subprocess
    import sys

    program = (
        "import sys, transformers\n"
        "from vdbguard.detectors.presidio import PresidioDetector\n"
        "assert PresidioDetector().detect('Call Jane Roe at 555-0100')\n"
        "assert 'transformers.pipelines' not in sys.modules\n"
        "from transformers import pipeline\n"
        "assert 'transformers.pipelines' in sys.modules and callable(pipeline)\n"
    )
    subprocess.run([sys.executable, "-c", program], check=True, timeout=300)
    without_an_embedder = (
        "import sys\n"
        "from vdbguard.detectors.presidio import PresidioDetector\n"
        "assert PresidioDetector().detect('Call Jane Roe at 555-0100')\n"
        "assert 'transformers' not in sys.modules and 'torch' not in sys.modules\n"
        "import transformers, torch\n"
        "from transformers import pipeline\n"
        "assert callable(pipeline) and float(torch.ones(2).sum()) == 2.0\n"
        "assert PresidioDetector().detect('Call Jane Roe at 555-0100')\n"
    )
    subprocess.run([sys.executable, "-c", without_an_embedder], check=True, timeout=300)
