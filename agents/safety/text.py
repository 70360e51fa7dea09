r"""Customer and model text is content, never terminal control: make it visible and bounded.

Escape sequences and other control characters are shown as their Unicode "control pictures"
(ESC -> ␛), so `\x1b[31m` pasted by a customer reads as "␛[31m" and cannot recolour a terminal.
Bidirectional embeddings, overrides, isolates and marks (the "Trojan Source" characters, which
make a terminal show text in another order than it is stored: "ORD-001" can read as another id)
are shown as `\u202e`, like C1 controls as `\x9b`. Lone surrogates (bytes the command line
could not decode, kept by Python's surrogateescape) cannot be written as UTF-8 anywhere: they
become U+FFFD.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

MAX_MESSAGE_CHARS = 16_000

_C0 = {code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\n\t"}
_VISIBLE = str.maketrans({**_C0, 0x7F: "\u2421"})
# Embeddings and overrides, isolates, and the marks LRM, RLM and ALM: all reorder what is shown.
_BIDI_MARKS = "\u200e\u200f\u061c"
_BIDI = f"\u202a-\u202e\u2066-\u2069{_BIDI_MARKS}"
_UNSAFE = re.compile(f"[\u0080-\u009f{_BIDI}\ud800-\udfff]")
# In a customer's message the marks stay: right-to-left writing uses them, and the model
# should read what was typed. Shown on a screen, they are escaped like the rest.
_UNSAFE_IN_MESSAGES = re.compile("[\u0080-\u009f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
# Python keeps a byte it could not decode (argv, environment, file names) as U+DC80-U+DCFF.
_UNDECODABLE = re.compile("[\udc80-\udcff]")
# ... and repr() writes one as `\udcff`: after an even number of backslashes, else the
# backslash before it was escaped and "udcff" is text.
_QUOTED_UNDECODABLE = re.compile(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])")
# (U+2028 and U+2029 too: `str.splitlines` and some terminals break lines there.)
_LINE_BREAKS = str.maketrans(
    {"\n": "\u240a", "\t": "\u2409", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)
# JSON may hold these raw (only C0 must be escaped): escaped, the data is the same.
_JSON_UNSAFE = re.compile(f"[\u007f-\u009f{_BIDI}\u2028\u2029]")


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


def visible_line(text: str) -> str:
    r"""`text` (a message for a person, which may quote what they typed) as one line that is
    safe to print: `visible`, line breaks and tabs as signs (␊ ␉), and an undecodable byte as
    `\xff`, the byte it was, whether raw or quoted by repr() (`'t\udcff'`)."""
    text = _UNDECODABLE.sub(lambda m: f"\\x{ord(m.group(0)) - 0xDC00:02x}", text)
    text = _QUOTED_UNDECODABLE.sub(r"\1\\x\2", text)
    return visible(text).translate(_LINE_BREAKS)


def safe_json(value: Any) -> str:
    """`value` as one line of JSON that a terminal cannot obey: the JSON escapes for C1 and
    bidi controls and line separators; a lone surrogate (no UTF-8 for it) as U+FFFD."""
    text = without_surrogates(json.dumps(value, ensure_ascii=False))
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


# What an error message quotes of a person's input: enough to recognise it.
QUOTE_CHARS = 60
# ... and at most this much of an error line at all (argparse quotes whole arguments).
MAX_ERROR_CHARS = 500


def quoted(value: object) -> str:
    """`value` as repr() quotes it, cut to QUOTE_CHARS with its length said: a 10 KB thread
    id or decision is echoed as a line a person can read, not as the 10 KB."""
    if not isinstance(value, str) or len(value) <= QUOTE_CHARS:
        return repr(value)
    return f"{value[:QUOTE_CHARS]!r}… ({len(value):,} characters)"


def undecodable_bytes(text: str) -> int:
    """How many lone surrogates (undecodable bytes, as Python keeps them) `text` holds."""
    return len(_SURROGATE.findall(text))


def without_surrogates(text: str) -> str:
    """`text` with lone surrogates (unencodable in UTF-8, so SQLite refuses them) as U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text


def clean_message(text: str) -> str:
    """A customer message ready for the conversation, or `MessageRejected`."""
    shown = text.replace("\r\n", "\n").translate(_VISIBLE)
    cleaned = _UNSAFE_IN_MESSAGES.sub(_shown, shown).strip()
    if not cleaned:
        raise MessageRejected("The message is empty: type what you need help with.")
    if not cleaned.replace(REPLACEMENT, "").strip() and _SURROGATE.search(text):
        # Only undecodable bytes: sending "\ufffd\ufffd" would lose all of it without a word.
        raise MessageRejected(
            "The message is not valid text in the terminal's encoding (UTF-8 expected): "
            "none of it could be read; type it again."
        )
    if not any(unicodedata.category(char)[0] in "LNPS" for char in text):
        # Only control, formatting or zero-width characters: nothing a person could read.
        raise MessageRejected(
            "The message has nothing readable in it (only control or invisible characters): "
            "type what you need help with."
        )
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
