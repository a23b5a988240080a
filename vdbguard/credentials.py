"""Credential scrubbing: what may be printed, logged or stored in a report about a store and its errors.

Two defences, both needed. URLs are parsed the way a person wrote them (a password may hold ``/``, ``@`` or
``:``), so their userinfo and credential-like query parameters are masked wherever a URL is shown. And every
secret the run knows (a URL's password, a key read from the environment or passed as an option) is
remembered and replaced by value in whatever is printed, including client libraries' own error messages.

A core module: it imports only the standard library, so connectors, the CLI and reports can all use it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit, urlunsplit

MASK = "***"
SHORTEST_SECRET = 3  # a shorter known secret is not replaced everywhere it occurs: it would garble every message

# environment variables that hold a store's or a transform's secret, read by connectors and transforms
SECRET_ENVIRONMENT = (
    "QDRANT_API_KEY",
    "PINECONE_API_KEY",
    "WEAVIATE_API_KEY",
    "MILVUS_TOKEN",
    "PGPASSWORD",
    "VDBGUARD_TRANSFORM_KEY",
)
# a setting, query parameter or header whose name says it holds a credential
SECRET_NAME = re.compile(
    r"(?i)(pass(word|wd)?$|^pwd$|secret|token|api[_-]?key|apikey|^key$|credential|auth|cookie|signature|^sig$)"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_KEYWORD_SECRET = re.compile(
    r"(?i)\b(password|passwd|pwd|api_key|apikey|api-key|token|secret)(\s*[=:]\s*)('[^']*'|\"[^\"]*\"|\S+)"
)

_known: set[str] = set()
_known_lock = threading.Lock()


@dataclass(frozen=True)
class SplitUrl:
    """A URL cut where a person meant it: ``userinfo`` (None without one), then the URL without it."""

    userinfo: str | None
    rest: str

    @property
    def password(self) -> str | None:
        if self.userinfo is None or ":" not in self.userinfo:
            return None
        return unquote(self.userinfo.partition(":")[2])


def split_userinfo(url: str) -> SplitUrl:
    """The userinfo of ``url`` ends at the last ``@`` before its query: ``http://u:pa/ss@host`` has the
    password ``pa/ss`` (a parser that follows RFC 3986 reads host ``u`` and port ``pa``).

    A URL with no ``scheme://`` is read as if it had one. A ``?`` or ``#`` in a password must be percent-encoded.
    """
    match = _SCHEME.match(url)
    start = match.end() if match else 0
    query = min((i for i in (url.find("?", start), url.find("#", start)) if i >= 0), default=len(url))
    at = url.rfind("@", start, query)
    if at < 0:
        return SplitUrl(None, url)
    return SplitUrl(url[start:at], url[:start] + url[at + 1 :])


def url_password(url: str) -> str | None:
    return split_userinfo(url).password


def redact_url(url: str) -> str:
    """A URL as given by the user, for messages: its userinfo and credential-like query parameters masked.

    Anything up to the last ``@`` may be userinfo here, since an unencoded ``?`` in a password cannot be told
    from a query: a query that holds ``@`` is masked with it."""
    match = _SCHEME.match(url)
    start = match.end() if match else 0
    at = url.rfind("@", start)
    return _mask_query(url if at < 0 else f"{url[:start]}{MASK}@{url[at + 1 :]}")


def strip_userinfo(url: str) -> str:
    """A URL as given by the user, with no ``user:password@`` part: to connect as nobody."""
    return split_userinfo(url).rest


def redact_userinfo(text: str) -> str:
    """Free text (an error message, a log line) with every URL in it redacted, and ``password=...`` masked."""
    return _KEYWORD_SECRET.sub(rf"\1\2{MASK}", _URL_IN_TEXT.sub(lambda m: redact_url(m.group()), text))


def _mask_query(url: str) -> str:
    head, sep, query = url.partition("?")
    if not sep:
        return url
    query, hash_sign, fragment = query.partition("#")
    parts = []
    for part in query.split("&"):
        name, eq, _ = part.partition("=")
        parts.append(f"{name}={MASK}" if eq and SECRET_NAME.search(unquote(name)) else part)
    return f"{head}?{'&'.join(parts)}{hash_sign}{fragment}"


def credential_query_parameters(url: str) -> list[str]:
    """The names of the query parameters of ``url`` that look like credentials."""
    query = urlsplit(split_userinfo(url).rest).query
    return [name for name, _ in parse_qsl(query, keep_blank_values=True) if SECRET_NAME.search(name)]


def redact_location(location: str) -> str:
    """A URL without user, password or query string, safe to print and to store in reports.

    libpq keyword strings (``host=db password=...``) lose their password the same way.
    """
    rest = redact_url(location).replace(f"{MASK}@", "", 1)
    parts = urlsplit(rest)
    if not _SCHEME.match(rest) or not parts.netloc:
        return _KEYWORD_SECRET.sub(rf"\1\2{MASK}", location)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or ""
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# -- secrets known by value ---------------------------------------------------------------------------


def remember_secret(*secrets: Any) -> None:
    """Mask these values (API keys, tokens, passwords) wherever vdbguard prints, logs or reports text."""
    forms = set()
    for secret in secrets:
        if not isinstance(secret, str) or len(secret) < SHORTEST_SECRET:
            continue
        forms |= {secret, quote(secret, safe=""), quote_plus(secret, safe=""), unquote(secret), repr(secret)[1:-1]}
    with _known_lock:
        _known.update(form for form in forms if len(form) >= SHORTEST_SECRET)


def remember_settings(settings: Mapping[str, Any]) -> None:
    """Remember the secrets among a connector's settings: credential-named values, header values, a URL's
    password and query credentials, and the secret environment variables they may fall back on."""
    for name, value in settings.items():
        if isinstance(value, Mapping):
            remember_secret(*(str(v) for v in value.values()))
        elif isinstance(value, str) and SECRET_NAME.search(name):
            remember_secret(value)
        elif isinstance(value, str) and name.endswith("url"):
            remember_secret(url_password(value))
            query = urlsplit(split_userinfo(value).rest).query
            remember_secret(*(v for k, v in parse_qsl(query) if SECRET_NAME.search(k)))
    remember_secret(*(os.environ.get(variable) for variable in SECRET_ENVIRONMENT))


def scrub(text: str, secrets: Iterable[str | None] = (), *, shortest: int = 1) -> str:
    """``text`` with ``secrets`` (at least ``shortest`` characters) and every remembered secret masked."""
    for secret in secrets:
        if secret and len(secret) >= shortest:
            text = text.replace(secret, MASK)
    return scrub_known(text)


def scrub_known(text: str) -> str:
    """``text`` with every remembered secret masked, the longest first (one may hold another)."""
    with _known_lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def safe_text(text: str) -> str:
    """What may be printed or logged: URLs redacted and every remembered secret masked."""
    return redact_userinfo(scrub_known(text))
