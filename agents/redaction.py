"""Scrub API keys and credentials out of text before it is stored or shown.

Two layers: the exact secrets we know (the configured key, registered at start-up, also in
the escaped forms error texts quote it in) and patterns for credentials we don't (headers,
`api_key=` assignments, `user:password@` in URLs, key-shaped strings).
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"
# Shorter "secrets" would blank out ordinary words and ids all over the audit log.
MIN_SECRET_LENGTH = 8

_registered: set[str] = set()
_registered_lock = threading.Lock()

# `Authorization: Bearer xyz`, `"authorization": "Basic xyz"`: the scheme goes too.
_AUTH_HEADER = re.compile(
    r"""(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?)"""
    r"""(?:(?:bearer|basic|token|digest)\s+)?[^\s"',;}]+"""
)
# A bare `Bearer <token>`; the token must hold a digit or be long, so "bearer bonds" stays.
_BEARER = re.compile(
    r"(?i)(\bbearer\s+)(?=[A-Za-z0-9._~+/=-]*\d|[A-Za-z0-9._~+/=-]{20})[A-Za-z0-9._~+/=-]{8,}"
)
# `api_key=...`, `apikey: ...`, `"api_key": "..."`, `MISTRAL_API_KEY=...`, `client_secret=...`.
_ASSIGNMENT = re.compile(
    r"""(?i)(\b(?:[a-z0-9]+[_-])*(?:api[_-]?key|access[_-]?token|auth[_-]?token|"""
    r"""secret[_-]?key|client[_-]?secret|password)["']?\s*[:=]\s*["']?)"""
    r"""(?!\[REDACTED\])[^\s"',;}&]+"""
)
# `scheme://user:password@host` (a proxy in MISTRAL_BASE_URL): httpx quotes the URL whole in its
# errors. Greedy up to the last `@` before the path, so an unescaped `@` in a password goes too.
# The scheme starts where no scheme character precedes it: otherwise every one of a long run
# of such characters is a candidate start, and a long message takes quadratic time.
_URL_USERINFO = re.compile(r"""(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*://)[^\s/?#"'<>\\]+@""")
# OpenAI-style keys: sk-..., sk-proj-...
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")
# Mistral keys are 32 random alphanumerics; ids and words never form such a run.
_LONG_RUN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{32,}(?![A-Za-z0-9])")


def register_secret(value: str | None) -> None:
    """Redact `value` everywhere in this process from now on (ignored when too short)."""
    if value:
        with _registered_lock:
            _registered.update(_written_forms(value.strip()))


@functools.lru_cache(maxsize=64)  # the same few secrets, on every audit event
def _written_forms(secret: str) -> frozenset[str]:
    # Error texts quote values escaped: httpx's `Illegal header value b'Bearer ab\ncd'`, a
    # repr() in a traceback, JSON in a response body. The plain text would match none of them.
    if len(secret) < MIN_SECRET_LENGTH:
        return frozenset()
    return frozenset(
        {
            secret,
            repr(secret)[1:-1],
            repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
            json.dumps(secret)[1:-1],
        }
    )


def _looks_like_key(match: re.Match[str]) -> str:
    # Random keys hold digits or inner capitals; a long (German, capitalised) word has neither.
    run = match.group(0)
    inner = run[1:]
    if any(c.isdigit() for c in run) or (any(c.isupper() for c in inner) and not inner.isupper()):
        return REDACTED
    return run


def _known(secrets: Iterable[str]) -> tuple[str, ...]:
    # Longest first, so a secret that contains another is removed whole.
    with _registered_lock:
        known = _registered.union(*(_written_forms(s) for s in secrets if s))
    return tuple(sorted(known, key=len, reverse=True))


def _redact(text: str, known: tuple[str, ...]) -> str:
    if len(text) < MIN_SECRET_LENGTH:
        return text  # every secret and pattern is at least this long: the common fast path
    for secret in known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    text = _AUTH_HEADER.sub(_keep_label, text)
    text = _BEARER.sub(_keep_label, text)
    text = _ASSIGNMENT.sub(_keep_label, text)
    text = _SK_KEY.sub(REDACTED, text)
    return _LONG_RUN.sub(_looks_like_key, text)


def _keep_label(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with known secrets and anything credential-shaped replaced by [REDACTED]."""
    return _redact(text, _known(secrets))


def redact_data(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of `value` with every string inside dicts, lists and tuples redacted (keys too)."""
    return _redact_data(value, _known(secrets))


def _redact_data(value: Any, known: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _redact(value, known)
    if isinstance(value, dict):
        return {_redact_data(k, known): _redact_data(v, known) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_data(v, known) for v in value]
    if isinstance(value, tuple):
        return tuple(_redact_data(v, known) for v in value)
    return value
