"""Locations go into reports and logs: credentials must not."""

import pytest

from vdbguard.credentials import (
    credential_query_parameters,
    redact_location,
    redact_url,
    redact_userinfo,
    remember_settings,
    safe_text,
    scrub_known,
    split_userinfo,
    strip_userinfo,
)


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


HOSTILE_PASSWORDS = ["Pl/anted@Pa:ss9", "Pl%2FantedPct9", "Pläss/wörd@9", "pa:ss@w/rd?x"]


@pytest.mark.parametrize("password", HOSTILE_PASSWORDS)
@pytest.mark.parametrize("scheme", ["http", "postgresql", "grpc"])
def test_a_hostile_password_never_survives_redaction(password: str, scheme: str) -> None:
    url = f"{scheme}://admin:{password}@db.example.com:5432/rag?sslmode=require"
    secret_parts = [part for part in password.replace("@", "/").replace(":", "/").split("/") if len(part) > 2]
    for shown in (redact_url(url), redact_userinfo(f"failed to reach '{url}': refused"), redact_location(url)):
        assert not [part for part in secret_parts if part in shown], shown
        assert "db.example.com" in shown


def test_userinfo_is_split_at_the_last_at_sign_before_the_query() -> None:
    split = split_userinfo("http://admin:pa/ss@w:rd@127.0.0.1:9/path?user=a@b")
    assert (split.userinfo, split.rest) == ("admin:pa/ss@w:rd", "http://127.0.0.1:9/path?user=a@b")
    assert split.password == "pa/ss@w:rd"
    assert split_userinfo("http://admin:pa%2Fss@host").password == "pa/ss"
    assert split_userinfo("http://host:9/x?email=a@b.c").userinfo is None
    assert strip_userinfo("admin:p@ss@host:9") == "host:9"


@pytest.mark.parametrize("name", ["password", "api_key", "apikey", "token", "access_token", "X-Api-Key", "sig"])
def test_credential_query_parameters_are_masked_and_named(name: str) -> None:
    url = f"https://idx.example.com/v1?region=eu&{name}=QuerySecret9#top"
    assert "QuerySecret9" not in redact_url(url)
    assert "region=eu" in redact_url(url)
    assert "QuerySecret9" not in redact_userinfo(f"GET {url} failed")
    assert credential_query_parameters(url) == [name]


def test_keyword_secrets_in_free_text_are_masked() -> None:
    text = "connection failed: host=db password='s3 cret' token: abcdef123 user=app"
    assert redact_userinfo(text) == "connection failed: host=db password=*** token: *** user=app"


def test_a_remembered_secret_is_masked_in_any_text_in_any_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client library's own message can quote a secret anywhere: remembered by value, it is masked there too."""
    monkeypatch.setenv("QDRANT_API_KEY", "env-key-Remembered7")
    remember_settings({"url": "http://admin:Rem/emb@red9@host:1", "headers": {"X-Custom": "HeaderVal7"}})
    message = (
        "ValueError: bad port in 'http://admin:Rem/emb@red9@host:1'; also Rem%2Femb%40red9 and HeaderVal7; "
        "key env-key-Remembered7"
    )
    shown = safe_text(message)
    for secret in ("Rem/emb@red9", "Rem%2Femb%40red9", "HeaderVal7", "env-key-Remembered7", "emb@red9"):
        assert secret not in shown, shown
    assert "bad port" in shown and "host" in shown
    assert scrub_known("a b c") == "a b c", "short secrets are not masked everywhere"
