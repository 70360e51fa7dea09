"""Measuring a Textual app without a terminal: a driver that renders every frame into a sink,
a frame clock, and an event-loop lag probe.

`run_test()` normally uses Textual's headless driver, with which `App._display` skips
turning the frame into terminal escape sequences. `FrameSinkDriver` says it is *not*
headless, so every frame is rendered to text exactly as for a real terminal, then dropped:
the frame cost we measure includes the rendering a person's terminal would get.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from typing import Any

from rich.console import RenderableType
from textual.app import App
from textual.drivers.headless_driver import HeadlessDriver
from textual.screen import Screen


class FrameSinkDriver(HeadlessDriver):
    """Renders like a terminal driver, writes to nowhere (counts the bytes)."""

    written = 0

    @property
    def is_headless(self) -> bool:
        return False

    def write(self, data: str) -> None:
        FrameSinkDriver.written += len(data)

    def flush(self) -> None:
        """Nothing to flush."""


class FrameClock:
    """Times of the frames an app produced (`App._display` with something to show)."""

    def __init__(self) -> None:
        self.frames: list[float] = []
        self.listeners: list[Callable[[float], None]] = []

    def tick(self) -> None:
        now = time.perf_counter()
        self.frames.append(now)
        for listener in list(self.listeners):
            listener(now)

    def between(self, start: float, end: float) -> list[float]:
        return [t for t in self.frames if start <= t <= end]

    @staticmethod
    def max_gap(frames: list[float], start: float | None = None, end: float | None = None) -> float:
        """Largest interval (s) between consecutive frames, counting from `start` to `end`."""
        points = sorted(frames)
        if start is not None:
            points = [start, *points]
        if end is not None:
            points = [*points, end]
        return max((b - a for a, b in itertools.pairwise(points)), default=0.0)


def install_frame_clock(app: App[Any]) -> FrameClock:
    """Wrap `app._display` so every frame that reaches the driver is timed."""
    clock = FrameClock()
    display = app._display

    def timed_display(screen: Screen[Any], renderable: RenderableType | None) -> None:
        display(screen, renderable)
        if renderable is not None and not app._batch_count:
            clock.tick()

    app._display = timed_display  # type: ignore[method-assign]
    app.driver_class = FrameSinkDriver
    return clock


class LoopLag:
    """How late a 5 ms sleep wakes up: the longest time the event loop was busy elsewhere."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _probe(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(self.interval)
            self.lags.append(time.perf_counter() - before - self.interval)

    def start(self) -> None:
        self.lags.clear()
        self._task = asyncio.get_running_loop().create_task(self._probe())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    @property
    def worst(self) -> float:
        return max(self.lags, default=0.0)


async def wait_until(condition: Callable[[], bool], limit_s: float, what: str) -> None:
    deadline = time.perf_counter() + limit_s
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"timed out after {limit_s:.0f} s waiting for {what}")
        await asyncio.sleep(0.002)
