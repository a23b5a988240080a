"""Credential scrubbing: what may be printed, logged or stored in a report about a store and its errors.

Two defences, both needed. URLs are parsed the way a person wrote them (a password may hold ``/``, ``@`` or
``:``), so their userinfo and credential-like query parameters are masked wherever a URL is shown, as is the
value of any credential field in free text (``password=x``, ``"api_key": "ab"``). And every secret the run knows
(a URL's password, a key read from the environment or passed as an option) is remembered and replaced by value
in whatever is printed, including client libraries' own error messages: everywhere when it is long enough to
be told from ordinary text, otherwise only where it stands as a credential (``user:x@host``, ``'x'``, ``=x``).

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
SHORTEST_SECRET = 3  # a shorter known secret is masked only in place (see mask_in_place): everywhere would garble

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
_URL_IN_TEXT = re.compile(r"(?<![A-Za-z])[A-Za-z][A-Za-z0-9+.-]*://\S+")  # from a word's start: linear time
# a credential field and its value in free text: password=x, password: 'x', "api_key": "ab" (also in an escaped
# JSON string), PGPASSWORD=x, ?access_token=ab, Authorization: Bearer ab
_KEYWORD_SECRET = re.compile(
    r"""(?ix)
    (?P<field>(?<![\w.-])\\?["']?[\w.-]*?
        (?:password|passwd|passphrase|pwd|secret|secret[_-]?key|token|api[_-]?key|apikey|access[_-]?key
        |private[_-]?key|authorization|auth)
        \\?["']?\s*[=:]\s*)
    (?:(?:bearer|basic|digest|token)\s+)?(?:(?P<quote>\\?["']).*?(?P=quote)|\S+)
    """
)
# a URL's userinfo with no scheme before it (user:x@host): its password, up to the last @ of the word
_BARE_USERINFO = re.compile(r"(?<![\w.%+-])(?P<user>[\w.%+-]+):(?!//)\S+@(?=[\w\[])")
_WORD_WITH_AT = re.compile(r"(?<!\S)[^\s@]*@\S*")  # where _BARE_USERINFO is looked for, each word once

_known: set[str] = set()
_known_short: set[str] = set()  # shorter than SHORTEST_SECRET, in any form: masked only in place
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
    """Free text (an error message, a log line) with every URL in it redacted, a ``user:password@host`` without
    a scheme too, and the value of every credential field masked, however short (``password=x``)."""
    text = _URL_IN_TEXT.sub(lambda m: redact_url(m.group()), text)
    text = _WORD_WITH_AT.sub(lambda m: _BARE_USERINFO.sub(rf"\g<user>:{MASK}@", m.group()), text)
    return _mask_fields(text)


def _mask_fields(text: str) -> str:
    return _KEYWORD_SECRET.sub(rf"\g<field>{MASK}", text)


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
        return _mask_fields(location)
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
    for secret in secrets:
        if not isinstance(secret, str) or not secret:
            continue
        forms = {secret, quote(secret, safe=""), quote_plus(secret, safe=""), unquote(secret), repr(secret)[1:-1]}
        short = len(secret) < SHORTEST_SECRET
        with _known_lock:
            for form in filter(None, forms):
                (_known_short if short or len(form) < SHORTEST_SECRET else _known).add(form)


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
    """``text`` with ``secrets`` and every remembered secret masked: those of at least ``shortest`` characters
    everywhere, shorter ones in place."""
    given = [secret for secret in secrets if secret]
    for secret in sorted((s for s in given if len(s) >= shortest), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return scrub_known(mask_in_place(text, [s for s in given if len(s) < shortest]))


def scrub_known(text: str) -> str:
    """``text`` with every remembered secret masked, the longest first (one may hold another); a short one only
    in place."""
    with _known_lock:
        known = sorted(_known, key=len, reverse=True)
        short = list(_known_short)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return mask_in_place(text, short)


def mask_in_place(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` masked where it stands as a credential, not wherever it occurs: as a
    URL's password or user (``user:x@host``, ``//x@host``), a quoted value (``'password': 'x'``, ``"x"``) or an
    assigned one (``password=x``, ``?token=x&``). Free text's ``password: x`` is ``redact_userinfo``'s."""
    alternatives = "|".join(re.escape(secret) for secret in sorted(set(secrets), key=len, reverse=True) if secret)
    if not alternatives:
        return text
    secret = f"(?:{alternatives})"
    in_place = re.compile(
        rf"(?<=[:/]){secret}(?=@)"
        rf"|(?<='){secret}(?=')|(?<=\"){secret}(?=\")"
        rf"|(?:(?<==)|(?<==\s)){secret}(?=$|[\s&,;)\]}}'\"])"
    )
    return in_place.sub(MASK, text)


def safe_text(text: str) -> str:
    """What may be printed or logged: URLs redacted and every remembered secret masked."""
    return redact_userinfo(scrub_known(text))
