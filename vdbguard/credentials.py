"""Credential scrubbing: what may be printed, logged or stored in a report about a store and its errors.

A core module: it imports only the standard library, so connectors, the CLI and reports can all use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
_USERINFO_IN_URL = re.compile(r"//[^/@]*@")  # the string is one URL: its userinfo may hold anything but / and @
_USERINFO_IN_TEXT = re.compile(r"//[^/@\s]*@")  # free text: whitespace ends a URL
_KEYWORD_SECRET = re.compile(r"(?i)\b(password|passwd|api_key|apikey|token)\s*=\s*(\'[^\']*\'|\S+)")


def scrub(text: str, secrets: Iterable[str | None], *, shortest: int = 1) -> str:
    """``text`` with every known secret (API key, token, password) of at least ``shortest`` characters masked."""
    for secret in secrets:
        if secret and len(secret) >= shortest:
            text = text.replace(secret, MASK)
    return text


def redact_userinfo(text: str) -> str:
    """Free text (an error message) with the ``user:password@`` part of any URL in it masked."""
    return _USERINFO_IN_TEXT.sub(f"//{MASK}@", text)


def redact_url(url: str) -> str:
    """A URL as given by the user, with its ``user:password@`` part masked, for error messages."""
    return _USERINFO_IN_URL.sub(f"//{MASK}@", url)


def strip_userinfo(url: str) -> str:
    """A URL as given by the user, with no ``user:password@`` part: to connect as nobody."""
    return _USERINFO_IN_URL.sub("//", url)


def redact_location(location: str) -> str:
    """A URL without user, password or query string, safe to print and to store in reports.

    libpq keyword strings (``host=db password=...``) lose their password the same way.
    """
    parts = urlsplit(location)
    if not parts.scheme or not parts.netloc:
        return _KEYWORD_SECRET.sub(rf"\1={MASK}", location)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
