"""Text-side redaction before embedding: replace detected PII with type placeholders, then embed.

For pipelines that embed text themselves, the cheapest defence is to never embed the secret:
``"Call Jane Doe at 555-0100"`` becomes ``"Call <PERSON> at <PHONE>"`` and no inversion attack can
recover from the vector what was never in it. It is the baseline SPARSE (Tsai et al.,
arXiv:2602.07090, 2026) compares vector-side defences against. Its limits are the detector's:
whatever the analyzer misses goes into the vector verbatim (on 200 of vdbguard's synthetic PII
sentences, 22 of 413 inserted values survived, mostly phone and account numbers), and it also
edits clean text (27 of 346 human-written lines, mostly place names taken for addresses), which
removes words a user might search for. Detection is vdbguard's offline Presidio analyzer
(:func:`vdbguard.detectors.presidio.build_analyzer`, wrapped by
:class:`~vdbguard.detectors.presidio.PresidioDetector`, which adds birth-date context and maps
entities to vdbguard's PII types); replacement is Presidio's anonymizer
(``pip install presidio-anonymizer``), which also resolves overlapping detections.

Not a :class:`~vdbguard.transforms.base.Transform`: it runs on text, before the embedder.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from vdbguard.errors import VdbguardError
from vdbguard.pii import PiiType


class Redactor:
    """Replace each detected PII span with ``placeholder.format(type=...)``, e.g. ``<EMAIL>``.

    ``types`` limits which PII types are redacted (default: all vdbguard knows); ``min_score``
    is the detector's confidence cut-off.
    """

    def __init__(
        self, min_score: float = 0.4, types: Iterable[PiiType | str] | None = None, placeholder: str = "<{type}>"
    ) -> None:
        try:
            from presidio_anonymizer import AnonymizerEngine
        except ImportError as exc:
            raise VdbguardError("text redaction needs presidio-anonymizer", "pip install presidio-anonymizer") from exc
        from vdbguard.detectors.presidio import PresidioDetector

        self.detector = PresidioDetector(min_score=min_score)
        self.types = None if types is None else frozenset(PiiType(t) for t in types)
        self.placeholder = placeholder
        self._engine = AnonymizerEngine()

    def redact(self, text: str) -> str:
        from presidio_anonymizer.entities import OperatorConfig, RecognizerResult

        detections = [d for d in self.detector.detect(text) if self.types is None or d.pii_type in self.types]
        if not detections:
            return text
        results = [RecognizerResult(d.pii_type.value, d.start, d.end, d.score) for d in detections]
        operators = {
            t.value: OperatorConfig("replace", {"new_value": self.placeholder.format(type=t.value)})
            for t in {d.pii_type for d in detections}
        }
        return self._engine.anonymize(text=text, analyzer_results=results, operators=operators).text

    def redact_many(self, texts: Sequence[str]) -> list[str]:
        return [self.redact(text) for text in texts]


@lru_cache(maxsize=1)
def _default_redactor() -> Redactor:
    return Redactor()


def redact(text: str) -> str:
    """``text`` with detected PII replaced by type placeholders (``<PERSON>``, ``<EMAIL>``, ...)."""
    return _default_redactor().redact(text)


def redact_many(texts: Sequence[str]) -> list[str]:
    return _default_redactor().redact_many(texts)
