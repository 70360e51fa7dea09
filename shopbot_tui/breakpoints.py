"""A screen's width and height classes (`HORIZONTAL_BREAKPOINTS`, `VERTICAL_BREAKPOINTS`),
given before its widgets are styled."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen


def apply_breakpoints(screen: Screen[Any]) -> None:
    """Give `screen` the breakpoint classes of the terminal's size now. Textual sets them on
    the screen's first Resize, which comes after the first frame: the whole screen was then
    styled, laid out and drawn again (and a narrow one was first drawn wide). Called from
    `compose`, each widget is styled once, with them, and that Resize finds nothing to change.
    (The same choice as Textual's `Screen._get_breakpoint_classes`, which is private.)"""
    app = screen.app
    horizontal = screen.HORIZONTAL_BREAKPOINTS
    vertical = screen.VERTICAL_BREAKPOINTS
    classes: dict[str, bool] = {}
    for size, given in (
        (app.size.width, app.HORIZONTAL_BREAKPOINTS if horizontal is None else horizontal),
        (app.size.height, app.VERTICAL_BREAKPOINTS if vertical is None else vertical),
    ):
        breakpoints = given or []
        classes.update((name, False) for _, name in breakpoints)
        for at, name in sorted(breakpoints, reverse=True):
            if size >= at:
                classes[name] = True
                break
    screen.update_classes(classes, update=False)
