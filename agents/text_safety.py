r"""Customer and model text is content, never terminal control: make it visible and bounded.

Escape sequences and other control characters are shown as their Unicode "control pictures"
(ESC -> ␛), so `\x1b[31m` pasted by a customer reads as "␛[31m" and cannot recolour a terminal.
Bidirectional embeddings, overrides and isolates (the "Trojan Source" characters, which make a
terminal show text in another order than it is stored) are shown as `\u202e`, like C1 controls
as `\x9b`. Lone surrogates (bytes the command line could not decode, kept by Python's
surrogateescape) cannot be written as UTF-8 anywhere: they become U+FFFD.
"""

from __future__ import annotations

import re
import unicodedata

MAX_MESSAGE_CHARS = 16_000

_C0 = {code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\n\t"}
_VISIBLE = str.maketrans({**_C0, 0x7F: "\u2421"})
_UNSAFE = re.compile("[\u0080-\u009f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


class MessageRejected(ValueError):
    """The message cannot be sent as it is; the text says why and what to do."""


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if 0xD800 <= code <= 0xDFFF:
        return REPLACEMENT
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control character (except newline and tab) and bidi control replaced
    by a visible sign, and lone surrogates by U+FFFD."""
    return _UNSAFE.sub(_shown, text.replace("\r\n", "\n").translate(_VISIBLE))


def without_surrogates(text: str) -> str:
    """`text` with lone surrogates (unencodable in UTF-8, so SQLite refuses them) as U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text


def clean_message(text: str) -> str:
    """A customer message ready for the conversation, or `MessageRejected`."""
    cleaned = visible(text).strip()
    if not cleaned:
        raise MessageRejected("The message is empty: type what you need help with.")
    if len(cleaned) > MAX_MESSAGE_CHARS:
        raise MessageRejected(
            f"The message is too long ({len(cleaned):,} characters; the limit is "
            f"{MAX_MESSAGE_CHARS:,}). Shorten it or send it in parts."
        )
    return cleaned


MAX_NAME_CHARS = 80


def person_name(value: str | None) -> str | None:
    r"""A customer's name as given to `--customer` or typed in the app: whitespace collapsed,
    None when blank; `MessageRejected` when it holds characters a plain name never does, or is
    too long.

    Refused rather than repaired: the name decides whose orders the ownership gate shows, so a
    guess (U+FFFD for an undecodable byte) or an invisible difference ("Al\u200bex") must not
    pass for a customer.
    """
    name = " ".join((value or "").split())
    if not name:
        return None
    if _SURROGATE.search(name):
        raise MessageRejected(
            "The customer name is not valid text in the terminal's encoding (UTF-8 expected); "
            "type it again."
        )
    if any(unicodedata.category(char) == "Cf" for char in name):
        raise MessageRejected(
            "The customer name contains invisible formatting characters (right-to-left or "
            "zero-width marks); type it plainly."
        )
    if visible(name) != name:
        raise MessageRejected("The customer name contains control characters; type it plainly.")
    if len(name) > MAX_NAME_CHARS:
        raise MessageRejected(f"The customer name is too long (the limit is {MAX_NAME_CHARS}).")
    return name
