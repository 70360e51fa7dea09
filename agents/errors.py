"""Errors the fronts tell a person about."""

from __future__ import annotations


class InputError(Exception):
    """Bad input from a person: nothing happened, and the message says what to do instead."""


class ConfigurationError(InputError):
    """An environment variable ShopBot cannot use; the message names it (never its value)."""


class BusyElsewhere(InputError):
    """The thread is answering a message in another process (another window, a `shopbot`
    command): nothing was done here, and the other turn's outcome shows once it is stored."""


class ServerUnreachable(InputError):
    """The ShopBot server a front works with cannot be reached (or does not answer): the
    message names it, and nothing was sent."""


class NothingPending(InputError):
    """A decision for a thread that waits for none: answered already (another window,
    `shopbot resume`) or never asked. Nothing was done."""


class DecisionPending(InputError):
    """A new message for a thread that waits for a decision; `request` is that decision
    (another front may have asked it: the person here may not have seen it yet)."""

    def __init__(self, message: str, request: object) -> None:
        super().__init__(message)
        self.request = request


class NotAuthorised(InputError):
    """A decision by someone whose refund limit does not cover the refund; `request` is the
    decision, still waiting for a reviewer whose limit does. Nothing was done."""

    def __init__(self, message: str, request: object) -> None:
        super().__init__(message)
        self.request = request


class UnreadableReply(Exception):
    """The model provider answered, but not with a reply its client can read: a proxy's or
    captive portal's HTML page, JSON of another shape, an event stream with nothing in it.
    A provider failure (retried, then said as one), not a fault inside ShopBot."""


class IncompleteReply(Exception):
    """The model provider's reply stopped before its end: a stream that ends with no
    `finish_reason` (no final chunk), a body cut short, a reply it says failed midway. What
    came is not the reply: a provider failure, retried like a 5xx, then said as one."""
