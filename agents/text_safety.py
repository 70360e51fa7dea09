"""Customer and model text is content, never terminal control: make it visible and bounded.

Escape sequences and other control characters are shown as their Unicode "control pictures"
(ESC -> ␛), so `\x1b[31m` pasted by a customer reads as "␛[31m" and cannot recolour a terminal.
"""

from __future__ import annotations

import re

MAX_MESSAGE_CHARS = 16_000

_C0 = {code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\n\t"}
_VISIBLE = str.maketrans({**_C0, 0x7F: "\u2421"})
_C1 = re.compile(r"[\u0080-\u009f]")


class MessageRejected(ValueError):
    """The message cannot be sent as it is; the text says why and what to do."""


def visible(text: str) -> str:
    """`text` with every control character (except newline and tab) replaced by a visible sign."""
    return _C1.sub(
        lambda m: f"\\x{ord(m.group(0)):02x}", text.replace("\r\n", "\n").translate(_VISIBLE)
    )


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
    """A customer's name as given to `--customer` or typed in the app: whitespace collapsed,
    None when blank; `MessageRejected` when it holds control characters or is too long."""
    name = " ".join((value or "").split())
    if not name:
        return None
    if visible(name) != name:
        raise MessageRejected("The customer name contains control characters; type it plainly.")
    if len(name) > MAX_NAME_CHARS:
        raise MessageRejected(f"The customer name is too long (the limit is {MAX_NAME_CHARS}).")
    return name
