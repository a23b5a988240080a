"""Locations go into reports and logs: credentials must not."""

import pytest

from vdbguard.credentials import redact_location


@pytest.mark.parametrize(
    ("location", "secret"),
    [
        ("http://admin:s3cretpw@127.0.0.1:8000", "s3cretpw"),
        ("postgresql://app:s3cretpw@db:5432/rag?sslmode=require", "s3cretpw"),
        ("https://idx.svc.pinecone.io?api_key=s3cretpw", "s3cretpw"),
        ("host=db port=5432 password=s3cretpw user=app", "s3cretpw"),
        ("host=db password='s3cret pw' user=app", "s3cret pw"),
    ],
)
def test_credentials_never_survive(location: str, secret: str) -> None:
    redacted = redact_location(location)
    assert secret not in redacted
    assert redacted  # something is left to tell the user where the store was


def test_plain_paths_are_untouched() -> None:
    assert redact_location("/data/chroma") == "/data/chroma"
