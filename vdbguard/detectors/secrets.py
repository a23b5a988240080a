"""Secrets in text (API keys, tokens, private keys, passwords in assignments), found by detect-secrets' plugins.

detect-secrets is made to scan code: each of its regex plugins knows one kind of credential, its keyword plugin
reads ``password = ...`` in many languages, and its entropy plugins read quoted strings. Tickets and chats do
not quote a token, so here a long unquoted run of letters and digits counts when it is as random as the
entropy plugins' own cut-offs say a secret is. ``recognizers.secrets`` puts it in Presidio's registry.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

_LEFT_OUT = {"Public IP (ipv4)"}  # an address, not a credential: PII of another kind
_CANDIDATE = re.compile(r"[A-Za-z0-9+/_.-]{16,}={0,2}")
# a password told in prose ("my password is Hunter2-Planted!"): detect-secrets' keyword plugin reads assignments
_TOLD = re.compile(r"(?i)\b(?:password|passwd|passcode|passphrase|pwd)\b\s*(?:is|was|:|=)\s*[\"']?([^\s\"']{6,})")
_BASE64_LIMIT, _HEX_LIMIT = 4.5, 3.0  # detect-secrets' defaults for its entropy plugins


@lru_cache(maxsize=1)
def _plugins() -> tuple[Any, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin

    return tuple(
        plugin()
        for secret_type, plugin in sorted(get_mapping_from_secret_type_to_class().items())
        if secret_type not in _LEFT_OUT and not issubclass(plugin, HighEntropyStringsPlugin)
    )


@lru_cache(maxsize=1)
def _entropy() -> tuple[Any, Any]:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

    return Base64HighEntropyString(limit=_BASE64_LIMIT), HexHighEntropyString(limit=_HEX_LIMIT)


def find_secrets(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of each secret in ``text``, as detect-secrets names its kind."""
    for plugin in _plugins():
        for value in set(plugin.analyze_string(text)):
            if len(value) < 6:  # a keyword plugin's capture of a placeholder, or a token's prefix alone
                continue
            for match in re.finditer(re.escape(value), text):
                yield match.start(), match.end(), plugin.secret_type
    for match in _TOLD.finditer(text):
        value = match.group(1).rstrip(".,;")
        if re.search(r"[\d\W_]", value) or value != value.lower():  # not a plain word ("password is required")
            yield match.start(1), match.start(1) + len(value), "Password in prose"
    base64, hexadecimal = _entropy()
    for match in _CANDIDATE.finditer(text):
        token = match.group().strip(".-_")
        if not (re.search(r"\d", token) and re.search(r"[A-Za-z]", token)):
            continue
        if any(_random(part, base64, hexadecimal) for part in {token, *re.split(r"[-_.]", token)} if len(part) >= 16):
            start = match.start() + match.group().index(token)
            yield start, start + len(token), "High Entropy String"


def _random(part: str, base64: Any, hexadecimal: Any) -> bool:
    """As random as detect-secrets' entropy plugins say a secret is: hex by the hex cut-off, the rest by base64's."""
    if re.fullmatch(r"[0-9a-fA-F]+", part):
        return hexadecimal.calculate_shannon_entropy(part) > _HEX_LIMIT
    return base64.calculate_shannon_entropy(part) > _BASE64_LIMIT
