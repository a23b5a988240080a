"""Passwords in URLs, read as a URL's userinfo is, whole even when they hold "@", "!" or "$"."""

from __future__ import annotations

from vdbguard.detectors.recognizers.url_credentials import UrlCredentialsRecognizer, url_passwords


def test_a_password_with_at_signs_is_found_whole() -> None:
    text = "connect to postgresql://app:p@ss!w$rd@db.internal:5432/main, then"
    assert [text[s:e] for s, e in url_passwords(text)] == ["p@ss!w$rd"]
    (found,) = UrlCredentialsRecognizer().analyze(text, ["SECRET"])
    assert (found.entity_type, text[found.start : found.end]) == ("SECRET", "p@ss!w$rd")


def test_no_password_no_finding() -> None:
    for text in ("https://example.com/a:b@c", "https://user@host/x", "ftp://anonymous:@host", "plain text"):
        assert list(url_passwords(text)) == [], text
