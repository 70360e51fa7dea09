"""Scrub API keys and credentials out of text before it is stored or shown.

Two layers: the exact secrets we know (the configured key, registered at start-up, also in
the escaped forms error texts quote it in) and patterns for credentials we don't (headers,
`api_key=` assignments, `user:password@` in URLs, key-shaped strings).
"""

from __future__ import annotations

import functools
import itertools
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

# The schemes an `Authorization` value may start with (the streaming redactor waits on them).
_SCHEMES = ("bearer", "basic", "token", "digest")
_SCHEME = "|".join(_SCHEMES)
# `Authorization: Bearer xyz`, `"authorization": "Basic xyz"`: the scheme goes too.
_AUTH_HEADER = re.compile(
    r"""(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?)"""
    rf"""(?:(?:{_SCHEME})\s+)?[^\s"',;}}]+"""
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
# A piece of a known key (a model that repeats half of it): 12 of its characters in a row
# cannot occur by chance, and a shorter run would hit ordinary words inside the key.
MIN_FRAGMENT_LENGTH = 12
_KEY_RUN = re.compile(rf"[A-Za-z0-9]{{{MIN_FRAGMENT_LENGTH},}}")
# What every shape above needs somewhere in the text: `://`, a label word, `sk-`, or a long
# run of key characters (a fragment's 12 or more, a key's 32).
_CREDENTIAL_MARKS = ("://", "authoriz", "bearer", "key", "token", "secret", "password", "sk-")


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
    # The words of a secret with spaces inside, each on its own: a reply streams word by word.
    words = {word for word in secret.split() if len(word) >= MIN_SECRET_LENGTH}
    return frozenset(
        {
            secret,
            repr(secret)[1:-1],
            repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
            json.dumps(secret)[1:-1],
            *words,
        }
    )


# A random 32-character key holds at least 9 different characters, even in hex (16 or more
# of the 62 alphanumerics). Text does not always: "ORD-002" followed by 3,000 x's lost its id
# to the redaction, as "002xxx..." is a long run with digits in it.
MIN_DISTINCT = 8


def _looks_like_key(match: re.Match[str]) -> str:
    # Random keys hold digits or inner capitals; a long (German, capitalised) word has neither.
    run = match.group(0)
    inner = run[1:]
    mixed = any(c.isdigit() for c in run) or (
        any(c.isupper() for c in inner) and not inner.isupper()
    )
    return REDACTED if mixed and len(set(run)) >= MIN_DISTINCT else run


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
    return _shapes(text, known) if _may_hold_credential(text) else text


def _may_hold_credential(text: str) -> bool:
    # Most texts hold nothing credential-shaped: a few substring checks and one short regex
    # find that out 5-10 times faster than the seven patterns (or one regex of all the marks).
    lowered = text.lower()
    return any(mark in lowered for mark in _CREDENTIAL_MARKS) or bool(_KEY_RUN.search(text))


def _shapes(text: str, known: tuple[str, ...]) -> str:
    if known:
        text = _KEY_RUN.sub(lambda m: _fragment(m, known), text)
    text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    text = _AUTH_HEADER.sub(_keep_label, text)
    text = _BEARER.sub(_keep_label, text)
    text = _ASSIGNMENT.sub(_keep_label, text)
    text = _SK_KEY.sub(REDACTED, text)
    return _LONG_RUN.sub(_looks_like_key, text)


def _fragment(match: re.Match[str], known: tuple[str, ...]) -> str:
    run = match.group(0)
    return REDACTED if any(run in secret for secret in known) else run


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


# Credentials are ASCII, and whitespace ends every shape above: a word ends at a space or at a
# letter outside ASCII (Chinese has no spaces, and a reply in it must not wait for a line's
# end). A label sits at most this many words before its value (`"Authorization" : Bearer x`).
STREAM_CONTEXT_WORDS = 4
# Context kept however few words it holds (a line of Chinese is one long "word" gap).
STREAM_CONTEXT_CHARS = 128
# Whitespace or any character outside ASCII, written as what it is not (ASCII other than
# whitespace): the same characters, and compiled in 0.2 ms instead of 8 (the range up to
# U+10FFFF was expanded at import, before the app's first frame).
_BOUNDARY = r"[^\x00-\x08\x0e-\x1b!-\x7f]"
_LAST_BOUNDARY = re.compile(rf".*{_BOUNDARY}", re.DOTALL)
_NEXT_BOUNDARY = re.compile(_BOUNDARY)
_WORD = re.compile(r"[!-~]+")


class StreamRedactor:
    """Redacts a reply while it streams, word by word: what `feed` returns is safe to show at
    once. The word still arriving is held back until a space, a non-ASCII letter or `flush`
    ends it.

    Each step redacts only the new words and the few before them (a whole 4,000-token reply
    each time would cost a second of the event loop the screen paints from)."""

    def __init__(self) -> None:
        self._known = _known(())  # the registered secrets
        self._raw = ""  # what arrived, from the start of the context kept
        self._shown = 0  # how much of `_raw` went out: always just after a word's end

    def feed(self, piece: str) -> str:
        held = len(self._raw)
        self._raw += piece
        finished = _LAST_BOUNDARY.match(piece)  # the piece's text only: a long word is cheap
        if finished is None:
            return ""
        end = held + finished.end()
        last = self._raw[max(self._shown, end - 16) : end].split()[-1:]
        if last and last[0].lstrip("\"'").lower() in _SCHEMES:
            # `Authorization: Basic` reads "Basic" as the credential until the next word
            # shows it is the scheme: wait for that word.
            end = self._raw.rindex(last[0], 0, end)
        return self._release(end) if end > self._shown else ""

    def flush(self) -> str:
        """The rest, once the reply is complete."""
        return self._release(len(self._raw)) if len(self._raw) > self._shown else ""

    def _release(self, end: int) -> str:
        window = self._raw[:end]
        after = _redact(window, self._known)
        new = after[self._shown :] if after == window else self._changed(after)
        self._keep_context(end)
        return new

    def _changed(self, after: str) -> str:
        # Usually the words already shown read the same and only the new ones change; if the
        # new words change how shown ones read, what changed is shown again, redacted.
        before = _redact(self._raw[: self._shown], self._known)
        pairs = zip(before, after, strict=False)
        same = sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], pairs))
        return after[same:]

    def _keep_context(self, shown: int) -> None:
        starts = [word.start() for word in _WORD.finditer(self._raw, 0, shown)]
        cut = starts[-STREAM_CONTEXT_WORDS] if len(starts) > STREAM_CONTEXT_WORDS else 0
        if shown - cut > STREAM_CONTEXT_CHARS:
            # At a word's end: a credential is never cut in two.
            boundary = _NEXT_BOUNDARY.search(self._raw, shown - STREAM_CONTEXT_CHARS, shown)
            cut = boundary.end() if boundary is not None else cut
        if cut:
            self._raw = self._raw[cut:]
            shown -= cut
        self._shown = shown
