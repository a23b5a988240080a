"""Locations go into reports and logs: credentials must not."""

import time

import pytest

from vdbguard import credentials
from vdbguard.credentials import (
    credential_query_parameters,
    redact_location,
    redact_url,
    redact_userinfo,
    remember_settings,
    safe_text,
    scrub,
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


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('{"password": "x", "user": "app"}', '{"password": ***, "user": "app"}'),
        ("{'api_key': 'ab', 'timeout': 5}", "{'api_key': ***, 'timeout': 5}"),
        ('body {\\"password\\": \\"x\\"}', 'body {\\"password\\": ***}'),
        ("--option password=x --collection c", "--option password=*** --collection c"),
        ("host=db password=x user=app", "host=db password=*** user=app"),
        ("PGPASSWORD=x psql -h db", "PGPASSWORD=*** psql -h db"),
        ("GET /v1/search?access_token=ab failed", "GET /v1/search?access_token=*** failed"),
        ("https://db:8000/v1?region=eu&token=ab", "https://db:8000/v1?region=eu&token=***"),
        ("HTTP 401, Authorization: Bearer ab", "HTTP 401, Authorization: ***"),
        ("connecting as app:x@db.example.com:5432", "connecting as app:***@db.example.com:5432"),
        ("failed for 'app:x@db:5432'", "failed for 'app:***@db:5432'"),
        ("http://app:x@db:8000", "http://***@db:8000"),
    ],
)
def test_a_short_password_is_masked_where_it_stands_as_a_credential(text: str, shown: str) -> None:
    """One or two characters are masked by where they stand, known or not: a field's value, a URL's userinfo."""
    assert redact_userinfo(text) == shown


def test_words_that_only_look_like_credential_fields_are_kept() -> None:
    text = "author: Ada, max_tokens=5, tokenizer: bert, at 12:30 see http://db:8000/v1 or ada@example.com"
    assert redact_userinfo(text) == text


def test_a_remembered_short_secret_is_masked_in_place_and_nowhere_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client library may quote a short password or header value anywhere: in a credential's place it is
    masked in every form, as a word of the message it is not."""
    monkeypatch.setattr(credentials, "_known", set())
    monkeypatch.setattr(credentials, "_known_short", set())
    remember_settings({"url": "http://app:q@@db:5432", "headers": {"X-Custom": "Zz"}})
    for message in (
        "OperationalError: connection to app:q@@db:5432 refused",
        "OperationalError: connection to app:q%40@db:5432 refused",
        "connect() got {'user': 'app', 'pw': 'q@'} and {'X-Custom': 'Zz'}",
        'request headers {"X-Custom": "Zz"}',
        "sent X-Custom=Zz&x=1",
    ):
        shown = scrub_known(message)
        assert "q@" not in shown and "q%40" not in shown and "Zz" not in shown, shown
        assert safe_text(message) == redact_userinfo(shown)
    assert scrub_known("Zzz: q@ or Zz and q@b.c") == "Zzz: q@ or Zz and q@b.c"


def test_a_short_given_secret_is_masked_in_place_below_shortest() -> None:
    text = "about: 'ab', app:ab@host, key=ab; abc"
    assert scrub(text, ["ab"], shortest=4) == "about: '***', app:***@host, key=***; abc"
    assert scrub(text, ["ab"], shortest=1) == "***out: '***', app:***@host, key=***; ***c"


def test_redaction_takes_linear_time_on_long_words() -> None:
    start = time.perf_counter()
    for text in ("password" * 10_000, "a:" * 10_000, "x@" * 10_000):
        assert redact_userinfo(text)
    assert time.perf_counter() - start < 3, "a long word in a log line cannot stall the run"
