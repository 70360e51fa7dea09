"""Errors the fronts tell a person about."""

from __future__ import annotations


class InputError(Exception):
    """Bad input from a person: nothing happened, and the message says what to do instead."""


class ConfigurationError(InputError):
    """An environment variable ShopBot cannot use; the message names it (never its value)."""


class DecisionPending(InputError):
    """A new message for a thread that waits for a decision; `request` is that decision
    (another front may have asked it: the person here may not have seen it yet)."""

    def __init__(self, message: str, request: object) -> None:
        super().__init__(message)
        self.request = request
