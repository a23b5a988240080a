"""Passwords in URLs (``scheme://user:password@host``), reported as secrets: the password is the secret; always
masked."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult

from vdbguard.credentials import split_userinfo
from vdbguard.detectors.entities import SECRET_ENTITY

URL_PASSWORD_SCORE = 0.85  # below detect-secrets' 0.9: where both find a password, its finding is the one kept
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s<>\"'`]+", re.IGNORECASE)


def url_passwords(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of the password in each ``scheme://user:password@host`` of ``text``, read as
    ``credentials.split_userinfo`` reads a URL (its userinfo ends at the last ``@`` before the query), so a
    password holding ``@``, ``!`` or ``$`` is found whole; detect-secrets' pattern stops at those."""
    if "://" not in text:
        return
    for match in _URL.finditer(text):
        url = match.group().rstrip(".,;:!?)]}")
        userinfo = split_userinfo(url).userinfo
        if not userinfo or ":" not in userinfo:
            continue
        user, _, password = userinfo.partition(":")
        if "/" in user or not password:  # an "@" in a path ("host/a:b@c") is no userinfo
            continue
        start = match.start() + url.index("://") + 3 + len(user) + 1
        yield start, start + len(password)


class UrlCredentialsRecognizer(EntityRecognizer):
    def __init__(self) -> None:
        super().__init__(supported_entities=[SECRET_ENTITY], name="UrlCredentialsRecognizer")

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        metadata = {RecognizerResult.RECOGNIZER_NAME_KEY: self.name}
        return [
            RecognizerResult(SECRET_ENTITY, start, end, URL_PASSWORD_SCORE, recognition_metadata=dict(metadata))
            for start, end in url_passwords(text)
        ]
