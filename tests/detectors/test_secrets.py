"""Secrets in text: each kind detect-secrets knows, planted in prose, is found; near misses are not."""

from __future__ import annotations

import pytest

from vdbguard.detectors.presidio import PresidioDetector
from vdbguard.detectors.secrets import find_secrets
from vdbguard.pii import PiiType

PLANTED = {
    "AWS access key": ("Use AKIAIOSFODNN7EXAMPLE for the backup bucket.", "AKIAIOSFODNN7EXAMPLE"),
    "private key": ("Pasted below:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow...", "BEGIN RSA PRIVATE KEY"),
    "keyword assignment": ('config says db_password = "Tr0ub4dor&3xyz" in prod', "Tr0ub4dor&3xyz"),
    "password told in prose": ("The wifi password is Hunter2-Planted! for guests.", "Hunter2-Planted!"),
    "random token": ("Deploy with sk-live-4f9c2a7e1b3d5f60a8c9e2b4d6f8a0c1 now.", "4f9c2a7e1b3d5f60a8c9e2b4d6f8a0c1"),
    "JSON web token": (
        "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
    ),
    "Slack token": ("The bot uses xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx now.", "xoxb-"),
    "Stripe key": ("Charge with sk_live_51H8abcdefghijklmnopqrstu in the test.", "sk_live_51H8abcdefghijklmnopqrstu"),
}
NEAR_MISSES = [
    "A password is required to log in, and passwords expire monthly.",
    "Order 550e8400-e29b-41d4-a716-446655440000 shipped on Friday.",
    "See https://example.com/docs/getting-started-guide-for-new-users for details.",
    "Ticket SR-46286-ABCDEF-20261128 was closed by the night shift.",
    "The AKIA prefix marks an AWS access key id, and sk_live a Stripe key.",
    "Internationalization and telecommunications are long words, nothing more.",
]


@pytest.mark.parametrize("kind", PLANTED)
def test_each_kind_of_planted_secret_is_found(kind: str) -> None:
    text, value = PLANTED[kind]
    found = [text[start:end] for start, end, _ in find_secrets(text)]
    assert any(value in secret or secret in value for secret in found), (kind, found)


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_secrets(text: str) -> None:
    assert [text[start:end] for start, end, _ in find_secrets(text)] == []


def test_the_detector_reports_secrets_as_their_own_type() -> None:
    detector = PresidioDetector()
    text, value = PLANTED["password told in prose"]
    assert [(d.pii_type, d.value) for d in detector.detect(text)] == [(PiiType.SECRET, value)]
