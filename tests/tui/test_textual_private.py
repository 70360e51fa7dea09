"""The Textual internals ShopBot mends or relies on (shopbot_tui/textual_private.py)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from textual.widgets import Static

from tests.support.tui import SIZE, make_app, settle


async def test_the_painted_lines_of_removed_widgets_are_let_go(tmp_path: Path) -> None:
    """Textual 8.2 kept the styles cache (every painted line) of up to 1,024 removed widgets
    alive in a cache's keys (Textualize/textual#6665); the app mends it as it starts."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        notes = [Static(f"note {index}", classes="note") for index in range(20)]
        await app.screen.mount_all(notes)
        await pilot.pause()
        assert all(note._styles_cache._cache for note in notes)  # painted
        caches = [weakref.ref(note._styles_cache) for note in notes]
        await app.screen.query(".note").remove()
        del notes
        await app.screen.mount(Static("the next note"))
        await pilot.pause()  # laid out and painted again without them
        gc.collect()
        assert [cache for cache in caches if cache() is not None] == []
