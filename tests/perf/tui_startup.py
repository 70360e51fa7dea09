"""One `shopbot` start-up, timed from process start: `python -m tests.perf.tui_startup T0 HOME OUT`
(or `... T0 HOME OUT bare`: the floor, a Textual app with one line of text and nothing else).

T0 is the parent's `time.monotonic()` just before it spawned this process (CLOCK_MONOTONIC
is system-wide on Linux), so the figures include interpreter start and every import. The app
runs with the real engine (offline demo model) on a terminal-like driver that renders every
frame into a sink; OUT receives the timings as JSON.

The app starts as `shopbot` does (launch.py): Python's collector paused until the engine is up.

- first paint: the first frame the app renders (the chat screen with "Loading the engine…");
- ready: the first frame after the engine is up and the conversation is open (the message
  box accepts a message).
"""

from __future__ import annotations

import sys
import time

_T_MAIN = time.monotonic()

if sys.argv[4:] != ["bare"]:
    # What `shopbot` does first (launch.py); the bare floor is any Textual app, as it comes.
    from shopbot_tui.collector import pause_for_start_up

    pause_for_start_up()

import asyncio  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402


async def run(t0: float, home: Path) -> dict[str, Any]:
    import shopbot_tui.cli.main  # noqa: F401 - `shopbot` reads its command line first (launch.py)
    from agents.settings import Settings
    from shopbot_tui.app import ShopBotApp
    from tests.perf.textual_support import install_frame_clock, wait_until

    imported = time.monotonic()
    app = ShopBotApp(Settings(home=home, force_offline=True), customer="Alex")
    clock = install_frame_clock(app)
    marks: dict[str, float] = {}

    def on_frame(_: float) -> None:
        now = time.monotonic()
        marks.setdefault("first_paint", now)
        if "ready" not in marks and getattr(app.chat, "thread_ready", False):
            marks["ready"] = now

    clock.listeners.append(on_frame)
    async with app.run_test(headless=False, size=(120, 40)) as pilot:
        await wait_until(lambda: "ready" in marks, 60, "the engine and the conversation")
        await pilot.pause()
    return {
        "interpreter_to_main_s": _T_MAIN - t0,
        "imports_s": imported - t0,
        "first_paint_s": marks["first_paint"] - t0,
        "ready_s": marks["ready"] - t0,
        "frames": len(clock.frames),
    }


async def run_bare(t0: float) -> dict[str, Any]:
    """The same measurement for the smallest Textual app: what any Textual app pays here."""
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    from tests.perf.textual_support import install_frame_clock, wait_until

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("Loading…")

    imported = time.monotonic()
    app = Bare()
    clock = install_frame_clock(app)
    marks: dict[str, float] = {}
    clock.listeners.append(lambda _: marks.setdefault("first_paint", time.monotonic()))
    async with app.run_test(headless=False, size=(120, 40)):
        await wait_until(lambda: "first_paint" in marks, 60, "the first frame")
    return {
        "interpreter_to_main_s": _T_MAIN - t0,
        "imports_s": imported - t0,
        "first_paint_s": marks["first_paint"] - t0,
    }


def main() -> None:
    t0, home, out = float(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    bare = sys.argv[4:] == ["bare"]
    result = asyncio.run(run_bare(t0) if bare else run(t0, home))
    out.write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main()
