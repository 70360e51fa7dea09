"""The toasts of a screen that another screen covers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.screen import Screen

# The id Textual gives the ToastRack it adds to every screen.
TOAST_RACK = "#textual-toastrack"


def hide_covered_toasts(screen: Screen[Any]) -> None:
    """Hide `screen`'s toasts while another screen is on top of it: a modal's translucent
    backdrop showed them through, beside the same notifications in the modal's own toasts.
    Textual shows them again (those not expired) when `screen` is back on top."""
    for rack in screen.query_children(TOAST_RACK):
        rack.display = False
