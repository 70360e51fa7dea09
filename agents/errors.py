"""Errors the fronts tell a person about."""

from __future__ import annotations


class InputError(Exception):
    """Bad input from a person: nothing happened, and the message says what to do instead."""


class ConfigurationError(InputError):
    """An environment variable ShopBot cannot use; the message names it (never its value)."""
