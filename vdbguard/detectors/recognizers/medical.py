"""Medical conditions and drugs, by Presidio's deny list over ``vdbguard.data.medical``."""

from __future__ import annotations

from vdbguard.data.medical import CONDITIONS, DRUGS
from vdbguard.detectors.recognizers.declared import DeclaredPatternRecognizer


class MedicalTermRecognizer(DeclaredPatternRecognizer):
    ENTITY = "MEDICAL"
    DENY_LIST = (*CONDITIONS, *DRUGS)
