"""Toasts: those of a screen another screen covers, and those taken back early."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

# The id Textual gives the ToastRack it adds to every screen.
TOAST_RACK = "#textual-toastrack"


def hide_covered_toasts(screen: Screen[Any]) -> None:
    """Hide `screen`'s toasts while another screen is on top of it: a modal's translucent
    backdrop showed them through, beside the same notifications in the modal's own toasts.
    Textual shows them again (those not expired) when `screen` is back on top."""
    for rack in screen.query_children(TOAST_RACK):
        rack.display = False


def withdraw_toasts(app: App[Any], title: str) -> None:
    """Take back the notifications titled `title` before their time is up (what they say
    stopped being true). Textual has no public call for this (textual_private.py)."""
    from shopbot_tui.textual_private import withdraw_notifications

    withdraw_notifications(app, title)
